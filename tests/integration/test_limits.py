"""Documented limits and errors, and raw-protocol robustness.

Each error case checks the documented error code and then that the same
producer / connection keeps working (a normal record is produced afterwards
and read back).
"""

import random
import socket
import struct
import time

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, KafkaException, Producer
from confluent_kafka.admin import NewTopic

import expansion_helpers as X
import kproto as K
import sluice_helpers as H
import sql_helpers as S

# The largest value one record can carry in a 1 MiB batch (61 bytes of batch header,
# the record's own framing, a 3-byte key): no separate per-record limit, as in Kafka.
NEAR_1MIB = 1048576 - 100


def consume_exactly(bootstrap, topic, expected_by_offset, partition=0):
    """Partition must hold exactly these records {offset: (key, value)}."""
    got = H.consume_all(bootstrap, topic, {partition: len(expected_by_offset)})
    assert {r["offset"]: (r["key"], r["value"]) for r in got} == expected_by_offset


def admin_error_code(adm, topics, **kw):
    fs = adm.create_topics(topics, request_timeout=15.0, operation_timeout=10.0, **kw)
    codes = {}
    for name, f in fs.items():
        try:
            f.result(timeout=30)
            codes[name] = 0
        except KafkaException as e:
            codes[name] = e.args[0].code()
    return codes


# --------------------------------------------------------------------------
# Produce limits through librdkafka
# --------------------------------------------------------------------------


def test_batch_over_max_message_bytes(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1, config={"max.message.bytes": "10000"})
    producer = Producer(H.producer_conf(broker.bootstrap, **{"message.max.bytes": 1000000}))
    d = H.produce_one(producer, topic_name, b"big", b"x" * 20000, partition=0)
    assert d.err is not None and d.err.code() == 10, "expected MESSAGE_TOO_LARGE (10), got %r" % (d.err,)
    # Same producer (same connection) still works, and the rejected batch left no trace.
    d = H.produce_one(producer, topic_name, b"small", b"y" * 500, partition=0)
    assert d.err is None and (d.partition, d.offset) == (0, 0), d
    consume_exactly(broker.bootstrap, topic_name, {0: (b"small", b"y" * 500)})


def big_json(i, size):
    head = b'{"id": %d, "pad": "' % i
    return head + b"p" * (size - len(head) - 2) + b'"}'


