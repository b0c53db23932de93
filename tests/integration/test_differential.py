"""Apache Kafka as the oracle: the same requests, sent by one raw protocol client
(kproto, kproto_flex) to Apache Kafka 4.3.1 (one KRaft node from the Maven jars, started
by scripts/apache-kafka) and to Sluice, must get the same answers, field by field.

Only the fields in differential_helpers.MAY_DIFFER are left out of the comparison, each for its reason;
error messages are compared for presence (both null or both set), not for their words.
Every other difference fails the test with the path of the field and both values.
Where Sluice differs on purpose, the test says so and docs/compatibility.md
("Differences from Apache Kafka") gives the reason.
"""

import os
import time

import pytest

import kproto as K
import kproto_flex as F
from differential_helpers import (  # noqa: F401 (kafka, sluice, both: the module's fixtures)
    ask, assert_same, both, create, fresh, kafka, produce, records, same, set_aside_deliberate, sluice,
    wait_until)
from test_fetch_sessions import fetch as session_fetch


# -- CreateTopics ------------------------------------------------------------------------


def create_answer(both, topics, validate_only=False):
    k, s = ask(both, lambda c: F.create_topics(c, topics, validate_only))
    for kt, st in zip(k["topics"], s["topics"]):
        if kt["configs"] and st["configs"]:
            kc, sc = ({c["name"]: c for c in t["configs"]} for t in (kt, st))
            set_aside_deliberate(kc, sc)
            kt["configs"], st["configs"] = list(kc.values()), list(sc.values())
    return assert_same(k, s, "CreateTopics %r" % (topics,))


BAD_NAMES = ["", ".", "..", "a" * 250, "with space", "slash/name", "star*", "tab\t", "é"]


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_create_topics_bad_name(both, name):
    a = create_answer(both, [dict(name=name)])
    assert a["topics"][0]["error_code"] == 17, a  # INVALID_TOPIC_EXCEPTION


def test_create_topics_valid_names(both):
    suffix = fresh("n")
    names = ["a" * 200 + suffix[:49], "__under" + suffix, "Mixed.Case_-" + suffix]
    a = create_answer(both, [dict(name=n) for n in names])
    assert [t["error_code"] for t in a["topics"]] == [0, 0, 0], a


@pytest.mark.parametrize("partitions", [0, -2, -100])
def test_create_topics_bad_partition_count(both, partitions):
    a = create_answer(both, [dict(name=fresh("p"), num_partitions=partitions)])
    assert a["topics"][0]["error_code"] == 37, a  # INVALID_PARTITIONS


def test_create_topics_default_partitions_and_replication(both):
    a = create_answer(both, [dict(name=fresh("d"), num_partitions=-1, replication_factor=-1)], validate_only=True)
    assert a["topics"][0]["error_code"] == 0 and a["topics"][0]["num_partitions"] == 1, a


@pytest.mark.parametrize("configs", [
    {"no.such.config": "1"},
    {"retention.ms": "abc"},
    {"retention.ms": "-5"},
    {"cleanup.policy": "bogus"},
    {"max.message.bytes": "-1"},
    {"min.insync.replicas": "0"},
    {"message.timestamp.type": "NotATime"},
    {"compression.type": "brotli"},
    {"segment.bytes": "10"},
    {"compression.gzip.level": "10"},
    {"unclean.leader.election.enable": "maybe"},
], ids=lambda c: "%s=%s" % next(iter(c.items())))
def test_create_topics_bad_config(both, configs):
    for validate_only in (True, False):
        a = create_answer(both, [dict(name=fresh("c"), configs=configs)], validate_only)
        assert a["topics"][0]["error_code"] == 40, a  # INVALID_CONFIG


def test_create_topics_empty_cleanup_policy(both):
    """Kafka 4.x takes an empty cleanup.policy: neither deletion nor compaction."""
    a = create_answer(both, [dict(name=fresh("nopolicy"), configs={"cleanup.policy": ""})])
    t = a["topics"][0]
    assert t["error_code"] == 0 and {"name": "cleanup.policy", "value": "", "read_only": False,
                                     "config_source": 1, "is_sensitive": False} in t["configs"], t


def test_create_topics_answers_the_configs(both):
    """CreateTopics v5+ answers the new topic's configs with their sources."""
    for validate_only in (True, False):
        a = create_answer(both, [dict(name=fresh("cfg"), num_partitions=2,
                                      configs={"retention.ms": "3600000", "cleanup.policy": "compact"})],
                          validate_only)
        t = a["topics"][0]
        assert t["error_code"] == 0 and t["num_partitions"] == 2 and t["replication_factor"] == 1, t
        assert {"name": "retention.ms", "value": "3600000", "read_only": False, "config_source": 1,
                "is_sensitive": False} in t["configs"], t


def test_create_topics_validate_only_creates_nothing(both):
    name = fresh("v")
    create_answer(both, [dict(name=name)], validate_only=True)
    a = same(both, lambda c: F.metadata(c, [name]))
    assert a["topics"][0]["error_code"] == K.UNKNOWN_TOPIC_OR_PARTITION, a


