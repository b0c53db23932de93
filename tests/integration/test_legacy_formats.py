"""Message formats v0/v1 (Kafka before 0.11): Produce v0-v2 message sets are stored as v2
batches (offsets assigned, v0 timestamps -1, a compressed wrapper's messages one batch of
its codec), and Fetch v0-v3 serves the batches down-converted (v0-v1: magic 0, v2-v3:
magic 1, headers dropped).  Raw requests through kproto, and kafka-python 2.0.2 pinned
to api_version (0, 10) and (0, 9), which speak only those formats."""

import struct
import time
import zlib

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

import kproto as K
import sluice_helpers as H


def message(magic, key, value, timestamp=-1, attributes=0, offset=0):
    body = K.i8(magic) + K.i8(attributes)
    if magic == 1:
        body += K.i64(timestamp)
    body += K.kbytes(key) + K.kbytes(value)
    crc = zlib.crc32(body) & 0xFFFFFFFF
    return K.i64(offset) + K.i32(4 + len(body)) + K.u32(crc) + body


def wrapper(magic, codec, inner_messages, timestamp=-1):
    inner = b"".join(message(magic, k, v, ts, offset=i) for i, (k, v, ts) in enumerate(inner_messages))
    return message(magic, None, K.compress(codec, inner), timestamp, attributes=codec,
                   offset=len(inner_messages) - 1)


def produce_legacy(conn, version, topic, message_set, partition=0, acks=-1):
    body = (K.i16(acks) + K.i32(10000) + K.i32(1) + K.string(topic) + K.i32(1) + K.i32(partition)
            + K.kbytes(message_set))
    r = conn.roundtrip(K.PRODUCE, version, body)

    def part(x):
        d = dict(partition=x.i32(), error=x.i16(), base_offset=x.i64())
        if version >= 2:
            d["log_append_time"] = x.i64()
        return d

    topics = r.array(lambda x: (x.string(), x.array(part)))
    if version >= 1:
        r.i32()  # throttle
    assert r.remaining() == 0
    return topics[0][1][0]


def fetch_legacy(conn, version, topic, offset, max_bytes=1 << 20, partition=0):
    body = K.i32(-1) + K.i32(100) + K.i32(0)
    if version >= 3:
        body += K.i32(max_bytes)
    body += K.i32(1) + K.string(topic) + K.i32(1) + K.i32(partition) + K.i64(offset) + K.i32(max_bytes)
    r = conn.roundtrip(K.FETCH, version, body)
    if version >= 1:
        r.i32()  # throttle
    topics = r.array(lambda x: (x.string(), x.array(
        lambda y: dict(partition=y.i32(), error=y.i16(), high_watermark=y.i64(), records=y.kbytes()))))
    assert r.remaining() == 0
    return topics[0][1][0]


def decode_messages(data):
    """(offset, magic, attributes, timestamp, key, value) of each complete message; a partial
    one at the end is allowed, as old consumers allow it."""
    out, pos = [], 0
    while len(data) - pos >= 12:
        offset, size = struct.unpack(">qi", data[pos:pos + 12])
        if pos + 12 + size > len(data):
            break
        r = K.Reader(data[pos + 12:pos + 12 + size])
        crc = r.u32()
        assert zlib.crc32(r.data[r.pos:]) & 0xFFFFFFFF == crc, "message CRC at offset %d" % offset
        magic, attrs = r.i8(), r.i8()
        ts = r.i64() if magic == 1 else None
        out.append((offset, magic, attrs, ts, r.kbytes(), r.kbytes()))
        pos += 12 + size
    return out


T0 = 1700000000000
SENT = [
    # (produce version, message set, [(key, value, timestamp stored)], codec stored)
    (0, b"".join(message(0, k, v) for k, v in [(b"a", b"v0-1"), (None, b"v0-2")]),
     [(b"a", b"v0-1", -1), (None, b"v0-2", -1)], 0),
    (1, b"".join(message(1, k, v, T0 + i) for i, (k, v) in enumerate([(b"b", b"v1-1"), (b"c", None)])),
     [(b"b", b"v1-1", T0), (b"c", None, T0 + 1)], 0),
    (2, wrapper(1, K.GZIP, [(b"g%d" % i, b"gzip-%d" % i, T0 + 10 + i) for i in range(3)], T0 + 12),
     [(b"g%d" % i, b"gzip-%d" % i, T0 + 10 + i) for i in range(3)], K.GZIP),
    (0, wrapper(0, K.SNAPPY, [(b"s%d" % i, b"snappy-%d" % i, -1) for i in range(2)]),
     [(b"s%d" % i, b"snappy-%d" % i, -1) for i in range(2)], K.SNAPPY),
]


def test_v0_v1_message_sets_are_stored_as_v2_and_served_in_every_fetch_version(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1)
    want = []
    with K.Conn(broker.bootstrap) as conn:
        for version, mset, recs, _ in SENT:
            p = produce_legacy(conn, version, topic_name, mset)
            assert p["error"] == K.NONE and p["base_offset"] == len(want), p
            if version >= 2:
                assert p["log_append_time"] == -1, p
            want += recs
        # Stored as v2 batches, one per message set, each with the codec it came with.
        got = K.fetch_v4(conn, topic_name, 0, 0)
        recs, batches = K.decode_batches(got["records"], allow_compressed=True)
        assert [(r.offset, r.key, r.value, r.timestamp) for r in recs] == [
            (i, k, v, ts) for i, (k, v, ts) in enumerate(want)]
        assert [(bt["base_offset"], bt["count"], bt["compression"]) for bt in batches] == [
            (0, 2, 0), (2, 2, 0), (4, 3, K.GZIP), (7, 2, K.SNAPPY)]
        for version, magic in [(0, 0), (1, 0), (2, 1), (3, 1)]:
            f = fetch_legacy(conn, version, topic_name, 0)
            assert f["error"] == K.NONE and f["high_watermark"] == len(want), f
            msgs = decode_messages(f["records"])
            assert [(m[0], m[1], m[4], m[5]) for m in msgs] == [
                (i, magic, k, v) for i, (k, v, _) in enumerate(want)], version
            assert all(m[2] == 0 for m in msgs), "down-converted messages are uncompressed"
            if magic == 1:
                assert [m[3] for m in msgs] == [ts for _, _, ts in want]
            # From an offset inside a batch: the messages from there on.
            f = fetch_legacy(conn, version, topic_name, 5)
            assert [m[0] for m in decode_messages(f["records"])] == list(range(5, len(want)))


