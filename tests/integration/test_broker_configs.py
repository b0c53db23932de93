"""Broker settings changed at run time (dynamic broker configs): Apache Kafka's
kafka-configs --entity-type brokers against Sluice, at the cluster-wide default level
(--entity-default, resource "") and this broker's own (--entity-name 0), with the effect
of each change checked on the live broker (retention of a topic without its own
retention.ms, the first join's wait), their DescribeConfigs sources and synonyms, the
refusals, and a restart keeping them.

One broker for the module, retention checked every 500 ms. The tests run in file order:
the last one restarts the broker.
"""

import time

import pytest
from confluent_kafka import KafkaException

import group_helpers as G
import jvm_helpers as J
import kproto as K
import sluice_helpers as H

HOUR_MS = 3600 * 1000


@pytest.fixture(scope="module")
def b(module_broker_factory):
    return module_broker_factory(extra_args=["--log-retention-check-interval-ms", "500"])


def configs(b, *args, check=True):
    proc = J.run_tool("kafka-configs", "--bootstrap-server", b.bootstrap, "--entity-type", "brokers", *args)
    if check and proc.returncode != 0:
        raise AssertionError("kafka-configs %s exited %d:\n%s" % (" ".join(map(str, args)), proc.returncode,
                                                                  proc.stderr[-3000:]))
    return proc


def described(b, *entity):
    """kafka-configs --describe: the lines after the header, stripped."""
    lines = configs(b, *entity, "--describe").stdout.splitlines()
    return [l.strip() for l in lines if l.startswith("  ")]


def describe_broker(b, name, keys):
    with K.Conn(b.bootstrap) as conn:
        (res,) = K.describe_configs(conn, 1, [(K.RESOURCE_BROKER, name, keys)], include_synonyms=True)
    assert res["error"] == 0, res
    return {c["name"]: c for c in res["configs"]}


def test_default_and_broker_levels_with_their_sources(b):
    assert described(b, "--entity-default") == []
    assert configs(b, "--entity-default", "--alter", "--add-config", "log.retention.ms=86400000").stdout.strip() == \
        "Completed updating default config for brokers in the cluster."
    assert described(b, "--entity-default") == [
        "log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000}"]
    configs(b, "--entity-name", 0, "--alter", "--add-config", "log.retention.ms=172800000,offsets.retention.minutes=60")
    assert described(b, "--entity-name", 0) == [
        "log.retention.ms=172800000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=172800000, "
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000}",
        "offsets.retention.minutes=60 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:offsets.retention.minutes=60, "
        "DEFAULT_CONFIG:offsets.retention.minutes=10080}"]
    # Static settings are described read-only, with their source.
    got = describe_broker(b, "0", ["log.retention.check.interval.ms", "log.retention.ms"])
    assert (got["log.retention.check.interval.ms"]["value"], got["log.retention.check.interval.ms"]["source"],
            got["log.retention.check.interval.ms"]["read_only"]) == ("500", 4, True)
    assert (got["log.retention.ms"]["value"], got["log.retention.ms"]["source"], got["log.retention.ms"]["read_only"]) \
        == ("172800000", 2, False)

    # A topic without its own retention.ms follows the level in force, and says where from
    # (Kafka lists no built-in level for retention.ms: log.retention.ms has no default).
    topic = H.unique_topic("follow")
    H.create_topic(b.bootstrap, topic, 1)
    with K.Conn(b.bootstrap) as conn:
        (res,) = K.describe_configs(conn, 1, [(K.RESOURCE_TOPIC, topic, ["retention.ms"])], include_synonyms=True)
    (c,) = res["configs"]
    assert (c["value"], c["source"], c["synonyms"]) == ("172800000", 2, [
        ("log.retention.ms", "172800000", 2), ("log.retention.ms", "86400000", 3)]), c

    # Deleting the broker's own level uncovers the default level.
    configs(b, "--entity-name", 0, "--alter", "--delete-config", "log.retention.ms,offsets.retention.minutes")
    assert described(b, "--entity-name", 0) == []
    assert describe_broker(b, "0", ["log.retention.ms"])["log.retention.ms"]["source"] == 3


def test_read_only_and_invalid_are_refused_as_kafka_does(b):
    """Apache Kafka 4.3.1's answers (checked against it): INVALID_REQUEST for a setting read
    at start ("Cannot update these configs dynamically"), a bad value and another broker's
    id; an unknown name is accepted (Kafka keeps it for plugins)."""
    ro = configs(b, "--entity-default", "--alter", "--add-config", "log.dirs=/elsewhere", check=False)
    assert ro.returncode != 0
    assert "InvalidRequestException: Cannot update these configs dynamically: log.dirs" in ro.stderr, ro.stderr[-2000:]
    assert "restart" in ro.stderr
    with K.Conn(b.bootstrap) as conn:
        res = K.incremental_alter_configs(conn, 1, [
            (K.RESOURCE_BROKER, "", [("log.retention.ms", K.OP_SET, "soon")]),
            (K.RESOURCE_BROKER, "0", [("group.min.session.timeout.ms", K.OP_SET, "2000000")]),
            (K.RESOURCE_BROKER, "7", [("log.retention.ms", K.OP_SET, "1000")]),
            (K.RESOURCE_BROKER, "", [("log.cleanup.policy", K.OP_APPEND, "compact")]),
            (K.RESOURCE_BROKER, "", [("no.such.setting", K.OP_SET, "1")])], validate_only=True)
    assert [r["error"] for r in res] == [K.INVALID_REQUEST, K.INVALID_REQUEST, K.INVALID_REQUEST, K.NONE, K.NONE], res
    assert "group.max.session.timeout.ms" in res[1]["error_message"]
    # validate_only changed nothing.
    assert not {"log.cleanup.policy", "no.such.setting"} & set(describe_broker(b, "", None))
    # An unknown name is kept and described, at its level only.
    configs(b, "--entity-default", "--alter", "--add-config", "no.such.setting=1")
    assert describe_broker(b, "", ["no.such.setting"])["no.such.setting"]["synonyms"] == [("no.such.setting", "1", 3)]
    configs(b, "--entity-default", "--alter", "--delete-config", "no.such.setting")
    assert "no.such.setting" not in describe_broker(b, "0", None)


