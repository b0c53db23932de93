"""Data survives a clean restart (SIGTERM) with the same offsets; offsets continue."""

from confluent_kafka import Producer, TopicPartition

import sluice_helpers as H


def produce_batch(bootstrap, topic, start, count, parts, base_ts):
    records = [dict(key=H.key_for(i, b"r"), value=H.value_for(i, b"r"), headers=H.headers_for(i, b"r"),
                    timestamp=base_ts + i, partition=i % parts) for i in range(start, start + count)]
    # Batches must fit in one 64 KiB segment (larger ones get RECORD_LIST_TOO_LARGE, as
    # in Kafka); librdkafka's default batch.size is 1 MB.
    producer = Producer(H.producer_conf(bootstrap, **{"batch.size": 16384}))
    dr = H.produce_all(producer, topic, records)
    return {(d.partition, d.offset): r for r, d in zip(records, dr)}


def test_restart_keeps_records_and_continues_offsets(broker, topic_name):
    parts = 4
    H.create_topic(broker.bootstrap, topic_name, parts, config={"segment.bytes": "65536"})
    base = H.now_ms() - 100_000

    first = produce_batch(broker.bootstrap, topic_name, 0, 3000, parts, base)
    H.assert_contiguous(first)
    counts1 = H.counts_by_partition(first)
    assert counts1 == {p: 750 for p in range(parts)}

    old_port = broker.port
    broker.stop()
    broker.start()
    print("restarted: port %d -> %d" % (old_port, broker.port))

    # Topic and its partitions survived.
    H.wait_topic(broker.bootstrap, topic_name, parts)
    got = H.consume_all(broker.bootstrap, topic_name, counts1)
    H.assert_records_match(first, got)

    # New records continue after the old ones.
    second = produce_batch(broker.bootstrap, topic_name, 3000, 1000, parts, base)
    for p in range(parts):
        offs = sorted(o for (pp, o) in second if pp == p)
        assert offs == list(range(counts1[p], counts1[p] + 250)), (
            "partition %d: offsets after restart start at %d, expected %d" % (p, offs[0], counts1[p]))
    everything = dict(first)
    everything.update(second)
    H.assert_contiguous(everything)

    # And a second restart keeps all of it.
    broker.restart()
    got = H.consume_all(broker.bootstrap, topic_name, H.counts_by_partition(everything))
    H.assert_records_match(everything, got)


def test_restart_keeps_topics_and_configs(broker, topic_name):
    """Topics (incl. an empty one) and their configs survive a restart."""
    empty = topic_name + "-empty"
    small = topic_name + "-small"
    H.create_topic(broker.bootstrap, empty, 2)
    H.create_topic(broker.bootstrap, small, 1, config={"max.message.bytes": "10000"})
    broker.restart()
    H.wait_topic(broker.bootstrap, empty, 2)
    H.wait_topic(broker.bootstrap, small, 1)
    c = H.make_consumer(broker.bootstrap)
    try:
        for p in range(2):
            assert c.get_watermark_offsets(TopicPartition(empty, p), timeout=10, cached=False) == (0, 0)
    finally:
        c.close()
    # max.message.bytes=10000 is still enforced after the restart.
    producer = Producer(H.producer_conf(broker.bootstrap, **{"message.max.bytes": 1000000}))
    d = H.produce_one(producer, small, b"big", b"x" * 20000, partition=0)
    assert d.err is not None and d.err.code() == 10, "expected MESSAGE_TOO_LARGE (10), got %r" % (d.err,)
    d = H.produce_one(producer, small, b"ok", b"y" * 100, partition=0)
    assert d.err is None and d.offset == 0