def test_records_near_1mib_everywhere(broker_factory, topic_name):
    """A record is bounded only by its batch (max.message.bytes, 1 MiB by default), as in
    Kafka: librdkafka produces values of almost 1 MiB, and Fetch, SQL, an expansion and
    compaction all handle them; a topic with max.message.bytes 4 MiB takes 3 MiB."""
    b = broker_factory(extra_args=S.SQL_ARGS + ["--log-cleaner-backoff-ms", "200"])
    H.create_topic(b.bootstrap, topic_name, 1, config={
        "cleanup.policy": "compact", "segment.ms": "1", "min.cleanable.dirty.ratio": "0.01"})
    X.create(b.http, topic_name, "big.rows", [{"name": "id", "type": "int64"}, {"name": "pad", "type": "string"}])
    producer = Producer(H.producer_conf(b.bootstrap, **{"message.max.bytes": 2000000, "linger.ms": 0}))
    values = [big_json(i, NEAR_1MIB) for i in range(3)]
    keys = [b"k%d" % (i % 2) for i in range(3)]  # k0 twice: compaction drops offset 0
    for i in range(3):
        d = H.produce_one(producer, topic_name, keys[i], values[i], partition=0)
        assert d.err is None and d.offset == i, d
        time.sleep(0.005)  # segment.ms=1: each record in a segment of its own
    d = H.produce_one(producer, topic_name, b"tail", b"t", partition=0)
    assert d.err is None and d.offset == 3, d
    # Fetch (raw, one partition at a time) returns the records whole.
    with K.Conn(b.bootstrap, timeout=30) as conn:
        p = K.fetch_v4(conn, topic_name, 0, 2)
        recs, _ = K.decode_batches(p["records"])
    assert [(r.offset, r.key, r.value) for r in recs if r.offset == 2] == [(2, keys[2], values[2])]
    # SQL reads the value and its length.
    rows = S.http_rows(b.http, 'SELECT "offset", length(value), CAST(value ->> \'$.id\' AS BIGINT) FROM %s '
                               'WHERE "offset" = 2' % S.topic_table(topic_name))
    assert rows == [[2, NEAR_1MIB, 2]], rows
    # And whole, over the PostgreSQL wire (psycopg2).
    conn = S.pg_connect(b.pg)
    try:
        got = S.pg_rows(conn, 'SELECT key, value FROM %s WHERE "offset" = 2' % S.topic_table(topic_name))
    finally:
        conn.close()
    assert [(bytes(k), bytes(v)) for k, v in got] == [(keys[2], values[2])]
    # The expansion has a row per big event, the whole string in its column.
    X.wait_caught_up(b.http, "big.rows")
    rows = S.http_rows(b.http, "SELECT _offset, id, length(pad) FROM big.rows ORDER BY _offset")
    pad = NEAR_1MIB - len(b'{"id": 0, "pad": "') - 2
    assert [r for r in rows if r[0] < 3] == [[0, 0, pad], [1, 1, pad], [2, 2, pad]], rows
    # Compaction: the superseded k0 goes, the big records that stay are intact.
    deadline = time.monotonic() + 30
    got = None
    while time.monotonic() < deadline:
        got = [(r["offset"], r["key"], r["value"]) for r in H.consume_all(b.bootstrap, topic_name, {0: 4})]
        if [o for o, _, _ in got] == [1, 2, 3]:
            break
        time.sleep(0.3)
    assert got == [(1, keys[1], values[1]), (2, keys[2], values[2]), (3, b"tail", b"t")], [
        (o, k, len(v or b"")) for o, k, v in got or []]

    # Larger where the topic allows more: 4 MiB batches take a 3 MiB record.
    big_topic = topic_name + "-4m"
    H.create_topic(b.bootstrap, big_topic, 1, config={"max.message.bytes": str(4 << 20)})
    big_producer = Producer(H.producer_conf(b.bootstrap, **{"message.max.bytes": 5 << 20}))
    three = big_json(7, 3 << 20)
    d = H.produce_one(big_producer, big_topic, b"three", three, partition=0)
    assert d.err is None and d.offset == 0, d
    got = H.consume_all(b.bootstrap, big_topic, {0: 1})
    assert [(r["key"], r["value"]) for r in got] == [(b"three", three)]
    assert S.http_rows(b.http, "SELECT length(value) FROM %s" % S.topic_table(big_topic)) == [[3 << 20]]
    # Over max.message.bytes it is the batch that is too large.
    d = H.produce_one(big_producer, big_topic, b"five", b"f" * (4 << 20), partition=0)
    assert d.err is not None and d.err.code() == 10, "expected MESSAGE_TOO_LARGE (10), got %r" % (d.err,)


def test_librdkafka_gzip_producer_compresses(broker, topic_name):
    """librdkafka 2.0.2 only compresses gzip/snappy/lz4 when the broker advertises Produce v0-v2
    (before Sluice did, it logged "Broker does not support compression type gzip: not
    compressing batch" and sent uncompressed): the stored batch is gzip and reads back."""
    H.create_topic(broker.bootstrap, topic_name, 1)
    gz = Producer(H.producer_conf(broker.bootstrap, **{"compression.type": "gzip"}))
    d = H.produce_one(gz, topic_name, b"gz", b"a" * 5000, partition=0)
    assert d.err is None and d.offset == 0, d
    consume_exactly(broker.bootstrap, topic_name, {0: (b"gz", b"a" * 5000)})
    with K.Conn(broker.bootstrap) as conn:
        p = K.fetch_v4(conn, topic_name, 0, 0)
        recs, batches = K.decode_batches(p["records"], allow_compressed=True)
        assert [(r.key, r.value) for r in recs] == [(b"gz", b"a" * 5000)]
        assert [bt["compression"] for bt in batches] == [K.GZIP], batches


def test_produce_to_unknown_topic_librdkafka(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1)
    producer = Producer(H.producer_conf(broker.bootstrap, **{
        "topic.metadata.propagation.max.ms": 1000, "message.timeout.ms": 15000}))
    missing = topic_name + "-missing"
    d = H.produce_one(producer, missing, b"k", b"v", timeout=30)
    # librdkafka reports the broker's UNKNOWN_TOPIC_OR_PARTITION (3) or its local equivalent (-188).
    assert d.err is not None and d.err.code() in (3, -188), "got %r" % (d.err,)
    d = H.produce_one(producer, topic_name, b"k2", b"v2", partition=0)
    assert d.err is None and d.offset == 0, d
    consume_exactly(broker.bootstrap, topic_name, {0: (b"k2", b"v2")})
    assert missing not in H.list_topic_names(broker.bootstrap), "unknown topic was auto-created"