def test_create_topics_exists_and_duplicates(both):
    name = create(both, fresh("e"))
    a = create_answer(both, [dict(name=name)])
    assert a["topics"][0]["error_code"] == K.TOPIC_ALREADY_EXISTS, a
    a = create_answer(both, [dict(name=name)], validate_only=True)
    assert a["topics"][0]["error_code"] == K.TOPIC_ALREADY_EXISTS, a
    dup = fresh("dup")
    a = create_answer(both, [dict(name=dup), dict(name=dup)])
    assert [t["error_code"] for t in a["topics"]] == [K.INVALID_REQUEST], a


def test_create_topics_count_and_assignments(both):
    a = create_answer(both, [dict(name=fresh("as"), num_partitions=2,
                                  assignments=[dict(partition_index=0, broker_ids=[1])])])
    assert a["topics"][0]["error_code"] == K.INVALID_REQUEST, a


# -- Metadata, DeleteTopics, CreatePartitions ------------------------------------------------


def test_metadata_of_a_topic_and_an_unknown_one(both):
    name = create(both, fresh("m"), partitions=3)
    unknown = fresh("unknown")
    a = same(both, lambda c: F.metadata(c, [name, unknown], authorized_operations=True))
    assert [t["error_code"] for t in a["topics"]] == [0, K.UNKNOWN_TOPIC_OR_PARTITION], a
    assert len(a["topics"][0]["partitions"]) == 3


def test_delete_topics_unknown(both):
    gone = fresh("gone")
    a = same(both, lambda c: F.delete_topics(c, names=[gone]))
    assert a["responses"][0]["error_code"] == K.UNKNOWN_TOPIC_OR_PARTITION, a
    a = same(both, lambda c: F.delete_topics(c, ids=[b"\x01" * 16]))
    assert a["responses"][0]["error_code"] == 100, a  # UNKNOWN_TOPIC_ID


def create_partitions(both, topic, count, validate_only=False):
    def ask_one(c):
        (e, m), = K.create_partitions(c, 3, [(topic, count, None)], validate_only=validate_only).values()
        return dict(error=e, error_message=m)
    return same(both, ask_one, "CreatePartitions %s to %d" % (topic, count))["error"]


def test_create_partitions_errors(both):
    name = create(both, fresh("cp"), partitions=2)
    assert create_partitions(both, name, 1) == 37  # INVALID_PARTITIONS
    assert create_partitions(both, name, 2) == 37
    assert create_partitions(both, fresh("none"), 4) == K.UNKNOWN_TOPIC_OR_PARTITION
    assert create_partitions(both, name, 3, validate_only=True) == 0


# -- Produce ----------------------------------------------------------------------------------


def produce_answer(both, topic, batch, partition=0, **kw):
    a = same(both, lambda c: F.produce(c, topic, partition, batch, **kw), "Produce to %s" % topic)
    return a["responses"][0]["partition_responses"][0]


def test_produce_offsets_and_unknowns(both):
    name = create(both, fresh("pr"))
    p = produce_answer(both, name, K.encode_batch(records(3)))
    assert (p["error_code"], p["base_offset"], p["log_append_time_ms"]) == (0, 0, -1), p
    p = produce_answer(both, name, K.encode_batch(records(2)))
    assert p["base_offset"] == 3, p
    p = produce_answer(both, name, K.encode_batch(records(1)), partition=5)
    assert p["error_code"] == K.UNKNOWN_TOPIC_OR_PARTITION, p
    p = produce_answer(both, fresh("nope"), K.encode_batch(records(1)))
    assert p["error_code"] == K.UNKNOWN_TOPIC_OR_PARTITION, p


def test_produce_log_append_time(both):
    name = create(both, fresh("lat"), configs={"message.timestamp.type": "LogAppendTime"})
    p = produce_answer(both, name, K.encode_batch(records(2)))
    assert p["error_code"] == 0 and p["log_append_time_ms"] == "<time>", p


def test_produce_refusals(both):
    name = create(both, fresh("big"), configs={"max.message.bytes": "2000"})
    p = produce_answer(both, name, K.encode_batch(records(1, size=3000)))
    assert p["error_code"] == K.MESSAGE_TOO_LARGE, p
    p = produce_answer(both, name, K.encode_batch(records(2), corrupt_crc=True))
    assert p["error_code"] == K.CORRUPT_MESSAGE, p
    p = produce_answer(both, name, K.encode_batch(records(1)), acks=2)
    assert p["error_code"] == 21, p  # INVALID_REQUIRED_ACKS
    p = produce_answer(both, name, K.encode_batch(records(1), transactional=True, producer_id=5,
                                                  producer_epoch=0, base_sequence=0))
    assert p["error_code"] != 0, p
    p = produce_answer(both, name, K.encode_batch(records(2)))
    assert p["error_code"] == 0 and p["base_offset"] == 0, p


