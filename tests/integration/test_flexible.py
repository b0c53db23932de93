"""The flexible (compact, tagged) versions that librdkafka 2.0, kafka-python and
kafkajs do not send: Metadata v12 with topic ids, Produce v9 and Fetch v13 addressed
by topic id, ListOffsets v8 by timestamp, written by hand from Kafka's schemas."""

import kproto as K
from test_cli import sluice_ok

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
T = K.EMPTY_TAGS


def carray(items, enc):
    return K.uvarint(len(items) + 1) + b"".join(enc(x) for x in items)


def cbytes(b):
    return K.uvarint(len(b) + 1) + b


def call(conn, key, version, body):
    return conn.roundtrip(key, version, body, header_version=2, response_header_version=1)


def metadata_v12(conn, name):
    body = carray([name], lambda n: b"\x00" * 16 + K.compact_string(n) + T)
    body += K.i8(0) + K.i8(0) + T  # allow auto-create false, no authorized operations
    r = call(conn, METADATA, 12, body)
    r.i32()  # throttle
    r.compact_array(lambda x: (x.i32(), x.compact_string(), x.i32(), x.compact_string(), x.tagged_fields()))
    r.compact_string()  # cluster id
    r.i32()  # controller

    def part(x):
        d = dict(error=x.i16(), index=x.i32(), leader=x.i32(), epoch=x.i32(),
                 replicas=x.compact_array(lambda y: y.i32()), isr=x.compact_array(lambda y: y.i32()),
                 offline=x.compact_array(lambda y: y.i32()))
        x.tagged_fields()
        return d

    def topic(x):
        d = dict(error=x.i16(), name=x.compact_string(), id=x.take(16), internal=x.boolean(),
                 partitions=x.compact_array(part), ops=x.i32())
        x.tagged_fields()
        return d

    topics = r.compact_array(topic)
    r.tagged_fields()
    return topics


def produce_v9(conn, name, partition, batch):
    body = K.compact_string(None) + K.i16(-1) + K.i32(10000)
    body += carray([name], lambda n: K.compact_string(n) + carray(
        [partition], lambda p: K.i32(p) + cbytes(batch) + T) + T) + T
    r = call(conn, PRODUCE, 9, body)

    def part(x):
        d = dict(index=x.i32(), error=x.i16(), base_offset=x.i64(), append_time=x.i64(),
                 log_start=x.i64(), record_errors=x.compact_array(lambda y: (y.i32(), y.compact_string(), y.tagged_fields())),
                 message=x.compact_string())
        x.tagged_fields()
        return d

    topics = r.compact_array(lambda x: (x.compact_string(), x.compact_array(part), x.tagged_fields()))
    return topics[0][1][0]


def fetch_v13(conn, topic_id, partition, offset):
    body = K.i32(-1) + K.i32(500) + K.i32(1) + K.i32(1 << 20) + K.i8(0) + K.i32(0) + K.i32(-1)
    body += carray([topic_id], lambda tid: tid + carray(
        [partition], lambda p: K.i32(p) + K.i32(-1) + K.i64(offset) + K.i32(-1) + K.i64(-1)
        + K.i32(1 << 20) + T) + T)
    body += carray([], None) + K.compact_string("") + T
    r = call(conn, FETCH, 13, body)
    r.i32()
    assert r.i16() == 0
    r.i32()

    def part(x):
        d = dict(index=x.i32(), error=x.i16(), hw=x.i64(), lso=x.i64(), log_start=x.i64(),
                 aborted=x.compact_array(lambda y: (y.i64(), y.i64(), y.tagged_fields())),
                 preferred=x.i32())
        n = x.uvarint()
        d["records"] = x.take(n - 1) if n else None
        x.tagged_fields()
        return d

    topics = r.compact_array(lambda x: (x.take(16), x.compact_array(part), x.tagged_fields()))
    r.tagged_fields()
    return topics