# --------------------------------------------------------------------------
# CreateTopics errors (librdkafka admin)
# --------------------------------------------------------------------------


def test_create_topics_errors(broker, topic_name):
    adm = H.admin_client(broker.bootstrap)
    H.create_topic(broker.bootstrap, topic_name, 2)

    assert admin_error_code(adm, [NewTopic(topic_name, 2, 1)]) == {topic_name: 36}, "TOPIC_ALREADY_EXISTS"
    bad_names = ["bad name!", "x" * 250, "..", "sl/ash"]
    codes = admin_error_code(adm, [NewTopic(n, 1, 1) for n in bad_names])
    assert codes == {n: 17 for n in bad_names}, "INVALID_TOPIC_EXCEPTION expected: %r" % codes
    zero = topic_name + "-zero"
    assert admin_error_code(adm, [NewTopic(zero, 0, 1)]) == {zero: 37}, "INVALID_PARTITIONS expected"

    # A mix in one request: each topic gets its own result.
    ok = topic_name + "-ok"
    codes = admin_error_code(adm, [NewTopic(ok, 3, 1), NewTopic(topic_name, 1, 1), NewTopic("bad name?", 1, 1)])
    assert codes == {ok: 0, topic_name: 36, "bad name?": 17}, codes

    names = H.list_topic_names(broker.bootstrap)
    assert topic_name in names and ok in names
    for n in bad_names + [zero, "bad name?"]:
        assert n not in names
    H.wait_topic(broker.bootstrap, ok, 3)
    # The original topic kept its 2 partitions.
    H.wait_topic(broker.bootstrap, topic_name, 2)


def test_create_topics_validate_only(broker, topic_name):
    adm = H.admin_client(broker.bootstrap)
    assert admin_error_code(adm, [NewTopic(topic_name, 3, 1)], validate_only=True) == {topic_name: 0}
    time.sleep(0.5)
    assert topic_name not in H.list_topic_names(broker.bootstrap), "validate_only created the topic"
    # Validation still runs.
    assert admin_error_code(adm, [NewTopic(topic_name, 0, 1)], validate_only=True) == {topic_name: 37}
    assert admin_error_code(adm, [NewTopic("bad name!", 1, 1)], validate_only=True) == {"bad name!": 17}
    # And the real thing afterwards works.
    H.create_topic(broker.bootstrap, topic_name, 3)
    assert admin_error_code(adm, [NewTopic(topic_name, 3, 1)], validate_only=True) == {topic_name: 36}


def test_topic_configs_accepted(broker, topic_name):
    cfg = {"message.timestamp.type": "CreateTime", "max.message.bytes": "200000",
           "segment.bytes": "1048576", "segment.ms": "3600000"}
    H.create_topic(broker.bootstrap, topic_name, 2, config=cfg)
    producer = Producer(H.producer_conf(broker.bootstrap))
    d = H.produce_one(producer, topic_name, b"k", b"v" * 100000, partition=1)
    assert d.err is None and d.offset == 0
    consume_exactly(broker.bootstrap, topic_name, {0: (b"k", b"v" * 100000)}, partition=1)


# --------------------------------------------------------------------------
# Auto-creation
# --------------------------------------------------------------------------


def test_batch_over_segment_bytes_is_record_list_too_large(broker, topic_name):
    # As Kafka: a batch must fit in one segment. segment.bytes has a 1 KiB floor here.
    H.create_topic(broker.bootstrap, topic_name, 1, config={"segment.bytes": "1024"})
    big = K.encode_batch([(H.now_ms(), b"k", b"v" * 1500, [])])
    small = K.encode_batch([(H.now_ms(), b"k", b"small", [])])
    with K.Conn(broker.bootstrap) as conn:
        p = K.produce_v3(conn, topic_name, 0, big)
        assert p["error"] == 18, "expected RECORD_LIST_TOO_LARGE (18), got %r" % (p,)
        p = K.produce_v3(conn, topic_name, 0, small)
        assert p["error"] == 0 and p["base_offset"] == 0, p
        got, hw = K.fetch_all_v4(conn, topic_name, 0)
    assert hw == 1 and [(r.offset, r.value) for r in got] == [(0, b"small")], got