def test_produce_invalid_records(both):
    name = create(both, fresh("inv"))
    # Deliberate difference: Kafka stores an uncompressed batch whose records' offset
    # deltas are not 0, 1, 2... (consumers then see offsets that were never assigned);
    # Sluice refuses it, as Kafka does for a compressed batch.
    bad_delta = (K.encode_record(0, 0, b"a", b"b", []) + K.encode_record(5, 0, b"a", b"b", []))
    k, s = ask(both, lambda c: F.produce(c, name, 0, K.encode_batch(records(2), body=bad_delta)))
    k, s = (x["responses"][0]["partition_responses"][0] for x in (k, s))
    assert (k["error_code"], s["error_code"]) == (0, K.INVALID_RECORD), (k, s)
    assert s["record_errors"][0]["batch_index"] == 1, s
    compacted = create(both, fresh("cmp"), configs={"cleanup.policy": "compact"})
    p = produce_answer(both, compacted, K.encode_batch([(1, None, b"v", []), (2, b"k", b"v", [])]))
    assert p["error_code"] == K.INVALID_RECORD, p


def test_produce_codecs(both):
    """zstd needs Produce v7 (KIP-110); every codec is taken at v9; a gzip batch that does
    not decompress is refused."""
    name = create(both, fresh("zstd"))
    batch = K.encode_batch(records(3), compression=K.ZSTD)
    a = same(both, lambda c: K.produce_v3(c, name, 0, batch))
    assert a["error"] == 76, a  # UNSUPPORTED_COMPRESSION_TYPE
    for codec in (K.GZIP, K.SNAPPY, K.LZ4, K.ZSTD):
        p = produce_answer(both, name, K.encode_batch(records(2), compression=codec))
        assert p["error_code"] == 0, (codec, p)
    # Deliberate difference: Kafka answers a batch that does not decompress with
    # UNKNOWN_SERVER_ERROR; Sluice with INVALID_RECORD and the reason.
    bad = K.encode_batch(records(2), compression=K.GZIP, body=b"not gzip at all")
    k, s = (x["responses"][0]["partition_responses"][0] for x in ask(both, lambda c: F.produce(c, name, 0, bad)))
    assert (k["error_code"], s["error_code"]) == (-1, K.INVALID_RECORD) and s["error_message"], (k, s)


def test_produce_record_list_too_large(both):
    name = create(both, fresh("seg"), configs={"segment.bytes": str(1 << 20), "max.message.bytes": str(2 << 20)})
    p = produce_answer(both, name, K.encode_batch(records(1, size=(1 << 20) + 1000)))
    assert p["error_code"] == 18, p  # RECORD_LIST_TOO_LARGE


# -- Fetch and ListOffsets ----------------------------------------------------------------------


def fetch_answer(both, topic, offset, partition=0):
    a = same(both, lambda c: F.fetch(c, topic, partition, offset), "Fetch %s@%d" % (topic, offset))
    return a["responses"][0]["partitions"][0]


def test_fetch_out_of_range_and_unknown(both):
    name = create(both, fresh("f"))
    produce(both, name, [K.encode_batch(records(5))])
    p = fetch_answer(both, name, 5)
    assert (p["error_code"], p["high_watermark"], p["records"]) == (0, 5, b""), p
    p = fetch_answer(both, name, 6)
    assert p["error_code"] == K.OFFSET_OUT_OF_RANGE, p
    p = fetch_answer(both, name, -1)
    assert p["error_code"] == K.OFFSET_OUT_OF_RANGE, p
    a = same(both, lambda c: K.delete_records(c, 2, {name: [(0, 3)]}))
    assert a[(name, 0)] == (3, 0), a
    p = fetch_answer(both, name, 2)
    assert (p["error_code"], p["log_start_offset"]) == (K.OFFSET_OUT_OF_RANGE, -1), p
    none = fresh("nofetch")
    a = same(both, lambda c: F.fetch(c, none, 0, 0))
    assert a["responses"][0]["partitions"][0]["error_code"] in (K.UNKNOWN_TOPIC_OR_PARTITION, 100), a


def test_delete_records_errors(both):
    name = create(both, fresh("dr"))
    produce(both, name, [K.encode_batch(records(4))])
    a = same(both, lambda c: K.delete_records(c, 2, {name: [(0, 5)]}))
    assert a[(name, 0)][1] == K.OFFSET_OUT_OF_RANGE, a
    a = same(both, lambda c: K.delete_records(c, 2, {name: [(3, 1)]}))
    assert a[(name, 3)][1] == K.UNKNOWN_TOPIC_OR_PARTITION, a
    a = same(both, lambda c: K.delete_records(c, 2, {name: [(0, -1)]}))
    assert a[(name, 0)] == (4, 0), a


def offsets_answer(both, topic, timestamps):
    """One request per (partition, timestamp): [(error, timestamp, offset)]."""
    out = []
    for ts in timestamps:
        a = same(both, lambda c: F.list_offsets(c, topic, [ts]), "ListOffsets %s %r" % (topic, ts))
        out.extend((p["error_code"], p["timestamp"], p["offset"]) for p in a["topics"][0]["partitions"])
    return out


