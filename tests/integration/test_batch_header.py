"""Batch header fields that producers leave unset or inexact are taken as Kafka takes
them: the broker recomputes a CreateTime batch's max_timestamp from its records (and
stores the batch with that value and a CRC to match), instead of refusing the batch.

- sarama (IBM/sarama, tests/integration/go): v1.44.0 and before leave every batch's
  max_timestamp at -1, so nothing they produce was accepted; v1.61.1 (the current
  release) computes it, and must keep working.
- librdkafka's C++ produce() with timestamp -1 writes records with timestamp -1 under a
  header max_timestamp of 0 (raw here, as kproto.py writes it).
- A max_timestamp of -1 over records that carry real timestamps.
"""

import json
import os
import shutil
import subprocess

import pytest
from confluent_kafka import TopicPartition

import kproto as K
import sluice_helpers as H
from test_flexible import list_offsets_v8

GO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "go")


SARAMA_MODULES = {"1.61.1": GO_DIR, "1.44.0": os.path.join(GO_DIR, "sarama-1.44")}


@pytest.fixture(scope="module", params=sorted(SARAMA_MODULES))
def sarama_bin(request, tmp_path_factory):
    """The sarama producer of one pinned sarama version (make test-deps downloads them)."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    out = str(tmp_path_factory.mktemp("go") / "sarama_produce")
    env = dict(os.environ, GOFLAGS="-mod=readonly", GOTOOLCHAIN="local")
    r = subprocess.run([go, "build", "-o", out, "."], cwd=SARAMA_MODULES[request.param], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, "go build of sarama %s failed: %s" % (request.param, r.stderr[-2000:])
    return out


def sarama_produce(binary, bootstrap, topic, n, base_ms=0, acks=1):
    r = subprocess.run([binary, "-brokers", bootstrap, "-topic", topic, "-n", str(n),
                        "-base-ms", str(base_ms), "-acks", str(acks)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "sarama producer failed: %s" % r.stderr.strip()
    return [json.loads(line) for line in r.stdout.splitlines()]


def with_max_timestamp(batch, max_ts):
    """The batch with its header's max_timestamp replaced (and a CRC to match): what a
    client that leaves the field unset sends."""
    b = bytearray(batch)
    b[35:43] = K.i64(max_ts)
    b[17:21] = K.u32(K.crc32c(bytes(b[21:])))
    return bytes(b)


def stored_batches(conn, topic):
    """Every stored batch header and record, read with a raw Fetch; decode_batches
    checks each batch's CRC-32C."""
    recs, batches, offset = [], [], 0
    while True:
        p = K.fetch_v4(conn, topic, 0, offset)
        assert p["error"] == 0, p
        r, b = K.decode_batches(p["records"] or b"")
        if not b:
            return recs, batches, p["high_watermark"]
        recs += r
        batches += b
        offset = b[-1]["base_offset"] + b[-1]["last_offset_delta"] + 1


def offset_for_time(bootstrap, topic, ts):
    c = H.make_consumer(bootstrap)
    try:
        res = c.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=10)
        assert res[0].error is None, res[0].error
        return res[0].offset
    finally:
        c.close()


def test_sarama_batches_read_back_with_their_max_timestamp(broker, topic_name, sarama_bin):
    H.create_topic(broker.bootstrap, topic_name, 1)
    base = H.now_ms() - 60_000
    n = 10
    acks = sarama_produce(sarama_bin, broker.bootstrap, topic_name, n, base_ms=base)
    assert [(a["partition"], a["offset"]) for a in acks] == [(0, i) for i in range(n)]
    # Record i's time as sarama sends it: truncated to the millisecond.
    want_ts = [base + (900 + i * 300) // 1000 for i in range(n)]
    with K.Conn(broker.bootstrap) as conn:
        recs, batches, hw = stored_batches(conn, topic_name)
    assert hw == n
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in recs] == [
        (i, b"k%d" % i, b"v%d-sarama" % i, [("i", b"%d" % i)], want_ts[i]) for i in range(n)]
    # One batch, stored with its largest record timestamp whatever sarama sent there.
    assert len(batches) == 1 and batches[0]["max_timestamp"] == max(want_ts), batches
    assert batches[0]["attributes"] & 0x8 == 0
    # ListOffsets by timestamp, through librdkafka and through ListOffsets v8.
    assert [offset_for_time(broker.bootstrap, topic_name, base + d) for d in range(5)] == [0, 1, 4, 7, -1]
    with K.Conn(broker.bootstrap) as conn:
        top = list_offsets_v8(conn, topic_name, 0, -3)  # MAX_TIMESTAMP
    assert (top["error"], top["offset"], top["timestamp"]) == (0, 7, base + 3), top