def test_no_auto_create_by_default(broker, topic_name):
    with K.Conn(broker.bootstrap) as conn:
        md = K.metadata_v1(conn, [topic_name])
        assert md["topics"][topic_name]["error"] == K.UNKNOWN_TOPIC_OR_PARTITION
        p = K.produce_v3(conn, topic_name, 0, K.encode_batch([(H.now_ms(), b"k", b"v", [])]))
        assert p["error"] == K.UNKNOWN_TOPIC_OR_PARTITION
        md = K.metadata_v1(conn, [topic_name])
        assert md["topics"][topic_name]["error"] == K.UNKNOWN_TOPIC_OR_PARTITION
    assert topic_name not in H.list_topic_names(broker.bootstrap)


def test_auto_create_topics(broker_factory, topic_name):
    b = broker_factory(extra_args=["--auto-create-topics", "--default-partitions", "3"])
    with K.Conn(b.bootstrap) as conn:
        md = K.metadata_v1(conn, [topic_name])
        # Kafka answers NONE or LEADER_NOT_AVAILABLE (5) while creating.
        assert md["topics"][topic_name]["error"] in (0, 5), md["topics"][topic_name]
    H.wait_topic(b.bootstrap, topic_name, 3)

    # A producer's metadata request auto-creates too; records go through.
    other = topic_name + "-byproducer"
    producer = Producer(H.producer_conf(b.bootstrap, **{"allow.auto.create.topics": True}))
    d = H.produce_one(producer, other, b"k", b"v", timeout=30)
    assert d.err is None and d.offset == 0 and 0 <= d.partition < 3, d
    H.wait_topic(b.bootstrap, other, 3)
    got = H.consume_all(b.bootstrap, other, {p: (1 if p == d.partition else 0) for p in range(3)})
    assert [(r["key"], r["value"]) for r in got] == [(b"k", b"v")]


def test_auto_create_default_partitions_is_one(broker_factory, topic_name):
    b = broker_factory(extra_args=["--auto-create-topics"])
    with K.Conn(b.bootstrap) as conn:
        md = K.metadata_v1(conn, [topic_name])
        assert md["topics"][topic_name]["error"] in (0, 5)
    H.wait_topic(b.bootstrap, topic_name, 1)


# --------------------------------------------------------------------------
# LogAppendTime
# --------------------------------------------------------------------------


def test_log_append_time_topic(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1, config={"message.timestamp.type": "LogAppendTime"})
    producer = Producer(H.producer_conf(broker.bootstrap, **{"linger.ms": 100}))
    old = 1_000_000_000_000  # 2001: the broker must replace it
    before = H.now_ms()
    records = [dict(key=b"lat%d" % i, value=b"value %d" % i, timestamp=old + i, partition=0) for i in range(5)]
    dr = H.produce_all(producer, topic_name, records)
    after = H.now_ms()
    got = H.consume_all(broker.bootstrap, topic_name, {0: 5})
    assert [(r["key"], r["value"]) for r in got] == [(r["key"], r["value"]) for r in records]
    slack = 2000
    for r in got:
        assert r["timestamp_type"] == TIMESTAMP_LOG_APPEND_TIME, "timestamp type %r" % r["timestamp_type"]
        assert before - slack <= r["timestamp"] <= after + slack, (before, r["timestamp"], after)
    for d in dr:
        # librdkafka reports the broker's log append time from the Produce response.
        assert d.timestamp[0] == TIMESTAMP_LOG_APPEND_TIME and before - slack <= d.timestamp[1] <= after + slack, d

    # Raw view: LogAppendTime attribute set, max timestamp = append time, CRC still valid.
    with K.Conn(broker.bootstrap) as conn:
        recs, hw = K.fetch_all_v4(conn, topic_name, 0)
        assert hw == 5 and len(recs) == 5
        assert all(r.timestamp_type == 1 for r in recs)
        assert [r.timestamp for r in recs] == [g["timestamp"] for g in got]
        # A raw produce gets log_append_time in the response, and the stored records carry it.
        t0 = H.now_ms()
        p = K.produce_v3(conn, topic_name, 0, K.encode_batch([(old, b"raw", b"raw", [])]))
        t1 = H.now_ms()
        assert p["error"] == 0 and p["base_offset"] == 5
        assert t0 - slack <= p["log_append_time"] <= t1 + slack, p
        fr = K.fetch_v4(conn, topic_name, 0, 5)
        rr, batches = K.decode_batches(fr["records"])
        rr = [r for r in rr if r.offset == 5]
        assert len(rr) == 1 and rr[0].timestamp == p["log_append_time"] and rr[0].timestamp_type == 1