def test_list_offsets_same_partition_twice(both):
    name = create(both, fresh("l2"))
    a = same(both, lambda c: F.list_offsets(c, name, [(0, -1), (0, -2)]))
    assert [p["error_code"] for p in a["topics"][0]["partitions"]] == [K.INVALID_REQUEST], a


SPECIAL = [(0, -1), (0, -2), (0, -3), (0, -4)]


def test_list_offsets_empty_topic(both):
    name = create(both, fresh("lo"))
    offsets_answer(both, name, SPECIAL + [(0, 0), (0, 1_700_000_000_000)])


def test_list_offsets_timestamps(both):
    name = create(both, fresh("lt"))
    ts = [(1000, b"a", b"1", []), (3000, b"b", b"2", []), (2000, b"c", b"3", [])]
    produce(both, name, [K.encode_batch(ts), K.encode_batch([(2500, b"d", b"4", [])])])
    got = offsets_answer(both, name, SPECIAL + [(0, 0), (0, 1000), (0, 1500), (0, 2999), (0, 3000), (0, 3001)])
    assert got[2] == (0, 3000, 1), got  # max timestamp: the record that has it
    assert got[-1] == (0, -1, -1), got  # nothing at or after 3001


def test_list_offsets_after_delete_records_and_unknowns(both):
    name = create(both, fresh("ld"), partitions=2)
    produce(both, name, [K.encode_batch(records(6))])
    same(both, lambda c: K.delete_records(c, 2, {name: [(0, 4)]}))
    got = offsets_answer(both, name, SPECIAL + [(0, 0), (1, -1), (2, -1), (0, -7)])
    assert got[1] == (0, -1, 4), got
    offsets_answer(both, fresh("lu"), [(0, -1)])


# -- Configs ---------------------------------------------------------------------------------


def describe(both, name, version=4, keys=None, synonyms=True, documentation=False):
    a = same(both, lambda c: K.describe_configs(c, version, [(K.RESOURCE_TOPIC, name, keys)], synonyms,
                                                documentation), "DescribeConfigs v%d %s" % (version, name))
    return {c["name"]: c for c in a[0]["configs"] or []}, a[0]


def by_name(answer):
    """DescribeConfigs entries keyed by name, each broker's in its own order."""
    out = dict(answer)
    out["configs"] = {c["name"]: c for c in answer["configs"] or []}
    return out


def configs_same(k, s, what):
    """Compares one resource's DescribeConfigs answers, the deliberate differences set aside."""
    k, s = by_name(k), by_name(s)
    set_aside_deliberate(k["configs"], s["configs"])
    return assert_same(k, s, what)


def test_describe_configs_of_a_topic(both):
    name = create(both, fresh("dc"), configs={"retention.ms": "86400000", "cleanup.policy": "compact,delete"})
    for version, documentation in ((4, True), (3, False), (1, False), (2, False)):
        k, s = ask(both, lambda c: K.describe_configs(c, version, [(K.RESOURCE_TOPIC, name, None)], True,
                                                      documentation))
        a = configs_same(k[0], s[0], "DescribeConfigs v%d" % version)
    assert a["configs"]["retention.ms"]["source"] == K.SOURCE_TOPIC_CONFIG
    k, s = ask(both, lambda c: K.describe_configs(c, 4, [(K.RESOURCE_TOPIC, name, ["retention.ms", "nope"])]))
    configs_same(k[0], s[0], "DescribeConfigs with keys")
    none = fresh("nodc")
    a = same(both, lambda c: K.describe_configs(c, 4, [(K.RESOURCE_TOPIC, none, None)]))
    assert a[0]["error"] == K.UNKNOWN_TOPIC_OR_PARTITION, a


def incremental(both, name, ops, validate_only=False):
    a = same(both, lambda c: K.incremental_alter_configs(c, 1, [(K.RESOURCE_TOPIC, name, ops)], validate_only),
             "IncrementalAlterConfigs %r" % (ops,))
    return a[0]["error"]