def test_down_conversion_drops_headers_and_keeps_log_append_time(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1, config={"message.timestamp.type": "LogAppendTime"})
    with K.Conn(broker.bootstrap) as conn:
        batch = K.encode_batch([(T0, b"k", b"v", [("h", b"x")]), (T0 + 1, b"k2", b"v2", [])])
        p = K.produce_v3(conn, topic_name, 0, batch)
        assert p["error"] == K.NONE and p["log_append_time"] > T0, p
        msgs = decode_messages(fetch_legacy(conn, 3, topic_name, 0)["records"])
        assert [(m[0], m[1], m[2] & 0x8, m[3], m[4], m[5]) for m in msgs] == [
            (0, 1, 0x8, p["log_append_time"], b"k", b"v"), (1, 1, 0x8, p["log_append_time"], b"k2", b"v2")]
        msgs = decode_messages(fetch_legacy(conn, 0, topic_name, 0)["records"])
        assert [(m[0], m[1], m[2], m[4], m[5]) for m in msgs] == [(0, 0, 0, b"k", b"v"), (1, 0, 0, b"k2", b"v2")]


def test_fetch_v0_v2_limit_is_hard_and_v3_returns_the_first_batch_whole(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1)
    with K.Conn(broker.bootstrap) as conn:
        big = b"x" * 5000
        assert produce_legacy(conn, 1, topic_name, message(1, b"big", big, T0))["error"] == K.NONE
        assert produce_legacy(conn, 1, topic_name, message(1, b"small", b"s", T0))["error"] == K.NONE
        for version in (0, 1, 2):
            f = fetch_legacy(conn, version, topic_name, 0, max_bytes=1000)
            assert f["error"] == K.NONE and decode_messages(f["records"]) == [], version
        f = fetch_legacy(conn, 3, topic_name, 0, max_bytes=1000)
        assert [(m[0], m[4], m[5]) for m in decode_messages(f["records"])] == [(0, b"big", big)]


def test_bad_message_sets_are_refused_and_the_connection_goes_on(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1)
    good = message(1, b"k", b"v", T0)
    bad_crc = good[:12] + K.u32((struct.unpack(">I", good[12:16])[0] + 1) & 0xFFFFFFFF) + good[16:]
    zstd = message(1, None, K.compress(K.ZSTD, good), T0, attributes=K.ZSTD)
    with K.Conn(broker.bootstrap) as conn:
        assert produce_legacy(conn, 1, topic_name, bad_crc)["error"] == K.CORRUPT_MESSAGE
        assert produce_legacy(conn, 2, topic_name, good[:-3])["error"] == K.CORRUPT_MESSAGE
        assert produce_legacy(conn, 2, topic_name, zstd)["error"] == K.UNSUPPORTED_COMPRESSION_TYPE
        p = produce_legacy(conn, 1, topic_name, good)
        assert p["error"] == K.NONE and p["base_offset"] == 0
    assert "message set v1: " in H.tail(broker.stderr_paths[-1], 100000), "the reason is logged"


@pytest.mark.parametrize("api_version,magic", [((0, 10), 1), ((0, 9), 0)])
def test_kafka_python_old_api_versions_round_trip(broker, topic_name, api_version, magic):
    H.create_topic(broker.bootstrap, topic_name, 1)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=api_version, acks="all",
                      linger_ms=20, request_timeout_ms=30000)
    ts = H.now_ms() - 1000
    try:
        futs = [p.send(topic_name, key=b"k%d" % i, value=b"value-%d" % i, partition=0,
                       timestamp_ms=ts + i if magic == 1 else None) for i in range(20)]
        p.flush(timeout=30)
        meta = [f.get(timeout=30) for f in futs]
    finally:
        p.close(timeout=10)
    assert [m.offset for m in meta] == list(range(20))
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, api_version=api_version, group_id=None,
                      enable_auto_commit=False, consumer_timeout_ms=1000, request_timeout_ms=30000)
    try:
        tp = TopicPartition(topic_name, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        got, deadline = [], time.monotonic() + 30
        while len(got) < 20 and time.monotonic() < deadline:
            for msgs in c.poll(timeout_ms=500).values():
                got += [(m.offset, m.key, m.value, m.timestamp, m.timestamp_type) for m in msgs]
    finally:
        c.close()
    # Magic 0 has no timestamp (kafka-python: None), magic 1 the producer's, CreateTime (0).
    assert got == [(i, b"k%d" % i, b"value-%d" % i, ts + i if magic == 1 else None, 0 if magic == 1 else None)
                   for i in range(20)]
    # Stored as v2, read by a current client too.
    got = H.consume_all(broker.bootstrap, topic_name, {0: 20})
    assert [(r["offset"], r["key"], r["value"]) for r in got] == [(i, b"k%d" % i, b"value-%d" % i) for i in range(20)]
