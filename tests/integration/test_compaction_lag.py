"""A bounded time to compaction: max.compaction.lag.ms (KIP-354), 30 s by default.

A compacted topic created with no configs is compacted to the latest record per key
without any segment setting: its active segment rolls once its first record is older
than max.compaction.lag.ms, and the cleaner then takes it whatever the dirty ratio. The
cleaner merges what it keeps into few segments, so a steady trickle does not leave a
segment per roll. Clients: librdkafka (confluent-kafka 1.7) for data and configs.
"""

import time

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import ConfigResource, ConfigSource, NewTopic

import sluice_helpers as H


def segment_files(b, topic):
    """The data files of TOPIC's partition 0 (data-dir.md: logs/<topic>-<partition>/)."""
    return sorted((b.data_dir / "logs" / ("%s-0" % topic)).glob("*.log"))


def survivors(b, topic, end):
    return [(r["offset"], r["key"], r["value"]) for r in H.consume_all(b.bootstrap, topic, {0: end})]


def describe(b, topic):
    admin = H.admin_client(b.bootstrap)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([res])[res].result(timeout=30)


def test_default_is_30s_and_described_with_its_synonym(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1, {"cleanup.policy": "compact"})
    entry = describe(broker, topic_name)["max.compaction.lag.ms"]
    assert (entry.value, entry.source, entry.is_default) == (
        "30000", ConfigSource.DEFAULT_CONFIG.value, True)


def test_min_above_max_is_refused_naming_both(broker, topic_name):
    admin = H.admin_client(broker.bootstrap)
    fut = admin.create_topics([NewTopic(topic_name, 1, 1, config={
        "cleanup.policy": "compact", "min.compaction.lag.ms": "5000", "max.compaction.lag.ms": "1000"})])
    try:
        fut[topic_name].result(timeout=30)
        raise AssertionError("min.compaction.lag.ms above max.compaction.lag.ms was accepted")
    except KafkaException as e:
        err = e.args[0]
        assert err.name() == "INVALID_CONFIG", err
        assert "min.compaction.lag.ms" in err.str() and "max.compaction.lag.ms" in err.str(), err
    assert topic_name not in H.list_topic_names(broker.bootstrap)
    H.create_topic(broker.bootstrap, topic_name, 1, {"max.compaction.lag.ms": "1000"})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic_name, set_config={
        "max.compaction.lag.ms": "1000", "min.compaction.lag.ms": "2000"})
    try:
        admin.alter_configs([res])[res].result(timeout=30)
        raise AssertionError("alter to min > max was accepted")
    except KafkaException as e:
        assert e.args[0].name() == "INVALID_CONFIG", e
    assert describe(broker, topic_name)["max.compaction.lag.ms"].value == "1000"


def test_topic_with_defaults_compacts_within_the_bound_and_merges_segments(broker_factory, topic_name):
    # The broker-wide default (Kafka's log.cleaner.max.compaction.lag.ms) set to 2 s, so
    # the test waits seconds: the topic itself is created with cleanup.policy only.
    b = broker_factory(extra_args=["--max-compaction-lag-ms", "2000", "--log-cleaner-backoff-ms", "500"])
    H.create_topic(b.bootstrap, topic_name, 1, {"cleanup.policy": "compact"})
    assert describe(b, topic_name)["max.compaction.lag.ms"].value == "2000"
    p = Producer(H.producer_conf(b.bootstrap, **{"linger.ms": 0}))
    # A trickle for 12 s: five keys, one update every 0.2 s, so the active segment rolls
    # about every 2 s (six rolls or more).
    n = 60
    for i in range(n):
        H.produce_one(p, topic_name, b"k%d" % (i % 5), b"v%d" % i, partition=0)
        time.sleep(0.2)
    want = [(i, b"k%d" % (i % 5), b"v%d" % i) for i in range(n - 5, n)]
    deadline = time.monotonic() + 30
    got = survivors(b, topic_name, n)
    while got != want and time.monotonic() < deadline:
        time.sleep(0.5)
        got = survivors(b, topic_name, n)
    assert got == want, (got, b.stderr_tail())
    # The rolls made a segment every ~2 s; the cleaner merged what it kept.
    cleaner_lines = [l for l in b.stderr_tail(400).splitlines() if "cleaner:" in l]
    assert any("max.compaction.lag.ms" in l for l in cleaner_lines), cleaner_lines[-5:]
    files = segment_files(b, topic_name)
    assert 1 <= len(files) <= 3, files
    assert any("merging" in l and "merging 0 " not in l for l in cleaner_lines), cleaner_lines[-8:]
