"""Produce acknowledgement modes and Fetch long polling, on raw protocol requests.

acks=1 answers after the append, acks=0 answers nothing (the next request's answer
comes first), a record is readable (ListOffsets, Fetch, SQL) by the time of its answer
or of the connection's next request, a long-polling fetch wakes when data arrives and
otherwise waits max_wait_ms, and a consumer waiting on an idle topic costs the broker
no CPU.
"""

import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

import kproto as K
import sluice_helpers as H
import sql_helpers as S
from test_cli import sluice_ok


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the whole line, in clock ticks.
    return (int(fields[11]) + int(fields[12])) / 100.0


def one(key):
    return K.encode_batch([(1700000000000, key, b"value-" + key, [])])


def produce_body(topic, partition, batch, acks):
    return (K.nullable_string(None) + K.i16(acks) + K.i32(10000) + K.i32(1) + K.string(topic)
            + K.i32(1) + K.i32(partition) + K.kbytes(batch))


def test_acks_one_and_zero(broker, topic_name):
    sluice_ok(["topic", "create", topic_name, "--partitions", "1", "--bootstrap", broker.bootstrap])
    with K.Conn(broker.bootstrap) as conn:
        res = K.produce_v3(conn, topic_name, 0, one(b"a"), acks=1)
        assert res["error"] == K.NONE and res["base_offset"] == 0

        # acks=0: no response. The metadata answer that follows carries the metadata
        # request's correlation id, so nothing was sent for the produce.
        conn.send_request(K.PRODUCE, 3, produce_body(topic_name, 0, one(b"b"), 0))
        corr = conn.send_request(K.METADATA, 1, K.metadata_v1_body([topic_name]))
        r = conn.recv_response(corr)
        md = K.parse_metadata_v1(r)
        assert md["topics"][topic_name]["error"] == 0

        # Requests of one connection run in order, so the acks=0 record was appended
        # before the metadata answer, and is readable at once: the high watermark moves
        # on append, as in Kafka with one replica, not one fsync later.
        recs, hw = K.fetch_all_v4(conn, topic_name, 0)
        assert hw == 2
        assert [(x.offset, x.key) for x in recs] == [(0, b"a"), (1, b"b")]


def test_acks0_records_are_readable_by_the_next_request(broker, topic_name):
    """An acks=0 produce gets no answer, but the connection's next request runs after its
    append: a Fetch sent right behind it finds the record, every time."""
    sluice_ok(["topic", "create", topic_name, "--partitions", "1", "--bootstrap", broker.bootstrap])
    stale = []
    with K.Conn(broker.bootstrap) as conn:
        for i in range(60):
            conn.send_request(K.PRODUCE, 3, produce_body(topic_name, 0, one(b"z%d" % i), 0))
            f = K.fetch_v4(conn, topic_name, 0, i, max_wait_ms=0)
            recs, _ = K.decode_batches(f["records"] or b"")
            got = (f["high_watermark"], [(r.offset, r.key) for r in recs if r.offset >= i])
            if got != (i + 1, [(i, b"z%d" % i)]):
                stale.append((i, got))
    assert not stale, "%d of 60 acks=0 records not readable by the next request; first: %r" % (
        len(stale), stale[:3])


def test_acks1_records_are_readable_when_answered(broker_factory, topic_name):
    """After each acks=1 answer (librdkafka's delivery report), ListOffsets(latest),
    Fetch and SQL already show the record: a client that produces and then reads its
    offsets, deletes up to them or consumes them sees no stale value."""
    b = broker_factory(extra_args=S.SQL_ARGS)
    H.create_topic(b.bootstrap, topic_name, 1)
    producer = Producer(H.producer_conf(b.bootstrap, acks=1, **{"linger.ms": 0}))
    consumer = H.make_consumer(b.bootstrap)
    tp = TopicPartition(topic_name, 0)
    stale = []
    n = 60
    try:
        with K.Conn(b.bootstrap) as conn:
            for i in range(n):
                key, value = b"k%d" % i, b"acks1 value %d" % i
                d = H.produce_one(producer, topic_name, key, value, partition=0)
                assert d.err is None and d.offset == i, d
                # At once, in this order: ListOffsets, Fetch, SQL.
                _, high = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
                f = K.fetch_v4(conn, topic_name, 0, i, max_wait_ms=0)
                rows = S.http_rows(b.http, 'SELECT "offset", CAST(key AS TEXT), CAST(value AS TEXT) '
                                           'FROM %s WHERE "offset" >= %d' % (S.topic_table(topic_name), i))
                recs, _ = K.decode_batches(f["records"] or b"")
                fetched = [(r.offset, r.key, r.value) for r in recs if r.offset >= i]
                seen = dict(high=high, fetch_hw=f["high_watermark"], fetched=fetched, sql=rows)
                want = dict(high=i + 1, fetch_hw=i + 1, fetched=[(i, key, value)],
                            sql=[[i, key.decode(), value.decode()]])
                if seen != want:
                    stale.append((i, seen))
    finally:
        consumer.close()
    assert not stale, "%d of %d acks=1 answers came before their record was readable; first: %r" % (
        len(stale), n, stale[:3])


def test_long_poll_wakes_on_data_and_waits_otherwise(broker, topic_name):
    sluice_ok(["topic", "create", topic_name, "--partitions", "1", "--bootstrap", broker.bootstrap])
    with K.Conn(broker.bootstrap) as idle:
        t0 = time.monotonic()
        p = K.fetch_v4(idle, topic_name, 0, 0, max_wait_ms=1000)
        waited = time.monotonic() - t0
        assert p["error"] == K.NONE and not p["records"] and p["high_watermark"] == 0
        assert 0.9 <= waited < 3.0, waited

    result = {}

    def poll():
        with K.Conn(broker.bootstrap) as c:
            start = time.monotonic()
            result["part"] = K.fetch_v4(c, topic_name, 0, 0, max_wait_ms=8000)
            result["secs"] = time.monotonic() - start

    th = threading.Thread(target=poll)
    th.start()
    time.sleep(0.5)
    with K.Conn(broker.bootstrap) as conn:
        assert K.produce_v3(conn, topic_name, 0, one(b"wake"), acks=-1)["error"] == K.NONE
    th.join(15)
    assert not th.is_alive()
    recs, _ = K.decode_batches(result["part"]["records"])
    assert [(x.offset, x.key) for x in recs] == [(0, b"wake")]
    assert result["part"]["high_watermark"] == 1
    # Woken by the append, well before max_wait_ms.
    assert 0.4 <= result["secs"] < 4.0, result["secs"]


def test_consumer_on_idle_topic_costs_no_cpu(broker, topic_name):
    sluice_ok(["topic", "create", topic_name, "--partitions", "4", "--bootstrap", broker.bootstrap])
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused-" + topic_name,
                  "enable.auto.commit": False, "fetch.wait.max.ms": 500,
                  "broker.address.family": "v4"})
    try:
        c.assign([TopicPartition(topic_name, p, 0) for p in range(4)])
        assert c.poll(2.0) is None  # connected and long-polling
        before = cpu_seconds(broker.proc.pid)
        for _ in range(4):
            assert c.poll(1.0) is None
        used = cpu_seconds(broker.proc.pid) - before
        # Four seconds of waiting consumers: a few fetches every max_wait, no spinning.
        assert used < 0.2, "broker used %.2f s of CPU while its consumer waited" % used
    finally:
        c.close()