# --------------------------------------------------------------------------
# Raw protocol
# --------------------------------------------------------------------------

CONTRACT_APIS = {
    K.API_VERSIONS: (0, 3), K.METADATA: (0, 12), K.PRODUCE: (0, 9), K.FETCH: (0, 13), K.LIST_OFFSETS: (1, 8),
    K.CREATE_TOPICS: (0, 7), K.DELETE_TOPICS: (0, 6), K.DESCRIBE_CLUSTER: (0, 1),
}


def assert_contract_apis(apis):
    """Every API of the contract is advertised with at least the contract's version range."""
    for key, (lo, hi) in CONTRACT_APIS.items():
        got = apis.get(key)
        assert got is not None and got[0] <= lo and got[1] >= hi, (
            "api key %d: advertised %r, contract says v%d-%d" % (key, got, lo, hi))


def assert_broker_usable(broker):
    """The process is alive and a fresh connection gets an ApiVersions answer."""
    broker.assert_alive()
    with K.Conn(broker.bootstrap) as conn:
        err, apis = K.api_versions_v0(conn)
        assert err == 0 and K.METADATA in apis and K.PRODUCE in apis


def test_raw_api_versions(broker):
    with K.Conn(broker.bootstrap) as conn:
        err, apis = K.api_versions_v0(conn)
        assert err == 0
        assert_contract_apis(apis)
        # Several requests pipelined on one connection are answered in order.
        corrs = [conn.send_request(K.API_VERSIONS, 0, b"") for _ in range(5)]
        for c in corrs:
            r = conn.recv_response(c)
            assert K.parse_api_versions_v0(r)[0] == 0


def test_raw_api_versions_unsupported_version(broker):
    with K.Conn(broker.bootstrap) as conn:
        corr = conn.send_request(K.API_VERSIONS, 99, b"")
        r = conn.recv_response(corr)  # v0 response header: correlation id only
        err, apis = K.parse_api_versions_v0(r)
        assert err == K.UNSUPPORTED_VERSION
        assert_contract_apis(apis)
        # The connection stays usable.
        err, apis = K.api_versions_v0(conn)
        assert err == 0


def test_raw_metadata_unsupported_version(broker):
    with K.Conn(broker.bootstrap) as conn:
        corr = conn.send_request(K.METADATA, 99, K.i32(-1))
        frame = conn.recv_frame()
        assert struct.unpack(">i", frame[:4])[0] == corr
        body = frame[4:]
        # The contract only says "a response with error UNSUPPORTED_VERSION (35)".  Accept the error code
        # as the first field of the body, after a header tagged-field byte, or after a throttle time.
        candidates = {body[i:i + 2] for i in (0, 1, 4, 5) if len(body) >= i + 2}
        assert struct.pack(">h", 35) in candidates, "no UNSUPPORTED_VERSION in %r" % body[:16]
        # The connection stays open and usable.
        md = K.metadata_v1(conn, [])
        assert md["brokers"] and md["topics"] == {}
    assert_broker_usable(broker)


def test_raw_unknown_api_key_closes_connection(broker):
    for api_key in (32000, 12345, -1):
        with K.Conn(broker.bootstrap) as conn:
            conn.send_request(api_key, 0, b"\x00" * 8)
            conn.wait_closed(timeout=10)
        broker.assert_alive()
    assert_broker_usable(broker)


def frame(payload):
    return struct.pack(">i", len(payload)) + payload