def config_value(both, name, key, settle=10.0):
    """The config's value once both brokers describe it alike: Kafka applies a change
    through its metadata log, so its DescribeConfigs may show the old value for a moment."""
    deadline = time.monotonic() + settle
    while True:
        k, s = ask(both, lambda c: K.describe_configs(c, 4, [(K.RESOURCE_TOPIC, name, [key])], True))
        try:
            configs_same(k[0], s[0], "%s after the change" % key)
            return by_name(k[0])["configs"][key]["value"]
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_broker_config_changes(both):
    """IncrementalAlterConfigs and AlterConfigs on the BROKER resource "" (the cluster-wide
    default; the brokers' ids differ), validate_only so that Kafka's defaults stay: a
    dynamic setting, settings read at start, a bad value, a name neither knows, a list
    APPEND."""
    ops = [("log.retention.ms", K.OP_SET, "60000"), ("log.dirs", K.OP_SET, "/elsewhere"),
           ("num.partitions", K.OP_SET, "3"), ("log.retention.ms", K.OP_SET, "soon"),
           ("no.such.setting", K.OP_SET, "1"), ("log.cleanup.policy", K.OP_APPEND, "compact")]
    errors = []
    for op in ops:
        a = same(both, lambda c: K.incremental_alter_configs(c, 1, [(K.RESOURCE_BROKER, "", [op])], True),
                 "IncrementalAlterConfigs of broker '' %r" % (op,))
        errors.append(a[0]["error"])
    assert errors == [K.NONE, K.INVALID_REQUEST, K.INVALID_REQUEST, K.INVALID_REQUEST, K.NONE, K.NONE], errors
    # AlterConfigs replaces the level's whole set: Kafka's keeps the min.insync.replicas its
    # formatting set (removing it is refused while ELR is on).
    for configs in ([("min.insync.replicas", "1"), ("log.retention.bytes", "1048576")],
                    [("min.insync.replicas", "1"), ("log.dirs", "/elsewhere")]):
        same(both, lambda c: K.alter_configs(c, 2, [(K.RESOURCE_BROKER, "", configs)], True),
             "AlterConfigs of broker '' %r" % (configs,))


def test_incremental_alter_configs_list_configs(both):
    name = create(both, fresh("ia"))
    policy = "cleanup.policy"
    assert incremental(both, name, [(policy, K.OP_APPEND, "compact")]) == 0
    assert config_value(both, name, policy) == "delete,compact"
    assert incremental(both, name, [(policy, K.OP_APPEND, "compact")]) == 0
    assert config_value(both, name, policy) == "delete,compact"
    assert incremental(both, name, [(policy, K.OP_SUBTRACT, "delete")]) == 0
    assert config_value(both, name, policy) == "compact"
    assert incremental(both, name, [(policy, K.OP_SUBTRACT, "compact")], validate_only=True) is not None
    config_value(both, name, policy)
    assert incremental(both, name, [(policy, K.OP_DELETE, None)]) == 0
    assert config_value(both, name, policy) == "delete"
    throttled = "leader.replication.throttled.replicas"
    assert incremental(both, name, [(throttled, K.OP_APPEND, "0:1")]) == 0
    assert incremental(both, name, [(throttled, K.OP_APPEND, "1:1")]) == 0
    config_value(both, name, throttled)
    incremental(both, name, [(throttled, K.OP_SUBTRACT, "0:1")])
    config_value(both, name, throttled)


@pytest.mark.parametrize("ops", [
    [("retention.ms", K.OP_APPEND, "5")],
    [("retention.ms", K.OP_SUBTRACT, "5")],
    [("no.such.config", K.OP_SET, "1")],
    [("retention.ms", K.OP_SET, "abc")],
    [("cleanup.policy", K.OP_APPEND, "bogus")],
    [("retention.ms", K.OP_SET, "1"), ("retention.ms", K.OP_SET, "2")],
    [("retention.ms", K.OP_SET, None)],
], ids=lambda o: "-".join("%s:%d" % (x[0], x[1]) for x in o))
def test_incremental_alter_configs_refusals(both, ops):
    name = create(both, fresh("iar"))
    assert incremental(both, name, ops) != 0
    config_value(both, name, "retention.ms")


def test_alter_configs_errors(both):
    none = fresh("noalter")
    a = same(both, lambda c: K.alter_configs(c, 2, [(K.RESOURCE_TOPIC, none, [("retention.ms", "1")])]))
    assert a[0]["error"] == K.UNKNOWN_TOPIC_OR_PARTITION, a
    name = create(both, fresh("ac"))
    a = same(both, lambda c: K.alter_configs(c, 2, [(K.RESOURCE_TOPIC, name, [("retention.ms", "x")])]))
    assert a[0]["error"] == K.INVALID_CONFIG, a


# -- Versions ------------------------------------------------------------------------------


def test_api_versions_unsupported_version(both):
    def ask_v99(conn):
        r = conn.roundtrip(K.API_VERSIONS, 99, b"", header_version=2)
        err = r.i16()
        keys = r.array(lambda x: (x.i16(), x.i16(), x.i16()))
        return dict(error=err, has_api_versions=any(k[0] == K.API_VERSIONS for k in keys), rest=r.remaining())
    a = same(both, ask_v99)
    assert a["error"] == K.UNSUPPORTED_VERSION and a["has_api_versions"], a


def test_metadata_unsupported_version(both):
    """A version above every broker's: Kafka closes the connection; Sluice answers the
    error code alone and keeps the connection (a deliberate difference)."""
    def ask_v99(conn):
        conn.send_request(K.METADATA, 99, K.i32(-1), header_version=2)
        try:
            r = conn.recv_response(1, header_version=1, timeout=10)
            return dict(closed=False, error=r.i16(), rest=r.remaining())
        except (K.ConnectionClosed, ConnectionResetError):
            return dict(closed=True)
    k, s = ask(both, ask_v99)
    assert k == dict(closed=True) and s == dict(closed=False, error=K.UNSUPPORTED_VERSION, rest=0), (k, s)


