"""Topic configuration changes and partition growth.

DescribeConfigs v0-4, AlterConfigs v0-2, IncrementalAlterConfigs v0-1 and
CreatePartitions v0-3.  Clients: librdkafka's AdminClient (confluent-kafka 1.7:
describe_configs, alter_configs, create_partitions), kafka-python 2.0.2's
KafkaAdminClient (DescribeConfigs v2, AlterConfigs v1, CreatePartitions v1), and
raw requests (kproto) for what neither sends: every version including the flexible
ones, IncrementalAlterConfigs, the exact synonym lists, a key twice in one resource.

Config sources (DescribeConfigs v1+): 1 set on the topic, 4 broker-wide default
(`--topic-default KEY=VALUE`), 5 built-in default.  Every change is checked by
describing the topic again; every "nothing changed" is checked the same way.
"""

import time

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import ConfigResource, ConfigSource, NewPartitions
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import ConfigResourceType as KConfigResourceType
from kafka.admin import NewPartitions as KNewPartitions

import group_helpers as G
import kproto as K
import sluice_helpers as H

TOPIC, BROKER = K.RESOURCE_TOPIC, K.RESOURCE_BROKER
SRC_TOPIC, SRC_BROKER, SRC_DEFAULT = K.SOURCE_TOPIC_CONFIG, K.SOURCE_STATIC_BROKER_CONFIG, K.SOURCE_DEFAULT_CONFIG
SET, DELETE, APPEND, SUBTRACT = K.OP_SET, K.OP_DELETE, K.OP_APPEND, K.OP_SUBTRACT

# Built-in defaults of the keys clients care most about (Kafka 4.3's, as
# test_differential.py checks against Kafka itself).  Every other known key must be
# described too, at source 5.
DEFAULTS = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "max.message.bytes": "1048588",
    "message.timestamp.type": "CreateTime",
    "min.insync.replicas": "1",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.ms": "604800000",
}

# The broker-level settings DescribeConfigs must list for the broker resource.
BROKER_KEYS = {"num.partitions", "group.initial.rebalance.delay.ms", "offsets.retention.minutes",
               "default.replication.factor"}

# Kafka 3.x topic configs deprecated (or without meaning on one broker) but accepted
# there: accepted here too, stored and described, without effect.
ACCEPTED_NO_EFFECT = {
    "message.format.version": "2.8",
    "message.downconversion.enable": "false",
    "leader.replication.throttled.replicas": "0:0,1:0",
    "follower.replication.throttled.replicas": "*",
}

# Values the broker must refuse with INVALID_CONFIG: (key, value).
INVALID = [
    ("no.such.config", "1"),
    ("retention.ms", "abc"),
    ("segment.bytes", "100"),  # below the 1 KiB floor
    ("message.timestamp.type", "Foo"),
    ("cleanup.policy", "shred"),  # neither delete nor compact
    ("message.format.version", "latest"),
    ("leader.replication.throttled.replicas", "0-1"),
]


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def describe(bootstrap, topic, keys=None, version=4, synonyms=False, docs=False):
    """{name: config dict} of one topic (raw DescribeConfigs), asserting the resource has no error."""
    with K.Conn(bootstrap) as conn:
        res = K.describe_configs(conn, version, [(TOPIC, topic, keys)], include_synonyms=synonyms,
                                 include_documentation=docs)
    assert len(res) == 1, res
    (r,) = res
    assert (r["error"], r["resource_type"], r["resource_name"]) == (0, TOPIC, topic), r
    out = {}
    for c in r["configs"]:
        assert c["name"] not in out, "config %s described twice (v%d)" % (c["name"], version)
        out[c["name"]] = c
    return out


def snapshot(bootstrap, topic):
    """{name: (value, source)} of every config of the topic."""
    return {n: (c["value"], c["source"]) for n, c in describe(bootstrap, topic).items()}


def expect_configs(bootstrap, topic, topic_set, broker_defaults=None, version=4):
    """The topic's whole config set is exactly: topic_set at source 1, broker_defaults at 4 for
    keys not set on the topic, and every other key at its built-in default (source 5)."""
    broker_defaults = broker_defaults or {}
    got = describe(bootstrap, topic, version=version)
    missing = (set(DEFAULTS) | set(topic_set)) - set(got)
    assert not missing, "DescribeConfigs v%d lacks %r (has %r)" % (version, sorted(missing), sorted(got))
    bad = []
    for name, c in sorted(got.items()):
        if name in topic_set:
            want = (topic_set[name], SRC_TOPIC)
        elif name in broker_defaults:
            want = (broker_defaults[name], SRC_BROKER)
        elif name in DEFAULTS:
            want = (DEFAULTS[name], SRC_DEFAULT)
        else:
            want = (c["value"], SRC_DEFAULT)
        if c["value"] is None or (c["value"], c["source"]) != want:
            bad.append("%s: got (%r, source %r), expected %r" % (name, c["value"], c["source"], want))
        if c["read_only"] or c["sensitive"]:
            bad.append("%s: topic config described as read-only or sensitive: %r" % (name, c))
    assert not bad, "topic %s configs (v%d):\n  %s" % (topic, version, "\n  ".join(bad))
    return got


def alter(bootstrap, version, resources, validate_only=False):
    """Raw AlterConfigs; returns {resource name: (error, message)}."""
    with K.Conn(bootstrap) as conn:
        res = K.alter_configs(conn, version, resources, validate_only=validate_only)
    assert [(r["resource_type"], r["resource_name"]) for r in res] == [(r[0], r[1]) for r in resources], res
    return {r["resource_name"]: (r["error"], r["error_message"]) for r in res}


