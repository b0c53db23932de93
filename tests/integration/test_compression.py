"""Compressed batches (gzip, snappy raw and xerial, lz4, zstd) from kafka-python, librdkafka
(confluent-kafka) and raw requests: stored as the producer sent them (checked with a raw
Fetch), read back by confluent-kafka and kafka-python, queried with SQL, expanded and
compacted; compression.type recompresses on append at the configured level; batches that
do not decompress, or decompress too far, are refused with a reason and the connection
goes on.  kafkajs's codecs are in test_kafkajs.py."""

import json
import subprocess
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as ConfluentTP
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

import expansion_helpers as X
import kproto as K
import sluice_helpers as H
import sql_helpers as S
from test_flexible import produce_v9

CODECS = ["gzip", "snappy", "lz4", "zstd"]
CODEC_IDS = {"none": 0, "gzip": K.GZIP, "snappy": K.SNAPPY, "lz4": K.LZ4, "zstd": K.ZSTD}


@pytest.fixture(scope="module")
def b(module_broker_factory):
    broker = module_broker_factory(extra_args=S.SQL_ARGS + ["--log-cleaner-backoff-ms", "200"])
    assert broker.pg and broker.http, broker.stdout_lines
    return broker


def json_value(i):
    return json.dumps({"id": i, "op": "insert", "user": "user-%d" % (i % 13),
                       "note": "the same words again and again " * 4}).encode()


stored = K.stored_batches


def kafka_python_read(bootstrap, topic, n, timeout=30.0):
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                      consumer_timeout_ms=1000, request_timeout_ms=30000)
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            for msgs in c.poll(timeout_ms=500).values():
                out += [(m.offset, m.key, m.value) for m in msgs]
        return out
    finally:
        c.close()


def assert_every_reader_sees(b, topic, want):
    """want: [(offset, key, value)] of partition 0, read by every client and by SQL."""
    got = [(r["offset"], r["key"], r["value"]) for r in H.consume_all(b.bootstrap, topic, {0: want[-1][0] + 1})]
    assert got == want, "confluent-kafka"
    assert kafka_python_read(b.bootstrap, topic, len(want)) == want, "kafka-python"
    rows = S.http_rows(b.http, 'SELECT "offset", hex(key), hex(value) FROM %s ORDER BY "offset"' % S.topic_table(topic))
    assert rows == [[o, k.hex().upper() if k is not None else None, v.hex().upper()] for o, k, v in want], "SQL"


def kafka_python_producer(bootstrap, codec, **extra):
    conf = dict(bootstrap_servers=bootstrap, acks="all", compression_type=codec, linger_ms=20,
                batch_size=256 * 1024, retries=0, request_timeout_ms=30000,
                max_in_flight_requests_per_connection=1)
    conf.update(extra)
    return KafkaProducer(**conf)


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_codec_is_stored_read_queried_and_expanded(b, topic_name, codec):
    H.create_topic(b.bootstrap, topic_name, 1)
    target = "z_%s.events" % codec
    X.create(b.http, topic_name, target, [{"name": "id", "type": "int64"}, {"name": "user", "type": "string"}])
    p = kafka_python_producer(b.bootstrap, codec)
    try:
        futures = [p.send(topic_name, key=b"k%d" % i, value=json_value(i), partition=0) for i in range(300)]
        p.flush(timeout=30)
        offsets = [f.get(timeout=30).offset for f in futures]
    finally:
        p.close(timeout=10)
    assert offsets == list(range(300))
    recs, batches, _ = stored(b.bootstrap, topic_name)
    assert {bt["compression"] for bt in batches} == {CODEC_IDS[codec]}, batches[:3]
    assert len(batches) < 300  # batched, so compression had something to work on
    assert [(r.offset, r.key, r.value) for r in recs] == [(i, b"k%d" % i, json_value(i)) for i in range(300)]
    assert_every_reader_sees(b, topic_name, [(i, b"k%d" % i, json_value(i)) for i in range(300)])
    assert S.http_rows(b.http, "SELECT count(*), sum(CAST(value ->> '$.id' AS BIGINT)) FROM %s WHERE value ->> '$.op' = 'insert'"
                       % S.topic_table(topic_name)) == [[300, sum(range(300))]]
    X.wait_caught_up(b.http, target)
    assert S.http_rows(b.http, 'SELECT _offset, id, "user" FROM %s ORDER BY _offset' % target) == [
        [i, i, "user-%d" % (i % 13)] for i in range(300)]