# -- Groups ------------------------------------------------------------------------------------

SUBSCRIPTION = [("range", K.consumer_subscription_v0([]))]


def join(conn, group, member_id="", session_timeout_ms=10000, version=9):
    return K.join_group(conn, version, group, member_id, "consumer", SUBSCRIPTION,
                        session_timeout_ms=session_timeout_ms, timeout=30)


def test_join_group_refusals(both):
    a = same(both, lambda c: join(c, ""))
    assert a["error"] == K.INVALID_GROUP_ID, a
    a = same(both, lambda c: join(c, fresh("g"), session_timeout_ms=1))
    assert a["error"] == K.INVALID_SESSION_TIMEOUT, a
    a = same(both, lambda c: join(c, fresh("g"), session_timeout_ms=3_600_001))
    assert a["error"] == K.INVALID_SESSION_TIMEOUT, a
    a = same(both, lambda c: join(c, fresh("g")))
    assert a["error"] == K.MEMBER_ID_REQUIRED and a["member_id"] == "<member>", a


def one_member_group(conn, group):
    """Joins, syncs and heartbeats as the only member: every answer, and the member."""
    first = join(conn, group)
    second = join(conn, group, first["member_id"])
    me, gen = second["member_id"], second["generation"]
    sync = K.sync_group(conn, 5, group, gen, me, [(me, b"assignment")], protocol_type="consumer",
                        protocol_name="range", timeout=30)
    answers = dict(first=first, second=second, sync=sync, leader_is_me=second["leader"] == me,
                   heartbeat=K.heartbeat(conn, 4, group, gen, me),
                   heartbeat_old_generation=K.heartbeat(conn, 4, group, gen + 1, me),
                   heartbeat_unknown_member=K.heartbeat(conn, 4, group, gen, "nobody"),
                   sync_unknown_member=K.sync_group(conn, 5, group, gen, "nobody", [], protocol_type="consumer",
                                                    protocol_name="range", timeout=30),
                   sync_without_protocol=K.sync_group(conn, 5, group, gen, me, [], timeout=30),
                   delete_while_member=K.delete_groups(conn, 2, [group]))
    return answers, me, gen


def test_group_lifecycle(both):
    group = fresh("grp")

    def run(conn):
        answers, me, gen = one_member_group(conn, group)
        answers["leave"] = K.leave_group(conn, 5, group, [(me, None)])
        answers["leave_again"] = K.leave_group(conn, 5, group, [(me, None)])
        answers["describe_empty"] = K.describe_groups(conn, 5, [group])
        answers["delete_empty"] = K.delete_groups(conn, 2, [group])
        answers["describe_deleted"] = K.describe_groups(conn, 5, [group])
        return answers
    a = same(both, run)
    assert a["second"]["error"] == 0 and a["leader_is_me"] and a["sync"]["error"] == 0, a
    assert a["heartbeat_old_generation"] == K.ILLEGAL_GENERATION, a


def test_unknown_group(both):
    group = fresh("nog")

    def run(conn):
        return dict(heartbeat=K.heartbeat(conn, 4, group, 1, "m"),
                    sync=K.sync_group(conn, 5, group, 1, "m", [], protocol_type="consumer", protocol_name="range",
                                      timeout=30),
                    sync_without_protocol=K.sync_group(conn, 5, group, 1, "m", [], timeout=30),
                    leave=K.leave_group(conn, 5, group, [("m", None)]),
                    describe=K.describe_groups(conn, 5, [group]),
                    delete=K.delete_groups(conn, 2, [group]),
                    offset_delete=K.offset_delete(conn, group, {"t": [0]}),
                    fetch=K.offset_fetch_one(conn, 8, group, None),
                    fetch_topic=K.offset_fetch_one(conn, 8, group, {"t": [0]}))
    a = same(both, run)
    assert a["describe"][0]["state"] == "Dead", a


def test_offset_commit_errors_and_fetch(both):
    name = create(both, fresh("oc"), partitions=2)
    group = fresh("ocg")
    unknown = fresh("oct")

    def run(conn):
        commit = lambda offsets, **kw: K.offset_commit(conn, 8, group, offsets, timeout=30, **kw)
        return dict(
            ok=commit({name: [(0, 5, "meta"), (1, 7, None)]}),
            unknown_topic=commit({unknown: [(0, 1, None)]}),
            unknown_partition=commit({name: [(9, 1, None)]}),
            too_large=commit({name: [(0, 6, "x" * 4097)]}),
            member_of_nothing=commit({name: [(0, 6, None)]}, generation=3, member_id="m"),
            fetched=K.offset_fetch_one(conn, 8, group, {name: [0, 1, 2]}),
            fetched_all=K.offset_fetch_one(conn, 8, group, None),
            delete=K.offset_delete(conn, group, {name: [0]}),
            after_delete=K.offset_fetch_one(conn, 8, group, {name: [0, 1]}))
    a = same(both, run)
    assert a["fetched"][1][(name, 0)] == (5, "meta", 0), a
    assert set(a["unknown_topic"].values()) == {K.UNKNOWN_TOPIC_OR_PARTITION}, a
    assert set(a["too_large"].values()) == {K.OFFSET_METADATA_TOO_LARGE}, a