def ialter(bootstrap, version, resources, validate_only=False):
    """Raw IncrementalAlterConfigs; returns {resource name: (error, message)}."""
    with K.Conn(bootstrap) as conn:
        res = K.incremental_alter_configs(conn, version, resources, validate_only=validate_only)
    assert [(r["resource_type"], r["resource_name"]) for r in res] == [(r[0], r[1]) for r in resources], res
    return {r["resource_name"]: (r["error"], r["error_message"]) for r in res}


def assert_ok(answer, name):
    """Success for `name` (and only `name` answered): error 0 with no message (null, as Kafka
    sends; an empty string is tolerated)."""
    assert set(answer) == {name}, answer
    err, msg = answer[name]
    assert (err, msg or None) == (0, None), "expected success for %s, got error %d (%r)" % (name, err, msg)


def assert_error(answer, name, code, mentions=None):
    err, msg = answer[name]
    assert err == code, "expected error %d for %s, got %d (%r)" % (code, name, err, msg)
    assert msg, "error %d for %s came without an error message" % (code, name)
    if mentions is not None:
        assert mentions in msg, "error message %r does not name %r" % (msg, mentions)


def kp_admin(bootstrap):
    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="sluice-it-kp-admin",
                            request_timeout_ms=15000, api_version_auto_timeout_ms=10000)


def source_of(entry):
    """A librdkafka ConfigEntry's source as an int (an enum or an int, depending on the path)."""
    return int(getattr(entry.source, "value", entry.source))


def future_error(f, timeout=30):
    """0 when the admin future succeeds, else the KafkaError code."""
    try:
        f.result(timeout=timeout)
        return 0
    except KafkaException as e:
        return e.args[0].code()


def raw_produce(conn, topic, partition, value, key=b"k", ts=None):
    return K.produce_v3(conn, topic, partition, K.encode_batch([(ts or H.now_ms(), key, value, [])]))


def delete_and_recreate(bootstrap, topic, partitions):
    """Delete the topic, wait until Metadata no longer lists it, create it again (no configs)."""
    adm = H.admin_client(bootstrap)
    fs = adm.delete_topics([topic], request_timeout=15, operation_timeout=10)
    assert [future_error(f) for f in fs.values()] == [0]
    G.wait_for(lambda: topic not in H.list_topic_names(bootstrap), 15, "deleted topic %s to leave Metadata" % topic,
               interval=0.2)
    H.create_topic(bootstrap, topic, partitions)


def partitions_in_metadata(bootstrap, topic):
    with K.Conn(bootstrap) as conn:
        t = K.metadata_v1(conn, [topic])["topics"][topic]
    assert t["error"] == 0, t
    assert all(p["error"] == 0 and p["leader"] >= 0 for p in t["partitions"]), t
    return sorted(p["partition"] for p in t["partitions"])


# --------------------------------------------------------------------------
# DescribeConfigs
# --------------------------------------------------------------------------


# Kafka lists no built-in default for these: its broker names have none of their own.
NO_DEFAULT_SYNONYM = {"retention.ms", "segment.ms", "segment.jitter.ms", "flush.ms"}