RAW_CODECS = [("gzip", K.GZIP, False), ("snappy", K.SNAPPY, False), ("snappy-xerial", K.SNAPPY, True),
              ("lz4", K.LZ4, False), ("zstd", K.ZSTD, False)]


@pytest.mark.parametrize("name,codec,xerial", RAW_CODECS, ids=[c[0] for c in RAW_CODECS])
def test_raw_batches_are_stored_and_served_as_sent(b, topic_name, name, codec, xerial):
    H.create_topic(b.bootstrap, topic_name, 1)
    ts = H.now_ms()
    sent = []
    with K.Conn(b.bootstrap) as conn:
        for n in range(3):
            recs = [(ts + i, b"k%d" % (n * 10 + i), json_value(n * 10 + i), [("codec", name.encode())])
                    for i in range(10)]
            batch = K.encode_batch(recs, compression=codec, xerial=xerial)
            p = produce_v9(conn, topic_name, 0, batch)
            assert (p["error"], p["base_offset"]) == (0, n * 10), p
            sent.append(batch)
    recs, batches, raw = stored(b.bootstrap, topic_name)
    assert [bt["compression"] for bt in batches] == [codec] * 3
    # Byte for byte as sent, but for the base offset the broker assigned.
    assert [r[8:] for r in raw] == [s[8:] for s in sent]
    want = [(n * 10 + i, b"k%d" % (n * 10 + i), json_value(n * 10 + i)) for n in range(3) for i in range(10)]
    assert [(r.offset, r.key, r.value) for r in recs] == want
    assert all(r.headers == [("codec", name.encode())] for r in recs)
    assert_every_reader_sees(b, topic_name, want)
    assert S.http_rows(b.http, 'SELECT "offset" FROM %s WHERE timestamp_producer >= %d AND "offset" < 10'
                       % (S.topic_table(topic_name), ts + 7)) == [[7], [8], [9]]
    # ListOffsets by timestamp looks inside the compressed batch for the first record.
    c = H.make_consumer(b.bootstrap)
    try:
        found = c.offsets_for_times([ConfluentTP(topic_name, 0, ts + 7)], timeout=10)
    finally:
        c.close()
    assert [(tp.offset, tp.error) for tp in found] == [(7, None)]


def test_zstd_needs_produce_v7(b, topic_name):
    H.create_topic(b.bootstrap, topic_name, 1)
    batch = K.encode_batch([(H.now_ms(), b"k", b"v", [])], compression=K.ZSTD)
    with K.Conn(b.bootstrap) as conn:
        assert K.produce_v3(conn, topic_name, 0, batch)["error"] == K.UNSUPPORTED_COMPRESSION_TYPE
        assert produce_v9(conn, topic_name, 0, batch)["error"] == 0
    assert "zstd batches need Produce v7 or later" in b.stderr_tail(200)


def test_bad_and_oversized_batches_are_refused_and_the_connection_goes_on(b, topic_name):
    H.create_topic(b.bootstrap, topic_name, 1)
    ts = H.now_ms()
    good = K.encode_batch([(ts, b"good", b"v", [])])
    # 80 MiB of zeros compress to a few KiB: above the 64 MiB bound whatever the codec.
    zeros = [(ts, b"bomb", bytes(80 << 20), [])]
    # The records' bytes, compressed per codec below (not through encode_batch, whose CRC
    # over 80 MiB in Python would take a minute).
    plain_records = K.encode_record(0, 0, b"bomb", zeros[0][2], [])
    bomb_body = None
    with K.Conn(b.bootstrap) as conn:
        for codec in (K.GZIP, K.SNAPPY, K.LZ4, K.ZSTD):
            body = K.compress(codec, plain_records)
            assert len(body) < (4 << 20), (codec, len(body))
            if codec != K.SNAPPY:  # snappy's best ratio is about 21:1: 80 MiB is ~4 MiB
                bomb_body = body
                p = produce_v9(conn, topic_name, 0, K.encode_batch(zeros, compression=codec, body=body))
                assert p["error"] == K.MESSAGE_TOO_LARGE, p
                assert "decompresses to more than 67108864 bytes" in p["message"], p
            junk = K.encode_batch([(ts, b"junk", b"v", [])], compression=codec, body=b"\x00not compressed at all" * 9)
            p = produce_v9(conn, topic_name, 0, junk)
            assert p["error"] == K.INVALID_RECORD, p
            assert "does not decompress" in p["message"], p
            # The same connection, and another client, keep producing.
            assert produce_v9(conn, topic_name, 0, good)["error"] == 0
        assert bomb_body is not None
    d = H.produce_one(Producer(H.producer_conf(b.bootstrap)), topic_name, b"other", b"client", partition=0)
    assert d.err is None and d.offset == 4, d
    recs, _, _ = stored(b.bootstrap, topic_name)
    assert [(r.offset, r.key) for r in recs] == [(0, b"good"), (1, b"good"), (2, b"good"), (3, b"good"), (4, b"other")]
    log = b.stderr_tail(400)
    assert "MESSAGE_TOO_LARGE: zstd batch decompresses to more than" in log
    assert "INVALID_RECORD: lz4 batch does not decompress" in log