def test_sarama_with_its_own_timestamps(broker, topic_name, sarama_bin):
    H.create_topic(broker.bootstrap, topic_name, 1)
    before = H.now_ms()
    acks = sarama_produce(sarama_bin, broker.bootstrap, topic_name, 200)
    after = H.now_ms()
    assert [a["offset"] for a in acks] == list(range(200))
    got = H.consume_all(broker.bootstrap, topic_name, {0: 200})
    assert [(r["offset"], r["key"], r["value"]) for r in got] == [
        (i, b"k%d" % i, b"v%d-sarama" % i) for i in range(200)]
    assert all(before - 1 <= r["timestamp"] <= after for r in got), [r["timestamp"] for r in got][:5]
    with K.Conn(broker.bootstrap) as conn:
        recs, batches, _ = stored_batches(conn, topic_name)
    for b in batches:
        in_batch = [r.timestamp for r in recs
                    if b["base_offset"] <= r.offset <= b["base_offset"] + b["last_offset_delta"]]
        assert b["max_timestamp"] == max(in_batch), (b, in_batch)


def test_librdkafka_style_max_timestamp_0_over_records_without_timestamps(broker, topic_name):
    """librdkafka's C++ produce() with timestamp -1: records at -1, header max 0."""
    H.create_topic(broker.bootstrap, topic_name, 1)
    batch = with_max_timestamp(K.encode_batch([(-1, b"k%d" % i, b"v%d" % i, []) for i in range(3)]), 0)
    with K.Conn(broker.bootstrap) as conn:
        p = K.produce_v3(conn, topic_name, 0, batch, acks=1)
        assert (p["error"], p["base_offset"]) == (0, 0), p
        recs, batches, hw = stored_batches(conn, topic_name)
    assert hw == 3
    assert [(r.offset, r.key, r.value, r.timestamp) for r in recs] == [
        (i, b"k%d" % i, b"v%d" % i, -1) for i in range(3)]
    assert [b["max_timestamp"] for b in batches] == [-1]  # Kafka's NO_TIMESTAMP
    # No record has a timestamp: a lookup by time finds none; the partition still serves.
    assert offset_for_time(broker.bootstrap, topic_name, 0) == -1
    got = H.consume_all(broker.bootstrap, topic_name, {0: 3})
    assert [(r["key"], r["value"]) for r in got] == [(b"k%d" % i, b"v%d" % i) for i in range(3)]


def test_max_timestamp_minus_1_over_timestamped_records(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1)
    ts = H.now_ms() - 10_000
    times = [ts + 5, ts, ts + 9, ts + 2]  # the largest is not the last
    batch = with_max_timestamp(
        K.encode_batch([(t, b"k%d" % i, b"v%d" % i, []) for i, t in enumerate(times)]), -1)
    with K.Conn(broker.bootstrap) as conn:
        p = K.produce_v3(conn, topic_name, 0, batch)
        assert (p["error"], p["base_offset"]) == (0, 0), p
        # A second, exact batch after it: both indexed.
        p = K.produce_v3(conn, topic_name, 0, K.encode_batch([(ts + 20, b"k4", b"v4", [])]))
        assert (p["error"], p["base_offset"]) == (0, 4), p
        recs, batches, hw = stored_batches(conn, topic_name)
        top = list_offsets_v8(conn, topic_name, 0, -3)
    assert hw == 5
    assert [(r.offset, r.timestamp) for r in recs] == list(enumerate(times + [ts + 20]))
    assert [b["max_timestamp"] for b in batches] == [ts + 9, ts + 20]
    assert offset_for_time(broker.bootstrap, topic_name, ts + 6) == 2
    assert offset_for_time(broker.bootstrap, topic_name, ts + 10) == 4
    assert (top["offset"], top["timestamp"]) == (4, ts + 20), top
    # After kill -9 the time index is rebuilt from the stored headers: the same answers.
    broker.kill9()
    broker.start()
    assert offset_for_time(broker.bootstrap, topic_name, ts + 6) == 2
    assert offset_for_time(broker.bootstrap, topic_name, ts + 10) == 4
    with K.Conn(broker.bootstrap) as conn:
        _, again, _ = stored_batches(conn, topic_name)
    assert again == batches


def test_unset_max_timestamp_on_a_log_append_time_topic(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1, config={"message.timestamp.type": "LogAppendTime"})
    batch = with_max_timestamp(K.encode_batch([(-1, b"k", b"v", []), (-1, b"k2", b"v2", [])]), 0)
    with K.Conn(broker.bootstrap) as conn:
        t0 = H.now_ms()
        p = K.produce_v3(conn, topic_name, 0, batch)
        t1 = H.now_ms()
        assert p["error"] == 0 and t0 <= p["log_append_time"] <= t1, p
        recs, batches, _ = stored_batches(conn, topic_name)
    assert [b["max_timestamp"] for b in batches] == [p["log_append_time"]]
    assert [(r.key, r.timestamp, r.timestamp_type) for r in recs] == [
        (b"k", p["log_append_time"], 1), (b"k2", p["log_append_time"], 1)]