def test_describe_configs_sources_and_synonyms(broker_factory, topic_name):
    b = broker_factory(extra_args=["--topic-default", "retention.ms=86400000",
                                   "--topic-default", "segment.ms=3600000"])
    H.create_topic(b.bootstrap, topic_name, 1, config={"max.message.bytes": "200000", "segment.ms": "7200000"})
    topic_set = {"max.message.bytes": "200000", "segment.ms": "7200000"}
    broker_defaults = {"retention.ms": "86400000", "segment.ms": "3600000"}
    # Levels that give a value, highest first, named as Kafka names them: the topic's own
    # setting by the topic config name, the broker-wide default and the built-in one by the
    # broker config names; none for the built-in default where Kafka's broker name has no
    # default of its own (log.retention.ms, log.roll.ms), as Kafka 4.3 answers.
    want_synonyms = {
        "max.message.bytes": [("max.message.bytes", "200000", SRC_TOPIC), ("message.max.bytes", "1048588", SRC_DEFAULT)],
        "retention.ms": [("log.retention.ms", "86400000", SRC_BROKER)],
        "segment.ms": [("segment.ms", "7200000", SRC_TOPIC), ("log.roll.ms", "3600000", SRC_BROKER)],
        "cleanup.policy": [("log.cleanup.policy", "delete", SRC_DEFAULT)],
        "segment.bytes": [("log.segment.bytes", "1073741824", SRC_DEFAULT)],
        # Kafka has no broker-level name for the throttle lists: no synonym.
        "leader.replication.throttled.replicas": [],
    }

    names = None
    for version in (1, 2, 3, 4):
        got = expect_configs(b.bootstrap, topic_name, topic_set, broker_defaults, version=version)
        assert all(c["synonyms"] == [] for c in got.values()), "synonyms sent without include_synonyms (v%d)" % version
        if names is None:
            names = set(got)
        assert set(got) == names, "v%d describes other keys: %r" % (version, set(got) ^ names)
        with_syn = describe(b.bootstrap, topic_name, version=version, synonyms=True)
        assert set(with_syn) == names
        for name, want in want_synonyms.items():
            assert with_syn[name]["synonyms"] == want, "v%d %s synonyms: %r" % (version, name, with_syn[name]["synonyms"])
        for name, c in with_syn.items():
            # The first synonym gives the value in force, from the level that sets it, and
            # no defaulted config lists a synonym of its own name.
            if name.endswith(".throttled.replicas") or name.startswith("remote."):
                assert c["synonyms"] == [], (version, c)  # Kafka has no broker name for them
                continue
            if name in NO_DEFAULT_SYNONYM and c["source"] == SRC_DEFAULT:
                assert c["synonyms"] == [], (version, c)
                continue
            assert c["synonyms"] and c["synonyms"][0][2] == c["source"], (version, c)
            if c["source"] == SRC_TOPIC:
                assert c["synonyms"][0] == (name, c["value"], SRC_TOPIC), (version, c)
            elif name not in NO_DEFAULT_SYNONYM:
                assert c["synonyms"][0][1] == c["value"], (version, c)
            # Kafka's broker configs of these have the topic config's own name.
            if c["source"] == SRC_DEFAULT and name not in ("compression.type", "compression.gzip.level",
                                                           "compression.lz4.level", "compression.zstd.level",
                                                           "min.insync.replicas",
                                                           "unclean.leader.election.enable"):
                assert all(syn[0] != name for syn in c["synonyms"]), (version, c)
        if version >= 3:
            # Kafka's ConfigType: 5 long, 3 int, 7 list, 2 string, 6 double, 1 boolean.
            want_types = {"retention.ms": 5, "segment.bytes": 3, "cleanup.policy": 7,
                          "message.timestamp.type": 2, "min.cleanable.dirty.ratio": 6,
                          "preallocate": 1}
            assert {k: with_syn[k]["config_type"] for k in want_types} == want_types, version
            assert all(c["config_type"] != 0 for c in with_syn.values()), version
        if version >= 3:
            docs = describe(b.bootstrap, topic_name, keys=["retention.ms"], version=version, docs=True)
            assert docs["retention.ms"]["documentation"], docs

    # v0: is_default instead of a source.
    v0 = describe(b.bootstrap, topic_name, version=0)
    assert set(v0) == names
    assert (v0["max.message.bytes"]["value"], v0["max.message.bytes"]["is_default"]) == ("200000", False)
    assert (v0["segment.ms"]["value"], v0["segment.ms"]["is_default"]) == ("7200000", False)
    assert (v0["cleanup.policy"]["value"], v0["cleanup.policy"]["is_default"]) == ("delete", True)
    assert v0["retention.ms"]["value"] == "86400000"

    # Only the keys asked for.
    for version in (0, 2, 4):
        only = describe(b.bootstrap, topic_name, keys=["retention.ms", "segment.bytes"], version=version)
        assert {n: c["value"] for n, c in only.items()} == {"retention.ms": "86400000", "segment.bytes": "1073741824"}

    # librdkafka sees the same values and sources.
    adm = H.admin_client(b.bootstrap)
    fs = adm.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic_name)], request_timeout=15)
    (entries,) = [f.result(timeout=30) for f in fs.values()]
    assert set(entries) == names
    assert (entries["max.message.bytes"].value, source_of(entries["max.message.bytes"])) == (
        "200000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert (entries["retention.ms"].value, source_of(entries["retention.ms"])) == (
        "86400000", ConfigSource.STATIC_BROKER_CONFIG.value)
    assert (entries["cleanup.policy"].value, source_of(entries["cleanup.policy"]), entries["cleanup.policy"].is_default) == (
        "delete", ConfigSource.DEFAULT_CONFIG.value, True)

    # kafka-python (DescribeConfigs v2 with synonyms).
    kadm = kp_admin(b.bootstrap)
    try:
        (resp,) = kadm.describe_configs([KConfigResource(KConfigResourceType.TOPIC, topic_name)], include_synonyms=True)
    finally:
        kadm.close()
    (res,) = resp.resources
    assert (res[0], res[2], res[3]) == (0, TOPIC, topic_name), res[:4]
    kp = {e[0]: e for e in res[4]}
    assert set(kp) == names
    assert kp["segment.ms"][1] == "7200000" and kp["segment.ms"][3] == SRC_TOPIC
    assert [tuple(s) for s in kp["segment.ms"][5]] == want_synonyms["segment.ms"]

    # Unknown topic.
    with K.Conn(b.bootstrap) as conn:
        (r,) = K.describe_configs(conn, 4, [(TOPIC, topic_name + "-missing", None)])
    assert r["error"] == K.UNKNOWN_TOPIC_OR_PARTITION and r["error_message"], r


def test_describe_broker_resource(broker_factory):
    b = broker_factory(extra_args=["--default-partitions", "3"])
    with K.Conn(b.bootstrap) as conn:
        brokers = K.metadata_v1(conn, None)["brokers"]
        assert [x["node_id"] for x in brokers] == [0], brokers
        for version in range(5):
            (r,) = K.describe_configs(conn, version, [(BROKER, "0", None)])
            assert (r["error"], r["resource_type"], r["resource_name"]) == (0, BROKER, "0"), r
            got = {c["name"]: c for c in r["configs"]}
            assert BROKER_KEYS <= set(got), "v%d broker configs: %r" % (version, sorted(got))
            assert got["num.partitions"]["value"] == "3"
            assert got["default.replication.factor"]["value"] == "1"
            assert got["offsets.retention.minutes"]["value"] == "10080"  # Kafka's default, 7 days
            assert int(got["group.initial.rebalance.delay.ms"]["value"]) >= 0
            for c in got.values():
                # The settings that change at run time (test_broker_configs.py) are not read-only.
                dynamic = c["name"] in ("offsets.retention.minutes", "group.initial.rebalance.delay.ms",
                                        "log.retention.ms", "message.max.bytes")
                if dynamic or c["name"] in ("num.partitions", "log.dirs"):
                    assert c["read_only"] != dynamic, "v%d: %r" % (version, c)
                # As Kafka, null for a broker name without a default of its own (log.roll.ms).
                assert (c["value"] is None) == (c["name"] in ("log.retention.ms", "log.roll.ms")), (version, c)
            (only,) = K.describe_configs(conn, version, [(BROKER, "0", ["num.partitions"])])
            assert [(c["name"], c["value"]) for c in only["configs"]] == [("num.partitions", "3")], only
    adm = H.admin_client(b.bootstrap)
    fs = adm.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "0")], request_timeout=15)
    (entries,) = [f.result(timeout=30) for f in fs.values()]
    assert entries["num.partitions"].value == "3" and entries["num.partitions"].is_read_only
    assert BROKER_KEYS <= set(entries)