def test_raw_garbage_frames_do_not_crash(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1)
    rnd = random.Random(1234)
    payloads = [
        ("empty frame", struct.pack(">i", 0)),
        ("frame shorter than a header", struct.pack(">i", 3) + b"\x00\x12\x00"),
        ("negative size", struct.pack(">i", -5) + b"xxxxx"),
        ("huge size", struct.pack(">i", 0x7FFFFFF0) + b"\x00" * 64),
        ("truncated frame", struct.pack(">i", 100) + K.request_header_v1(K.METADATA, 1, 7) + b"\x00\x00"),
        ("random bytes", bytes(rnd.getrandbits(8) for _ in range(4096))),
        ("client id longer than the frame", struct.pack(">i", 12) + K.i16(K.METADATA) + K.i16(1) + K.i32(9)
         + K.i16(30000) + b"ab"),
        ("metadata array count 2^31-1", frame(K.request_header_v1(K.METADATA, 1, 9) + K.i32(0x7FFFFFFF))),
        ("metadata topic name longer than the frame", frame(K.request_header_v1(K.METADATA, 1, 10) + K.i32(1)
                                                             + K.i16(32000) + b"abc")),
        ("produce with garbage body", None),
        ("produce with truncated record batch", None),
        ("fetch with garbage body", None),
    ]
    for name, data in payloads:
        with K.Conn(broker.bootstrap, timeout=5) as conn:
            try:
                if name == "produce with garbage body":
                    conn.send_frame(K.request_header_v1(K.PRODUCE, 3, 11)
                                    + bytes(rnd.getrandbits(8) for _ in range(300)))
                elif name == "produce with truncated record batch":
                    batch = K.encode_batch([(H.now_ms(), b"k", b"v" * 50, [])])
                    bad = batch[:-20]
                    body = (K.nullable_string(None) + K.i16(-1) + K.i32(5000) + K.i32(1) + K.string(topic_name)
                            + K.i32(1) + K.i32(0) + K.i32(len(batch)) + bad)
                    conn.send_frame(K.request_header_v1(K.PRODUCE, 3, 12) + body)
                elif name == "fetch with garbage body":
                    conn.send_frame(K.request_header_v1(K.FETCH, 4, 13) + b"\xff" * 40)
                else:
                    conn.send_raw(data)
                # Either an error response or a closed connection is fine; just don't hang forever.
                try:
                    conn.recv_frame(timeout=2)
                except (socket.timeout, K.ConnectionClosed, ConnectionResetError, ValueError):
                    pass
            except (BrokenPipeError, ConnectionResetError):
                pass
        time.sleep(0.05)
        assert broker.running(), "broker died after: %s\n%s" % (name, broker.stderr_tail())
        assert_broker_usable(broker)
    # Nothing was appended by the malformed produce requests.
    with K.Conn(broker.bootstrap) as conn:
        recs, hw = K.fetch_all_v4(conn, topic_name, 0)
        assert hw == 0 and recs == []


def test_raw_corrupt_crc_rejected(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1)
    with K.Conn(broker.bootstrap) as conn:
        p = K.produce_v3(conn, topic_name, 0, K.encode_batch([(H.now_ms(), b"k", b"v", [])], corrupt_crc=True))
        assert p["error"] in (K.CORRUPT_MESSAGE, K.INVALID_RECORD), "batch with a bad CRC accepted: %r" % p
        ts = H.now_ms()
        p = K.produce_v3(conn, topic_name, 0, K.encode_batch([(ts, b"k2", b"v2", [("h", b"x")])]))
        assert p["error"] == 0 and p["base_offset"] == 0
        recs, hw = K.fetch_all_v4(conn, topic_name, 0)
        assert hw == 1 and [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in recs] == [
            (0, b"k2", b"v2", [("h", b"x")], ts)]