def produce_aged(b, topic, n):
    with K.Conn(b.bootstrap) as conn:
        for i in range(n):
            p = K.produce_v3(conn, topic, 0, K.encode_batch([(H.now_ms() - HOUR_MS, b"k%d" % i, b"v%d" % i, [])]))
            assert p["error"] == K.NONE, p


def log_start(b, topic):
    with K.Conn(b.bootstrap) as conn:
        return K.log_start_offset(conn, topic, 0)


def test_default_retention_applies_to_topics_without_their_own(b):
    follows, own = H.unique_topic("aged"), H.unique_topic("own")
    H.create_topic(b.bootstrap, follows, 1)
    H.create_topic(b.bootstrap, own, 1, config={"retention.ms": str(2 * HOUR_MS)})
    produce_aged(b, follows, 3)
    produce_aged(b, own, 3)
    assert log_start(b, follows) == 0
    configs(b, "--entity-default", "--alter", "--add-config", "log.retention.ms=60000")
    G.wait_for(lambda: log_start(b, follows) == 3, 10, lambda: "retention to remove the hour-old records of %s"
               % follows, interval=0.1)
    # The topic's own setting wins over the broker level: after the follower's pass, still kept.
    assert log_start(b, own) == 0


def first_join_ms(b):
    group = H.unique_topic("g")
    t0 = time.monotonic()
    with K.Conn(b.bootstrap) as conn:
        r = K.join_group(conn, 3, group, "", "consumer", [("range", b"")], timeout=20)
    assert r["error"] == K.NONE, r
    return (time.monotonic() - t0) * 1000


def test_initial_rebalance_delay_changes_the_first_join(b):
    configs(b, "--entity-name", 0, "--alter", "--add-config", "group.initial.rebalance.delay.ms=2500")
    assert first_join_ms(b) >= 2400
    configs(b, "--entity-name", 0, "--alter", "--add-config", "group.initial.rebalance.delay.ms=0")
    assert first_join_ms(b) < 1500


def test_confluent_alter_configs_replaces_the_level(b):
    """librdkafka's AlterConfigs (confluent-kafka 1.7): the level's whole set is replaced."""
    from confluent_kafka.admin import ConfigResource, ConfigSource
    adm = H.admin_client(b.bootstrap)
    res = ConfigResource(ConfigResource.Type.BROKER, "0", set_config={"log.retention.bytes": "1048576"})
    for f in adm.alter_configs([res], validate_only=True, request_timeout=15).values():
        f.result(timeout=30)
    assert "log.retention.bytes=1048576" not in " ".join(described(b, "--entity-name", 0))
    for f in adm.alter_configs([res], request_timeout=15).values():
        f.result(timeout=30)
    (entries,) = [f.result(timeout=30) for f in adm.describe_configs(
        [ConfigResource(ConfigResource.Type.BROKER, "0")], request_timeout=15).values()]
    e = entries["log.retention.bytes"]
    assert (e.value, e.source, e.is_read_only) == ("1048576", ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
    # The delay set by the previous test was left out, so it is gone from this level.
    assert entries["group.initial.rebalance.delay.ms"].source != ConfigSource.DYNAMIC_BROKER_CONFIG.value
    # (librdkafka refuses the resource name "" itself.)
    bad = ConfigResource(ConfigResource.Type.BROKER, "0", set_config={"num.partitions": "4"})
    with pytest.raises(KafkaException) as err:
        for f in adm.alter_configs([bad], request_timeout=15).values():
            f.result(timeout=30)
    assert "Cannot update these configs dynamically: num.partitions" in str(err.value)


def test_a_restart_keeps_both_levels(b):
    before_default = described(b, "--entity-default")
    before_broker = described(b, "--entity-name", 0)
    assert before_default and before_broker
    assert "log.retention.ms=60000" in before_default[0]
    b.restart()
    assert described(b, "--entity-default") == before_default
    assert described(b, "--entity-name", 0) == before_broker
    # Restored, and applied: the cluster-wide log.retention.ms=60000 removes hour-old records.
    topic = H.unique_topic("restored")
    H.create_topic(b.bootstrap, topic, 1)
    produce_aged(b, topic, 2)
    G.wait_for(lambda: log_start(b, topic) == 2, 10, "the restored default retention to apply to %s" % topic,
               interval=0.1)