# --------------------------------------------------------------------------
# AlterConfigs and IncrementalAlterConfigs
# --------------------------------------------------------------------------


def test_alter_configs_replaces_whole_set(broker_factory, topic_name):
    broker_defaults = {"retention.ms": "86400000"}
    b = broker_factory(extra_args=["--topic-default", "retention.ms=86400000"])
    initial = {"max.message.bytes": "200000", "retention.ms": "3600000", "segment.bytes": "1048576"}
    H.create_topic(b.bootstrap, topic_name, 1, config=initial)
    expect_configs(b.bootstrap, topic_name, initial, broker_defaults)

    # Each version replaces the whole set: keys left out go back to the broker or built-in default.
    steps = [
        (0, {"retention.ms": "7200000", "cleanup.policy": "delete"}),
        (1, {"segment.bytes": "2097152"}),
        (2, {"message.timestamp.type": "LogAppendTime", "retention.bytes": "123456789"}),
        (1, {}),
    ]
    for version, cfg in steps:
        answer = alter(b.bootstrap, version, [(TOPIC, topic_name, sorted(cfg.items()))])
        assert_ok(answer, topic_name)
        expect_configs(b.bootstrap, topic_name, cfg, broker_defaults)

    # librdkafka's alter_configs (same semantics).
    adm = H.admin_client(b.bootstrap)
    cfg = {"max.message.bytes": "300000", "message.timestamp.type": "LogAppendTime"}
    fs = adm.alter_configs([ConfigResource(ConfigResource.Type.TOPIC, topic_name, set_config=cfg)], request_timeout=15)
    assert [future_error(f) for f in fs.values()] == [0]
    expect_configs(b.bootstrap, topic_name, cfg, broker_defaults)

    # kafka-python's alter_configs (AlterConfigs v1).
    kadm = kp_admin(b.bootstrap)
    try:
        resp = kadm.alter_configs([KConfigResource(KConfigResourceType.TOPIC, topic_name,
                                                   configs={"retention.bytes": "1000000"})])
    finally:
        kadm.close()
    assert [(r[0], r[2], r[3]) for r in resp.resources] == [(0, TOPIC, topic_name)], resp.resources
    expect_configs(b.bootstrap, topic_name, {"retention.bytes": "1000000"}, broker_defaults)

    # A topic created again under the same name starts from the defaults.
    delete_and_recreate(b.bootstrap, topic_name, 1)
    expect_configs(b.bootstrap, topic_name, {}, broker_defaults)