@pytest.mark.parametrize("target", ["zstd", "uncompressed", "gzip"])
def test_compression_type_recompresses_on_append(b, topic_name, target):
    H.create_topic(b.bootstrap, topic_name, 1, config={"compression.type": target})
    ts = H.now_ms()
    with K.Conn(b.bootstrap) as conn:
        for n, codec in enumerate((0, K.LZ4, K.ZSTD if target != "zstd" else K.SNAPPY)):
            recs = [(ts + i, b"k%d" % (n * 5 + i), json_value(n * 5 + i), []) for i in range(5)]
            assert produce_v9(conn, topic_name, 0, K.encode_batch(recs, compression=codec))["error"] == 0
    # An uncompressed librdkafka producer too.
    d = H.produce_one(Producer(H.producer_conf(b.bootstrap)), topic_name, b"k15", json_value(15), partition=0)
    assert d.err is None and d.offset == 15, d
    recs, batches, _ = stored(b.bootstrap, topic_name)
    assert [bt["compression"] for bt in batches] == [CODEC_IDS.get(target, 0)] * 4
    want = [(i, b"k%d" % i, json_value(i)) for i in range(16)]
    assert [(r.offset, r.key, r.value) for r in recs] == want
    assert_every_reader_sees(b, topic_name, want)


def test_a_batch_too_large_once_recompressed_is_refused(b, topic_name):
    """As Kafka checks max.message.bytes again after recompressing: a zstd batch within the
    limit that an uncompressed topic would store above it gets MESSAGE_TOO_LARGE."""
    H.create_topic(b.bootstrap, topic_name, 1, config={"compression.type": "uncompressed",
                                                      "max.message.bytes": "20000"})
    batch = K.encode_batch([(H.now_ms(), b"k%d" % i, json_value(i), []) for i in range(200)], compression=K.ZSTD)
    assert len(batch) < 20000
    with K.Conn(b.bootstrap) as conn:
        p = produce_v9(conn, topic_name, 0, batch)
        assert p["error"] == K.MESSAGE_TOO_LARGE, p
        assert "as none (the topic's compression.type), above max.message.bytes 20000" in p["message"], p
        assert produce_v9(conn, topic_name, 0, K.encode_batch([(H.now_ms(), b"k", b"v", [])],
                                                             compression=K.ZSTD))["error"] == 0
    recs, batches, _ = stored(b.bootstrap, topic_name)
    assert [(r.offset, r.key) for r in recs] == [(0, b"k")] and batches[0]["compression"] == 0


@pytest.mark.parametrize("codec,low,high", [("zstd", "1", "19"), ("gzip", "1", "9"), ("lz4", "1", "17")])
def test_compression_levels_are_honoured(b, topic_name, codec, low, high):
    # Varied JSON, so that levels make a difference.
    recs = [(H.now_ms(), b"k%d" % i, json.dumps({"id": i, "v": [i * j % 977 for j in range(40)]}).encode(), [])
            for i in range(400)]
    sizes = {}
    for level in (low, high):
        t = "%s-%s" % (topic_name, level)
        H.create_topic(b.bootstrap, t, 1, config={"compression.type": codec, "compression.%s.level" % codec: level})
        with K.Conn(b.bootstrap) as conn:
            assert produce_v9(conn, t, 0, K.encode_batch(recs))["error"] == 0
        got, batches, raw = stored(b.bootstrap, t)
        assert [bt["compression"] for bt in batches] == [CODEC_IDS[codec]]
        assert [(r.key, r.value) for r in got] == [(r[1], r[2]) for r in recs]
        sizes[level] = len(raw[0])
    assert sizes[high] < sizes[low] * 0.95, sizes
    from confluent_kafka.admin import NewTopic
    adm = H.admin_client(b.bootstrap)  # kept: the future fails when its client goes
    fut = adm.create_topics(
        [NewTopic(topic_name + "-bad", 1, 1, config={"compression.%s.level" % codec: "23"})])[topic_name + "-bad"]
    with pytest.raises(Exception) as e:
        fut.result(timeout=30)
    assert H.kafka_exception_code(e.value) == 40, e.value  # INVALID_CONFIG