def list_offsets_v8(conn, name, partition, ts):
    body = K.i32(-1) + K.i8(0) + carray([name], lambda n: K.compact_string(n) + carray(
        [partition], lambda p: K.i32(p) + K.i32(-1) + K.i64(ts) + T) + T) + T
    r = call(conn, LIST_OFFSETS, 8, body)
    r.i32()

    def part(x):
        d = dict(index=x.i32(), error=x.i16(), timestamp=x.i64(), offset=x.i64(), epoch=x.i32())
        x.tagged_fields()
        return d

    topics = r.compact_array(lambda x: (x.compact_string(), x.compact_array(part), x.tagged_fields()))
    return topics[0][1][0]


def test_flexible_versions_end_to_end(broker, topic_name):
    sluice_ok(["topic", "create", topic_name, "--partitions", "2", "--bootstrap", broker.bootstrap])
    with K.Conn(broker.bootstrap) as conn:
        topics = metadata_v12(conn, topic_name)
        assert len(topics) == 1 and topics[0]["error"] == 0 and topics[0]["name"] == topic_name
        topic_id = topics[0]["id"]
        assert topic_id != b"\x00" * 16
        assert [p["index"] for p in topics[0]["partitions"]] == [0, 1]

        batch = K.encode_batch([(1000, b"a", b"one", [("h", b"1")]), (2000, b"b", b"two", [])])
        res = produce_v9(conn, topic_name, 1, batch)
        assert res["error"] == 0 and res["base_offset"] == 0, res
        batch2 = K.encode_batch([(3000, b"c", b"three", [])])
        assert produce_v9(conn, topic_name, 1, batch2)["base_offset"] == 2

        got = fetch_v13(conn, topic_id, 1, 0)
        assert got[0][0] == topic_id
        p = got[0][1][0]
        assert p["error"] == 0 and p["hw"] == 3
        recs, _ = K.decode_batches(p["records"])
        assert [(r.offset, r.key, r.value, r.timestamp) for r in recs] == [
            (0, b"a", b"one", 1000), (1, b"b", b"two", 2000), (2, b"c", b"three", 3000)]
        assert recs[0].headers == [("h", b"1")]

        # An unknown topic id answers UNKNOWN_TOPIC_ID.
        unknown = fetch_v13(conn, b"\x07" * 16, 0, 0)
        assert unknown[0][1][0]["error"] == 100

        at = list_offsets_v8(conn, topic_name, 1, 1500)
        assert (at["error"], at["offset"], at["timestamp"]) == (0, 1, 2000)
        latest = list_offsets_v8(conn, topic_name, 1, -1)
        assert latest["offset"] == 3
        newest = list_offsets_v8(conn, topic_name, 1, -3)  # max timestamp
        assert (newest["offset"], newest["timestamp"]) == (2, 3000)
        none = list_offsets_v8(conn, topic_name, 1, 99999)
        assert (none["offset"], none["timestamp"]) == (-1, -1)


def api_versions_flexible(conn, version):
    """ApiVersions v3+ (request header v2, compact body); its answer keeps header v0."""
    body = K.compact_string("sluice-it") + K.compact_string("1.0") + T
    r = conn.roundtrip(K.API_VERSIONS, version, body, header_version=2, response_header_version=0)
    err = r.i16()
    apis = {}
    for key, lo, hi in r.compact_array(lambda x: (x.i16(), x.i16(), x.i16(), x.tagged_fields())[:3]):
        apis[key] = (lo, hi)
    r.i32()  # throttle
    r.tagged_fields()
    return err, apis


def test_api_versions_v3_and_v4(broker):
    # Kafka 3.9+ clients (the Java client 4.x, kafka-python 3) open with v4: it has v3's
    # layout and must be answered as itself, not with UNSUPPORTED_VERSION and a retry.
    with K.Conn(broker.bootstrap) as conn:
        for version in (3, 4):
            err, apis = api_versions_flexible(conn, version)
            assert err == 0, version
            assert apis[K.API_VERSIONS] == (0, 4)
            assert apis[METADATA][1] >= 12 and apis[PRODUCE][1] >= 9
    with open(broker.stderr_paths[-1]) as f:
        assert "is not supported" not in f.read()