def test_invalid_config_changes_change_nothing(broker, topic_name):
    initial = {"retention.ms": "3600000", "max.message.bytes": "200000"}
    H.create_topic(broker.bootstrap, topic_name, 1, config=initial)
    other = topic_name + "-other"
    H.create_topic(broker.bootstrap, other, 1)
    before = snapshot(broker.bootstrap, topic_name)
    before_other = snapshot(broker.bootstrap, other)
    assert before["retention.ms"] == ("3600000", SRC_TOPIC)

    for i, (key, value) in enumerate(INVALID):
        # A valid change next to the invalid one: the resource is refused as a whole.
        version = i % 3
        answer = alter(broker.bootstrap, version, [(TOPIC, topic_name, [("segment.ms", "7200000"), (key, value)])])
        assert_error(answer, topic_name, K.INVALID_CONFIG, mentions=key)
        assert snapshot(broker.bootstrap, topic_name) == before, "AlterConfigs v%d %s=%s changed the topic" % (
            version, key, value)
        version = i % 2
        answer = ialter(broker.bootstrap, version, [(TOPIC, topic_name, [("segment.ms", SET, "7200000"),
                                                                         (key, SET, value)])])
        assert_error(answer, topic_name, K.INVALID_CONFIG, mentions=key)
        assert snapshot(broker.bootstrap, topic_name) == before, (
            "IncrementalAlterConfigs v%d SET %s=%s changed the topic" % (version, key, value))

    # The same key twice in one resource.
    answer = alter(broker.bootstrap, 1, [(TOPIC, topic_name, [("retention.ms", "1000"), ("retention.ms", "2000")])])
    assert_error(answer, topic_name, K.INVALID_REQUEST)
    answer = ialter(broker.bootstrap, 1, [(TOPIC, topic_name, [("retention.ms", SET, "1000"),
                                                               ("retention.ms", DELETE, None)])])
    assert_error(answer, topic_name, K.INVALID_REQUEST)
    answer = ialter(broker.bootstrap, 0, [(TOPIC, topic_name, [("segment.ms", SET, "1000"),
                                                               ("segment.ms", SET, "1000")])])
    assert_error(answer, topic_name, K.INVALID_REQUEST)
    assert snapshot(broker.bootstrap, topic_name) == before

    # Unknown topic.
    missing = topic_name + "-missing"
    assert_error(alter(broker.bootstrap, 2, [(TOPIC, missing, [("retention.ms", "1000")])]),
                 missing, K.UNKNOWN_TOPIC_OR_PARTITION)
    assert_error(ialter(broker.bootstrap, 1, [(TOPIC, missing, [("retention.ms", SET, "1000")])]),
                 missing, K.UNKNOWN_TOPIC_OR_PARTITION)
    assert missing not in H.list_topic_names(broker.bootstrap)

    # The broker resource cannot be altered.
    for version in (0, 2):
        assert_error(alter(broker.bootstrap, version, [(BROKER, "0", [("num.partitions", "5")])]), "0", K.INVALID_REQUEST)
    for version in (0, 1):
        assert_error(ialter(broker.bootstrap, version, [(BROKER, "0", [("num.partitions", SET, "5")])]),
                     "0", K.INVALID_REQUEST)
    with K.Conn(broker.bootstrap) as conn:
        (r,) = K.describe_configs(conn, 4, [(BROKER, "0", ["num.partitions"])])
    assert [(c["name"], c["value"]) for c in r["configs"]] == [("num.partitions", "1")], r

    # validate_only: a valid change is accepted and not applied; an invalid one is still refused.
    for version in (0, 1, 2):
        answer = alter(broker.bootstrap, version, [(TOPIC, topic_name, [("retention.ms", "7200000")])], validate_only=True)
        assert_ok(answer, topic_name)
        assert_error(alter(broker.bootstrap, version, [(TOPIC, topic_name, [("segment.bytes", "100")])],
                           validate_only=True), topic_name, K.INVALID_CONFIG, mentions="segment.bytes")
    for version in (0, 1):
        answer = ialter(broker.bootstrap, version, [(TOPIC, topic_name, [("retention.ms", DELETE, None),
                                                                         ("segment.ms", SET, "1000")])],
                        validate_only=True)
        assert_ok(answer, topic_name)
        assert_error(ialter(broker.bootstrap, version, [(TOPIC, topic_name, [("retention.ms", SET, "abc")])],
                            validate_only=True), topic_name, K.INVALID_CONFIG, mentions="retention.ms")
    assert snapshot(broker.bootstrap, topic_name) == before

    # Two resources in one request: each gets its own answer, only the valid one changes.
    answer = alter(broker.bootstrap, 2, [(TOPIC, other, [("retention.ms", "5000000")]),
                                         (TOPIC, topic_name, [("message.timestamp.type", "Foo")])])
    assert (answer[other][0], answer[other][1] or None) == (0, None), answer
    assert_error(answer, topic_name, K.INVALID_CONFIG, mentions="message.timestamp.type")
    assert snapshot(broker.bootstrap, topic_name) == before
    after_other = dict(before_other, **{"retention.ms": ("5000000", SRC_TOPIC)})
    assert snapshot(broker.bootstrap, other) == after_other

    # librdkafka reports the same codes.
    adm = H.admin_client(broker.bootstrap)
    fs = adm.alter_configs([ConfigResource(ConfigResource.Type.TOPIC, topic_name,
                                           set_config={"retention.ms": "abc"})], request_timeout=15)
    assert [future_error(f) for f in fs.values()] == [K.INVALID_CONFIG]
    fs = adm.alter_configs([ConfigResource(ConfigResource.Type.TOPIC, missing, set_config={"retention.ms": "1"})],
                           request_timeout=15)
    assert [future_error(f) for f in fs.values()] == [K.UNKNOWN_TOPIC_OR_PARTITION]
    fs = adm.alter_configs([ConfigResource(ConfigResource.Type.TOPIC, topic_name, set_config={"retention.ms": "1"})],
                           request_timeout=15, validate_only=True)
    assert [future_error(f) for f in fs.values()] == [0]
    assert snapshot(broker.bootstrap, topic_name) == before


def test_incremental_alter_configs_operations(broker_factory, topic_name):
    broker_defaults = {"retention.ms": "86400000"}
    b = broker_factory(extra_args=["--topic-default", "retention.ms=86400000"])
    H.create_topic(b.bootstrap, topic_name, 1, config={"max.message.bytes": "200000"})
    cfg = {"max.message.bytes": "200000"}
    expect_configs(b.bootstrap, topic_name, cfg, broker_defaults)

    def ok(version, ops):
        answer = ialter(b.bootstrap, version, [(TOPIC, topic_name, ops)])
        assert_ok(answer, topic_name)

    # SET leaves the other keys alone.
    ok(0, [("retention.ms", SET, "3600000")])
    cfg["retention.ms"] = "3600000"
    expect_configs(b.bootstrap, topic_name, cfg, broker_defaults)
    # SET and DELETE in one resource; DELETE goes back to the built-in default.
    ok(1, [("segment.bytes", SET, "2048"), ("max.message.bytes", DELETE, None)])
    cfg = {"retention.ms": "3600000", "segment.bytes": "2048"}
    expect_configs(b.bootstrap, topic_name, cfg, broker_defaults)
    # DELETE of a key with a broker-wide default goes back to it.
    ok(0, [("retention.ms", DELETE, None)])
    cfg = {"segment.bytes": "2048"}
    expect_configs(b.bootstrap, topic_name, cfg, broker_defaults)
    # DELETE of a key that is not set changes nothing.
    ok(1, [("cleanup.policy", DELETE, None)])
    expect_configs(b.bootstrap, topic_name, cfg, broker_defaults)

    # APPEND / SUBTRACT on the list config cleanup.policy.
    for version in (0, 1):
        # 'delete' + 'compact' = 'delete,compact'; SUBTRACT takes it back to 'delete'.
        ok(version, [("cleanup.policy", APPEND, "compact")])
        assert describe(b.bootstrap, topic_name, keys=["cleanup.policy"])["cleanup.policy"]["value"] == "delete,compact"
        ok(version, [("cleanup.policy", SUBTRACT, "compact")])
        assert describe(b.bootstrap, topic_name, keys=["cleanup.policy"])["cleanup.policy"]["value"] == "delete"
        # A value that is neither policy is refused and changes nothing.
        answer = ialter(b.bootstrap, version, [(TOPIC, topic_name, [("cleanup.policy", APPEND, "shred")])])
        assert_error(answer, topic_name, K.INVALID_CONFIG, mentions="cleanup.policy")
    ok(1, [("cleanup.policy", DELETE, None)])
    expect_configs(b.bootstrap, topic_name, cfg, broker_defaults)
    ok(1, [("cleanup.policy", APPEND, "delete")])  # already in the list: stays 'delete'
    assert describe(b.bootstrap, topic_name, keys=["cleanup.policy"])["cleanup.policy"]["value"] == "delete"
    ok(0, [("cleanup.policy", SUBTRACT, "compact")])  # not in the list: stays 'delete'
    assert describe(b.bootstrap, topic_name, keys=["cleanup.policy"])["cleanup.policy"]["value"] == "delete"
    ok(1, [("cleanup.policy", DELETE, None)])
    expect_configs(b.bootstrap, topic_name, cfg, broker_defaults)

    # APPEND / SUBTRACT on a key that is not a list.
    for version in (0, 1):
        for op in (APPEND, SUBTRACT):
            answer = ialter(b.bootstrap, version, [(TOPIC, topic_name, [("retention.ms", op, "1000")])])
            assert_error(answer, topic_name, K.INVALID_CONFIG, mentions="retention.ms")
            answer = ialter(b.bootstrap, version, [(TOPIC, topic_name, [("segment.bytes", op, "4096")])])
            assert_error(answer, topic_name, K.INVALID_CONFIG, mentions="segment.bytes")
    expect_configs(b.bootstrap, topic_name, cfg, broker_defaults)