def test_incremental_alter_configs_unknown_operation(both):
    """Deliberate difference: Kafka answers an unknown operation with UNKNOWN_SERVER_ERROR
    (-1); Sluice with INVALID_REQUEST, naming the operation."""
    name = create(both, fresh("iop"))
    k, s = ask(both, lambda c: K.incremental_alter_configs(c, 1, [(K.RESOURCE_TOPIC, name, [("retention.ms", 9, "1")])]))
    assert (k[0]["error"], s[0]["error"]) == (-1, K.INVALID_REQUEST), (k, s)
    assert s[0]["error_message"], s
    config_value(both, name, "retention.ms")


def test_produce_timestamps(both):
    """message.timestamp.after.max.ms (one hour by default in Kafka 4) bounds CreateTime
    record timestamps; -1 and timestamps far in the past pass; a LogAppendTime batch on a
    CreateTime topic is taken."""
    name = create(both, fresh("ts"))
    now = int(time.time() * 1000)
    hour = 3600 * 1000
    p = produce_answer(both, name, K.encode_batch([(now, b"a", b"1", []), (now + 2 * hour, b"b", b"2", [])]))
    assert p["error_code"] == 32 and [e["batch_index"] for e in p["record_errors"]] == [1], p
    for recs, kw in (([(now + hour - 60_000, b"a", b"1", [])], {}), ([(-1, b"a", b"1", [])] * 2, {}),
                     ([(5, b"a", b"1", [])], {}), ([(now, b"a", b"1", [])], dict(timestamp_type=1))):
        p = produce_answer(both, name, K.encode_batch(recs, **kw))
        assert p["error_code"] == 0, p
    later = create(both, fresh("ts2"), configs={"message.timestamp.after.max.ms": str(3 * hour),
                                               "message.timestamp.before.max.ms": str(hour)})
    p = produce_answer(both, later, K.encode_batch([(now + 2 * hour, b"a", b"1", [])]))
    assert p["error_code"] == 0, p
    p = produce_answer(both, later, K.encode_batch([(now - 2 * hour, b"a", b"1", [])]))
    assert p["error_code"] == 32, p
    lat = create(both, fresh("ts3"), configs={"message.timestamp.type": "LogAppendTime"})
    p = produce_answer(both, lat, K.encode_batch([(now + 2 * hour, b"a", b"1", [])]))
    assert p["error_code"] == 0, p


def test_deliberate_differences_of_the_table(both):
    """docs/compatibility.md's table: replication factor 2 on one broker, and the API
    versions Kafka 4 dropped."""
    k, s = ask(both, lambda c: F.create_topics(c, [dict(name="diff-rf2-%d" % os.getpid(), replication_factor=2)],
                                               validate_only=True))
    assert (k["topics"][0]["error_code"], s["topics"][0]["error_code"]) == (38, 0), (k, s)
    k, s = ask(both, lambda c: K.find_coordinator(c, 4, ["diff-tx"], key_type=1))
    assert k[0]["error"] in (0, 15) and s[0]["error"] == 0, (k, s)  # both coordinate transactions
    k, s = ask(both, lambda c: K.api_versions_v0(c)[1])
    assert k[K.FETCH][0] == 4 and s[K.FETCH][0] == 0, (k[K.FETCH], s[K.FETCH])
    assert k[K.LIST_OFFSETS][0] == 1 and s[K.LIST_OFFSETS][0] == 0, (k[K.LIST_OFFSETS], s[K.LIST_OFFSETS])


def test_idempotent_producer_sequences(both):
    """InitProducerId, then idempotent batches through each branch of the sequence check."""
    name = create(both, fresh("idem"))

    def run(conn):
        # Kafka's producer id manager starts with its first request (COORDINATOR_LOAD_IN_PROGRESS).
        init = wait_until(lambda: (lambda r: r if r["error_code"] != 14 else None)(F.init_producer_id(conn)),
                          "a producer id", timeout=60)
        pid, epoch = init["producer_id"], init["producer_epoch"]

        def send(seq, n=1, ep=epoch, p=pid):
            batch = K.encode_batch(records(n), producer_id=p, producer_epoch=ep, base_sequence=seq)
            return F.produce(conn, name, 0, batch)["responses"][0]["partition_responses"][0]
        out = dict(init=init, first=send(0, 2), retry=send(0, 2), next=send(2), gap=send(5), overlap=send(1),
                   stranger_at_0=send(0, p=pid + 1000), stranger_at_3=send(3, p=pid + 2000))
        bumped = F.init_producer_id(conn, pid, epoch)
        out.update(bumped=bumped, same_id=bumped["producer_id"] == pid,
                   new_epoch_not_at_0=send(4, ep=bumped["producer_epoch"]),
                   new_epoch_at_0=send(0, ep=bumped["producer_epoch"]), stale_epoch=send(3, ep=epoch))
        return out
    k, s = ask(both, run)
    # Deliberate difference: Kafka answers a duplicate with the first batch's max timestamp
    # as its log_append_time, even on a CreateTime topic; Sluice with -1, as any CreateTime append.
    assert (k["retry"].pop("log_append_time_ms") > 0, s["retry"].pop("log_append_time_ms")) == (True, -1), (k, s)
    a = assert_same(k, s, "idempotent produce")
    assert a["first"]["error_code"] == 0 and a["retry"]["base_offset"] == a["first"]["base_offset"], a
    assert a["gap"]["error_code"] == 45 and not a["same_id"], a  # OUT_OF_ORDER_SEQUENCE_NUMBER