def test_librdkafka_codecs(b, topic_name):
    """Debian's librdkafka 2.0.2 compresses only where the advertised Produce versions let
    it: zstd needs Produce v7, gzip/snappy/lz4 look for Produce v0-v2 (without them it logs
    "not compressing batch" and sends them uncompressed).  Sluice advertises Produce 0-9, so
    every codec is stored as sent, and read back."""
    logs = []
    stored_codec = {}
    for codec in CODECS:
        t = "%s-%s" % (topic_name, codec)
        H.create_topic(b.bootstrap, t, 1)

        class Log:
            def log(self, level, fmt, *args):
                logs.append(fmt % args if args else fmt)

        p = Producer(H.producer_conf(b.bootstrap, **{"compression.type": codec, "linger.ms": 50,
                                                      "debug": "msg,feature", "logger": Log()}))
        for i in range(200):
            p.produce(t, key=b"k%d" % i, value=json_value(i), partition=0)
        assert p.flush(30) == 0
        recs, batches, _ = stored(b.bootstrap, t)
        stored_codec[codec] = {bt["compression"] for bt in batches}
        assert [(r.offset, r.key, r.value) for r in recs] == [(i, b"k%d" % i, json_value(i)) for i in range(200)]
        assert_every_reader_sees(b, t, [(i, b"k%d" % i, json_value(i)) for i in range(200)])
    text = "\n".join(logs)
    for codec in CODECS:
        assert stored_codec[codec] == {CODEC_IDS[codec]}, stored_codec
        assert "Broker does not support compression type %s" % codec not in text, codec


@pytest.mark.parametrize("codec", CODECS)
def test_compressed_batches_are_compacted_with_their_codec(b, topic_name, codec):
    H.create_topic(b.bootstrap, topic_name, 1, config={
        "cleanup.policy": "compact", "segment.ms": "1", "min.cleanable.dirty.ratio": "0.01"})
    p = kafka_python_producer(b.bootstrap, codec, linger_ms=0)
    try:
        for i in range(40):
            p.send(topic_name, key=b"k%d" % (i % 4), value=json_value(i), partition=0).get(timeout=30)
            time.sleep(0.005)
        # kafka-python sends a batch uncompressed when compressing gains nothing: values
        # that compress well keep every batch compressed.
        p.send(topic_name, key=b"tail", value=json_value(40), partition=0).get(timeout=30)
    finally:
        p.close(timeout=10)
    want = [(36 + i, b"k%d" % i, json_value(36 + i)) for i in range(4)] + [(40, b"tail", json_value(40))]
    deadline = time.monotonic() + 30
    while True:
        recs, batches, _ = stored(b.bootstrap, topic_name)
        got = [(r.offset, r.key, r.value) for r in recs]
        if got == want or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert got == want, b.stderr_tail()
    assert {bt["compression"] for bt in batches} == {CODEC_IDS[codec]}
    assert_every_reader_sees(b, topic_name, want)
    # SQL sees the survivors only.
    assert S.http_rows(b.http, "SELECT count(*) FROM %s" % S.topic_table(topic_name)) == [[5]]


def test_kcat_zstd(b, topic_name):
    """kcat (librdkafka 2.0.2) with -z zstd sends zstd batches, stored and read back."""
    H.create_topic(b.bootstrap, topic_name, 1)
    lines = b"".join(b"k%d:%s\n" % (i, json_value(i)) for i in range(100))
    r = subprocess.run(["kcat", "-P", "-b", b.bootstrap, "-t", topic_name, "-p", "0", "-K:", "-z", "zstd"],
                       input=lines, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    recs, batches, _ = stored(b.bootstrap, topic_name)
    assert {bt["compression"] for bt in batches} == {K.ZSTD}, batches
    assert_every_reader_sees(b, topic_name, [(i, b"k%d" % i, json_value(i)) for i in range(100)])