def test_incremental_set_without_value_is_invalid_request(broker, topic_name):
    """As Kafka's ConfigAdminManager: SET (or APPEND / SUBTRACT) with a null value is refused with
    INVALID_REQUEST, "Null value not supported for : <key>"; DELETE needs no value."""
    H.create_topic(broker.bootstrap, topic_name, 1, config={"retention.ms": "3600000"})
    before = snapshot(broker.bootstrap, topic_name)
    for version in (0, 1):
        for op in (SET, APPEND):
            key = "retention.ms" if op == SET else "cleanup.policy"
            answer = ialter(broker.bootstrap, version, [(TOPIC, topic_name, [(key, op, None)])])
            assert_error(answer, topic_name, K.INVALID_REQUEST, mentions=key)
    assert snapshot(broker.bootstrap, topic_name) == before


def test_config_changes_take_effect_and_persist(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1)
    a20k, b5k, c20k, d50k = b"a" * 20000, b"b" * 5000, b"c" * 20000, b"d" * 50000
    with K.Conn(broker.bootstrap) as conn:
        assert raw_produce(conn, topic_name, 0, a20k)["base_offset"] == 0
    adm = H.admin_client(broker.bootstrap)
    fs = adm.alter_configs([ConfigResource(ConfigResource.Type.TOPIC, topic_name,
                                           set_config={"max.message.bytes": "10000"})], request_timeout=15)
    assert [future_error(f) for f in fs.values()] == [0]
    # In force for the very next produce, raw and through librdkafka.
    with K.Conn(broker.bootstrap) as conn:
        assert raw_produce(conn, topic_name, 0, c20k)["error"] == K.MESSAGE_TOO_LARGE
        p = raw_produce(conn, topic_name, 0, b5k)
        assert (p["error"], p["base_offset"]) == (0, 1), p
    producer = Producer(H.producer_conf(broker.bootstrap))
    d = H.produce_one(producer, topic_name, b"k", c20k, partition=0)
    assert d.err is not None and d.err.code() == K.MESSAGE_TOO_LARGE, d

    broker.restart()
    assert describe(broker.bootstrap, topic_name, keys=["max.message.bytes"])["max.message.bytes"]["value"] == "10000"
    expect_configs(broker.bootstrap, topic_name, {"max.message.bytes": "10000"})
    with K.Conn(broker.bootstrap) as conn:
        assert raw_produce(conn, topic_name, 0, c20k)["error"] == K.MESSAGE_TOO_LARGE
    answer = ialter(broker.bootstrap, 1, [(TOPIC, topic_name, [("max.message.bytes", SET, "100000")])])
    assert_ok(answer, topic_name)
    with K.Conn(broker.bootstrap) as conn:
        p = raw_produce(conn, topic_name, 0, c20k)
        assert (p["error"], p["base_offset"]) == (0, 2), p
        assert raw_produce(conn, topic_name, 0, b"e" * 120000)["error"] == K.MESSAGE_TOO_LARGE

    # Another config in force at once: LogAppendTime replaces the producer's timestamp.
    answer = ialter(broker.bootstrap, 0, [(TOPIC, topic_name, [("message.timestamp.type", SET, "LogAppendTime")])])
    assert_ok(answer, topic_name)
    old = 1_000_000_000_000
    with K.Conn(broker.bootstrap) as conn:
        t0 = H.now_ms()
        p = raw_produce(conn, topic_name, 0, d50k, ts=old)
        assert (p["error"], p["base_offset"]) == (0, 3), p
        assert p["log_append_time"] >= t0 - 2000, p

    # A change acknowledged before a kill -9 is still there.
    answer = ialter(broker.bootstrap, 1, [(TOPIC, topic_name, [("max.message.bytes", SET, "60000")])])
    assert_ok(answer, topic_name)
    broker.kill9()
    broker.start()
    expect_configs(broker.bootstrap, topic_name, {"max.message.bytes": "60000", "message.timestamp.type": "LogAppendTime"})
    with K.Conn(broker.bootstrap) as conn:
        assert raw_produce(conn, topic_name, 0, b"f" * 70000)["error"] == K.MESSAGE_TOO_LARGE
        recs, hw = K.fetch_all_v4(conn, topic_name, 0)
    assert hw == 4
    assert [(r.offset, r.value) for r in recs] == [(0, a20k), (1, b5k), (2, c20k), (3, d50k)]
    assert [r.timestamp_type for r in recs] == [0, 0, 0, 1]
    assert recs[3].timestamp == p["log_append_time"]