def test_group_with_a_subscription(both):
    """A consumer group subscribed to a topic: DescribeGroups of the stable group, its
    committed offsets, and OffsetDelete of the subscribed topic refused per partition."""
    name = create(both, fresh("sub"), partitions=2)
    group = fresh("subg")
    subscription = [("range", K.consumer_subscription_v0([name]))]

    def run(conn):
        first = K.join_group(conn, 9, group, "", "consumer", subscription, timeout=30)
        joined = K.join_group(conn, 9, group, first["member_id"], "consumer", subscription, timeout=30)
        me, gen = joined["member_id"], joined["generation"]
        assignment = K.consumer_assignment_v0({name: [0, 1]})
        sync = K.sync_group(conn, 5, group, gen, me, [(me, assignment)], protocol_type="consumer",
                            protocol_name="range", timeout=30)
        commit = K.offset_commit(conn, 8, group, {name: [(0, 1, None)]}, generation=gen, member_id=me, timeout=30)
        out = dict(joined=joined, sync=sync, commit=commit, describe=K.describe_groups(conn, 5, [group]),
                   offset_delete=K.offset_delete(conn, group, {name: [0, 1]}),
                   fetched=K.offset_fetch_one(conn, 8, group, {name: [0, 1]}))
        K.leave_group(conn, 5, group, [(me, None)])
        out["offset_delete_after_leave"] = K.offset_delete(conn, group, {name: [0]})
        return out
    a = same(both, run)
    assert a["offset_delete"][1] == {(name, 0): 86, (name, 1): 86}, a  # GROUP_SUBSCRIBED_TO_TOPIC
    assert a["describe"][0]["state"] == "Stable" and a["sync"]["assignment"], a


def test_describe_cluster(both):
    a = same(both, K.describe_cluster_v0)
    assert a["error"] == 0 and len(a["brokers"]) == 1 and a["controller_id"] == "<broker>", a


# -- Fetch sessions (KIP-227) --------------------------------------------------------------


def session_steps(conn, name):
    """One consumer's fetch session, step by step on one connection; the answers with each
    session id reduced to whether there is one and the records to (offset, value)."""
    sid = 0

    def step(session_id, epoch, parts=(), forget=()):
        a = session_fetch(conn, session_id, epoch, [(name, p, o) for p, o in parts],
                          [(name, p) for p in forget])
        a["session_id"] = "<session>" if a["session_id"] else 0
        for t in a["responses"]:
            for p in t["partitions"]:
                p["records"] = [(r.offset, r.value) for r in K.decode_batches(p["records"] or b"")[0]]
        return a

    def new_session(parts):
        nonlocal sid
        a = session_fetch(conn, 0, 0, [(name, p, o) for p, o in parts])
        sid = a["session_id"]
        a["session_id"] = "<session>" if sid else 0
        return a

    def put(partition, value):
        F.produce(conn, name, partition, K.encode_batch([(1_700_000_000_000, None, value, [])]))

    put(0, b"a")
    out = [new_session([(0, 0), (1, 0), (2, 0)])]
    out.append(step(sid, 1, [(0, 1)]))             # nothing changed: no partitions
    put(1, b"b")
    out.append(step(sid, 2))                       # only partition 1, from the session's offset
    out.append(step(sid, 3, [(1, 1)], forget=[2]))
    out.append(step(sid, 3))                       # INVALID_FETCH_SESSION_EPOCH
    out.append(step(sid ^ 0x5A5A5A, 4))            # FETCH_SESSION_ID_NOT_FOUND
    out.append(step(sid, 4))                       # the errors changed nothing
    out.append(step(sid, -1, [(0, 0)]))            # closes; answered without a session
    out.append(step(sid, 5))
    return out


def test_fetch_session(both):
    name = create(both, fresh("fs"), partitions=3)
    a = same(both, lambda c: session_steps(c, name), "a fetch session")
    assert [x["error_code"] for x in a] == [0, 0, 0, 0, 71, 70, 0, 0, 70], a
    assert [x["session_id"] for x in a] == ["<session>"] * 4 + [0, 0, "<session>", 0, 0], a
    assert [len(x["responses"]) for x in a] == [1, 0, 1, 0, 0, 0, 0, 1, 0], a