def test_raw_produce_errors_keep_connection(broker, topic_name):
    """All produce-side errors on ONE connection, each followed by a good produce, then read back."""
    H.create_topic(broker.bootstrap, topic_name, 1, config={"max.message.bytes": "200000"})
    small = topic_name + "-small"
    compacted = topic_name + "-compacted"
    H.create_topic(broker.bootstrap, compacted, 1, config={"cleanup.policy": "compact"})
    H.create_topic(broker.bootstrap, small, 1, config={"max.message.bytes": "10000"})
    ts = H.now_ms()
    written = []

    def good(conn, i):
        rec = (ts + i, b"good%d" % i, b"value %d" % i, [("n", b"%d" % i)])
        p = K.produce_v3(conn, topic_name, 0, K.encode_batch([rec]))
        assert p["error"] == 0 and p["base_offset"] == len(written), p
        written.append(rec)

    with K.Conn(broker.bootstrap) as conn:
        good(conn, 0)
        # A gzip body that does not decompress: INVALID_RECORD, and the connection goes on.
        p = K.produce_v3(conn, topic_name, 0, K.encode_batch([(ts, b"gz", b"a" * 5000, [])], compression=1,
                                                             body=b"not gzip"))
        assert p["error"] == K.INVALID_RECORD, p
        good(conn, 1)
        p = K.produce_v3(conn, small, 0, K.encode_batch([(ts, b"big", b"b" * 20000, [])]))
        assert p["error"] == K.MESSAGE_TOO_LARGE, p
        good(conn, 2)
        p = K.produce_v3(conn, topic_name + "-nope", 0, K.encode_batch([(ts, b"k", b"v", [])]))
        assert p["error"] == K.UNKNOWN_TOPIC_OR_PARTITION, p
        good(conn, 3)
        p = K.produce_v3(conn, topic_name, 7, K.encode_batch([(ts, b"k", b"v", [])]))
        assert p["error"] == K.UNKNOWN_TOPIC_OR_PARTITION, "partition out of range: %r" % p
        good(conn, 4)
        # A batch with one bad record (no key, on a compacted topic) is refused as a whole.
        p = K.produce_v3(conn, compacted, 0, K.encode_batch(
            [(ts, b"ok-in-bad-batch", b"x", []), (ts, None, b"no key", [])]))
        assert p["error"] == K.INVALID_RECORD, p
        good(conn, 5)
        # No per-record limit: a key and a value of 190,000 bytes fit the 200,000-byte batch.
        rec = (ts + 6, b"k" * 1000, b"d" * 190000, [])
        p = K.produce_v3(conn, topic_name, 0, K.encode_batch([rec]))
        assert p["error"] == 0 and p["base_offset"] == len(written), p
        written.append(rec)
        rec = (ts + 6, b"K" * 190000, b"v", [])
        p = K.produce_v3(conn, topic_name, 0, K.encode_batch([rec]))
        assert p["error"] == 0 and p["base_offset"] == len(written), p
        written.append(rec)
        good(conn, 7)
        recs, hw = K.fetch_all_v4(conn, topic_name, 0)
    assert hw == len(written)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs] == [
        (i, t, k, v, h) for i, (t, k, v, h) in enumerate(written)]


def test_raw_default_max_message_bytes(broker, topic_name):
    """Default max.message.bytes is 1048588 (Kafka's): a ~960 KB batch is fine, a ~1.08 MB one is MESSAGE_TOO_LARGE."""
    H.create_topic(broker.bootstrap, topic_name, 1)
    ts = H.now_ms()
    with K.Conn(broker.bootstrap, timeout=30) as conn:
        big = K.encode_batch([(ts, b"k%d" % i, bytes([65 + i]) * 120000, []) for i in range(9)])
        assert len(big) > 1048576 + 1000
        p = K.produce_v3(conn, topic_name, 0, big)
        assert p["error"] == K.MESSAGE_TOO_LARGE, p
        ok = K.encode_batch([(ts, b"k%d" % i, bytes([65 + i]) * 120000, []) for i in range(8)])
        assert len(ok) < 1048576 - 1000
        p = K.produce_v3(conn, topic_name, 0, ok)
        assert p["error"] == 0 and p["base_offset"] == 0, p
        recs, hw = K.fetch_all_v4(conn, topic_name, 0)
    assert hw == 8
    assert [(r.offset, r.key, r.value) for r in recs] == [(i, b"k%d" % i, bytes([65 + i]) * 120000) for i in range(8)]


def test_raw_metadata_and_describe_cluster(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 2)
    with K.Conn(broker.bootstrap) as conn:
        md = K.metadata_v1(conn, None)
        assert len(md["brokers"]) == 1
        b = md["brokers"][0]
        assert (b["host"], b["port"]) == ("127.0.0.1", broker.port)
        assert md["controller_id"] == b["node_id"]
        t = md["topics"][topic_name]
        assert t["error"] == 0 and not t["internal"]
        assert sorted(p["partition"] for p in t["partitions"]) == [0, 1]
        assert all(p["leader"] == b["node_id"] and p["error"] == 0 for p in t["partitions"])

        dc = K.describe_cluster_v0(conn)
        assert dc["error"] == 0, dc
        assert dc["cluster_id"], dc
        assert [(x["node_id"], x["host"], x["port"]) for x in dc["brokers"]] == [
            (b["node_id"], "127.0.0.1", broker.port)]
        assert dc["controller_id"] == b["node_id"]