# --------------------------------------------------------------------------
# CreatePartitions
# --------------------------------------------------------------------------


def produce_to(bootstrap, topic, counts, salt, start=None):
    """Produce counts {partition: n} keyed records; returns {(p, offset): record dict}."""
    start = start or {}
    now = H.now_ms()  # recent timestamps: nothing here may ever be old enough for retention
    records = []
    for p, n in sorted(counts.items()):
        for i in range(n):
            j = start.get(p, 0) + i
            records.append(dict(key=H.key_for(j, b"p%d-" % p), value=H.value_for(j, salt + b"%d" % p),
                                headers=H.headers_for(j, salt), timestamp=now + j, partition=p))
    producer = Producer(H.producer_conf(bootstrap))
    dr = H.produce_all(producer, topic, records)
    out = {}
    for r, d in zip(records, dr):
        assert d.partition == r["partition"], d
        out[(d.partition, d.offset)] = r
    return out


def test_create_partitions_grow(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 3)
    expected = produce_to(broker.bootstrap, topic_name, {0: 20, 1: 20, 2: 20}, b"old")

    adm = H.admin_client(broker.bootstrap)
    fs = adm.create_partitions([NewPartitions(topic_name, 5)], request_timeout=15, operation_timeout=10)
    assert [future_error(f) for f in fs.values()] == [0]
    H.wait_topic(broker.bootstrap, topic_name, 5)
    assert partitions_in_metadata(broker.bootstrap, topic_name) == [0, 1, 2, 3, 4]

    expected.update(produce_to(broker.bootstrap, topic_name, {3: 15, 4: 10}, b"new"))
    expected.update(produce_to(broker.bootstrap, topic_name, {0: 5}, b"more", start={0: 20}))
    assert sorted(o for p, o in expected if p == 3) == list(range(15))
    assert sorted(o for p, o in expected if p == 0) == list(range(25))
    got = H.consume_all(broker.bootstrap, topic_name, {0: 25, 1: 20, 2: 20, 3: 15, 4: 10})
    H.assert_records_match(expected, got)

    # Errors, every version.
    missing = topic_name + "-missing"
    with K.Conn(broker.bootstrap) as conn:
        for version in range(4):
            for count in (5, 4, 0):
                res = K.create_partitions(conn, version, [(topic_name, count, None)])
                err, msg = res[topic_name]
                assert err == K.INVALID_PARTITIONS and msg, "v%d count %d: %r" % (version, count, res)
            res = K.create_partitions(conn, version, [(missing, 4, None)])
            assert res[missing][0] == K.UNKNOWN_TOPIC_OR_PARTITION, res
            # validate_only: accepted, nothing changes; validation still runs.
            res = K.create_partitions(conn, version, [(topic_name, 8, None)], validate_only=True)
            assert_ok(res, topic_name)
            res = K.create_partitions(conn, version, [(topic_name, 4, None)], validate_only=True)
            assert res[topic_name][0] == K.INVALID_PARTITIONS, res
    fs = adm.create_partitions([NewPartitions(topic_name, 9)], request_timeout=15, validate_only=True)
    assert [future_error(f) for f in fs.values()] == [0]
    fs = adm.create_partitions([NewPartitions(topic_name, 5)], request_timeout=15)
    assert [future_error(f) for f in fs.values()] == [K.INVALID_PARTITIONS]
    assert partitions_in_metadata(broker.bootstrap, topic_name) == [0, 1, 2, 3, 4]
    assert missing not in H.list_topic_names(broker.bootstrap)

    # The new count and the new partitions' data survive a restart; offsets continue.
    broker.restart()
    H.wait_topic(broker.bootstrap, topic_name, 5)
    expected.update(produce_to(broker.bootstrap, topic_name, {4: 3}, b"after", start={4: 10}))
    assert sorted(o for p, o in expected if p == 4) == list(range(13))
    got = H.consume_all(broker.bootstrap, topic_name, {0: 25, 1: 20, 2: 20, 3: 15, 4: 13})
    H.assert_records_match(expected, got)


