"""What a read_committed consumer, a read_uncommitted one and SQL see of a topic, for
the transaction tests that compare them (test_transactions_crash.py,
test_transactions_clients.py)."""

import time

from confluent_kafka import Consumer, Producer, TopicPartition

import sluice_helpers as H
import sql_helpers as S


def read(bootstrap, topic, partitions, committed=True, timeout=30.0):
    """[(partition, offset, value)] of every record up to each partition's end (the last
    stable offset for read_committed, the high watermark otherwise), in partition and
    offset order."""
    c = Consumer(H.consumer_conf(bootstrap, **{
        "isolation.level": "read_committed" if committed else "read_uncommitted"}))
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, at_end = [], set()
    deadline = time.monotonic() + timeout
    try:
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                marks = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=5, cached=False)
                         for p in range(partitions)}
                raise AssertionError("read of %s stopped: at end %r, %d records, positions %r, watermarks %r" % (
                    topic, sorted(at_end), len(got), c.position(c.assignment()), marks))
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    at_end.add(m.partition())
                    continue
                raise AssertionError("consumer error: %s" % m.error())
            at_end.discard(m.partition())
            got.append((m.partition(), m.offset(), m.value().decode()))
    finally:
        c.close()
    return sorted(got)


def sql(b, topic):
    """The same triples as SQL's kafka_topics."T" gives them (b started with --http)."""
    rows = S.http_rows(b.http, 'SELECT partition, "offset", CAST(value AS TEXT) FROM %s' %
                       S.topic_table(topic))
    return sorted((p, o, v) for p, o, v in rows)


def inputs(bootstrap, topic, out_topic, n, partitions, per_flush):
    """Creates the input and output topics of a read-process-write test and writes n
    records "in-I" to the input, record I to partition I % partitions, flushed every
    per_flush records (several fetches, so several transactions)."""
    H.create_topic(bootstrap, topic, partitions)
    H.create_topic(bootstrap, out_topic, partitions)
    p = Producer(H.producer_conf(bootstrap, **{"enable.idempotence": True}))
    for i in range(n):
        p.produce(topic, value=b"in-%d" % i, partition=i % partitions)
        if i % per_flush == per_flush - 1:
            p.flush(10)
    assert p.flush(10) == 0


def values(view):
    return [v for _, _, v in view]