def test_create_partitions_raw_versions_and_kafka_python(broker, topic_name):
    a, b, c = topic_name + "-a", topic_name + "-b", topic_name + "-c"
    for t in (a, b, c):
        H.create_topic(broker.bootstrap, t, 1)
    # One growth per version, several topics per request with independent answers.
    with K.Conn(broker.bootstrap) as conn:
        for version in range(4):
            res = K.create_partitions(conn, version, [(a, 2 + version, None), (b, 1, None)])
            assert (res[a][0], res[a][1] or None) == (0, None), "v%d: %r" % (version, res)
            assert res[b][0] == K.INVALID_PARTITIONS and res[b][1], res
            assert partitions_in_metadata(broker.bootstrap, a) == list(range(2 + version))
    assert partitions_in_metadata(broker.bootstrap, b) == [0]
    # Explicit assignments: one broker id (this broker, 0) per new partition.
    with K.Conn(broker.bootstrap) as conn:
        res = K.create_partitions(conn, 3, [(b, 3, [[0], [0]])])
        assert (res[b][0], res[b][1] or None) == (0, None), res
        for bad in ([[0]], [[0], [0], [0]], [[7], [0]], [[0, 0], [0]]):
            res = K.create_partitions(conn, 1, [(b, 5, bad)])
            assert res[b][0] == K.INVALID_REPLICA_ASSIGNMENT and res[b][1], "assignment %r: %r" % (bad, res)
    assert partitions_in_metadata(broker.bootstrap, b) == [0, 1, 2]

    kadm = kp_admin(broker.bootstrap)
    try:
        resp = kadm.create_partitions({c: KNewPartitions(3)})
        assert [(t[0], t[1]) for t in resp.topic_errors] == [(c, 0)], resp.topic_errors
    finally:
        kadm.close()
    H.wait_topic(broker.bootstrap, c, 3)
    # Records go to and come back from a partition kafka-python created.
    expected = produce_to(broker.bootstrap, c, {2: 7}, b"kp")
    H.assert_records_match(expected, H.consume_all(broker.bootstrap, c, {0: 0, 1: 0, 2: 7}))
    expected = produce_to(broker.bootstrap, a, {4: 4}, b"a4")
    H.assert_records_match(expected, H.consume_all(broker.bootstrap, a, {p: (4 if p == 4 else 0) for p in range(5)}))
    # Grown counts survive a restart, for every topic of a multi-topic request.
    broker.restart()
    assert partitions_in_metadata(broker.bootstrap, a) == [0, 1, 2, 3, 4]
    assert partitions_in_metadata(broker.bootstrap, b) == [0, 1, 2]
    assert partitions_in_metadata(broker.bootstrap, c) == [0, 1, 2]


def test_group_consumer_picks_up_new_partitions(broker_factory, topic_name):
    """A subscribed librdkafka group member notices the growth (metadata refresh), the group
    rebalances, and the records of the new partitions reach it."""
    b = broker_factory(extra_args=["--group-initial-rebalance-delay-ms", "0"])
    H.create_topic(b.bootstrap, topic_name, 2)
    expected = produce_to(b.bootstrap, topic_name, {0: 5, 1: 5}, b"g1")
    conf = G.group_consumer_conf(b.bootstrap, "grow-" + topic_name, **{"topic.metadata.refresh.interval.ms": 500})
    c = Consumer(conf)
    got = {}  # (partition, offset) -> record; a rebalance may deliver a record again (at-least-once)

    def poll_until(n, timeout):
        deadline = time.monotonic() + timeout
        while len(got) < n:
            assert time.monotonic() < deadline, "group member got %d of %d records (assignment %r)" % (
                len(got), n, [tp.partition for tp in c.assignment()])
            msgs = c.consume(num_messages=100, timeout=0.2)
            for m in msgs:
                assert m.error() is None, m.error()
                r = H.msg_to_dict(m)
                pos = (r["partition"], r["offset"])
                assert got.setdefault(pos, r) == r, "record %r delivered twice with different contents" % (pos,)
            if msgs:
                try:
                    c.commit(asynchronous=False)
                except KafkaException:
                    pass  # a rebalance started: the records come again, and are compared above

    try:
        c.subscribe([topic_name])
        poll_until(10, 30)
        adm = H.admin_client(b.bootstrap)
        fs = adm.create_partitions([NewPartitions(topic_name, 4)], request_timeout=15)
        assert [future_error(f) for f in fs.values()] == [0]
        expected.update(produce_to(b.bootstrap, topic_name, {2: 5, 3: 5}, b"g2"))
        poll_until(20, 30)
        assert sorted(tp.partition for tp in c.assignment()) == [0, 1, 2, 3]
    finally:
        c.close()
    H.assert_records_match(expected, list(got.values()))


def test_deprecated_kafka3_configs_accepted_without_effect(broker, topic_name):
    """Kafka 3.x accepts these topic configs; so does Sluice: CreateTopics (librdkafka),
    IncrementalAlterConfigs (raw), DescribeConfigs shows them; records still flow."""
    H.create_topic(broker.bootstrap, topic_name, 2, config=ACCEPTED_NO_EFFECT)
    got = describe(broker.bootstrap, topic_name, keys=sorted(ACCEPTED_NO_EFFECT), synonyms=True)
    assert {k: (c["value"], c["source"]) for k, c in got.items()} == {
        k: (v, SRC_TOPIC) for k, v in ACCEPTED_NO_EFFECT.items()}
    assert got["message.format.version"]["synonyms"] == [("message.format.version", "2.8", SRC_TOPIC),
                                                         ("log.message.format.version", "3.0-IV1", SRC_DEFAULT)]
    answer = ialter(broker.bootstrap, 1, [(TOPIC, topic_name, [
        ("message.format.version", SET, "3.0-IV1"), ("follower.replication.throttled.replicas", DELETE, None)])])
    assert_ok(answer, topic_name)
    got = describe(broker.bootstrap, topic_name, keys=["message.format.version", "follower.replication.throttled.replicas"])
    assert (got["message.format.version"]["value"], got["message.format.version"]["source"]) == ("3.0-IV1", SRC_TOPIC)
    assert (got["follower.replication.throttled.replicas"]["value"],
            got["follower.replication.throttled.replicas"]["source"]) == ("", SRC_DEFAULT)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(4):
        p.produce(topic_name, value=b"v%d" % i, partition=i % 2)
    assert p.flush(15) == 0
    with K.Conn(broker.bootstrap) as conn:
        assert [K.high_watermark(conn, topic_name, part) for part in (0, 1)] == [2, 2]
