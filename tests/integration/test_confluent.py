"""Round trips through librdkafka (confluent-kafka-python 1.7 / librdkafka 2.0.2)."""

import time

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, Producer, TopicPartition

import kproto as K
import sluice_helpers as H


def check_offsets_for_times_and_watermarks(bootstrap, topic, expected):
    """expected: {(p, o): {..., timestamp}}; verifies ListOffsets(timestamp) and watermarks."""
    per = {}
    for (p, o), r in expected.items():
        per.setdefault(p, []).append((o, r["timestamp"]))
    c = H.make_consumer(bootstrap)
    try:
        checked = 0
        for p, recs in sorted(per.items()):
            recs.sort()
            low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
            assert (low, high) == (0, len(recs)), "watermarks of partition %d: got %r expected %r" % (
                p, (low, high), (0, len(recs)))

            def first_at_or_after(ts):
                for o, t in recs:
                    if t >= ts:
                        return o
                return -1  # no such record: the broker answers offset -1

            tss = [t for _, t in recs]
            mid = recs[len(recs) // 2][1]
            queries = [min(tss) - 1000, recs[0][1], mid, mid + 1, recs[-1][1], max(tss) + 1]
            if len(recs) > 3:
                queries.append(recs[len(recs) // 3][1] - 1)
            tps = [TopicPartition(topic, p, q) for q in queries]
            # One request per query keeps the answer unambiguous.
            for q, tp in zip(queries, tps):
                res = c.offsets_for_times([tp], timeout=10)
                assert len(res) == 1 and res[0].partition == p
                assert res[0].error is None, "offsets_for_times(%d) error %r" % (q, res[0].error)
                want = first_at_or_after(q)
                assert res[0].offset == want, "partition %d: offsets_for_times(%d) returned %d, expected %d" % (
                    p, q, res[0].offset, want)
                checked += 1
        return checked
    finally:
        c.close()


@pytest.mark.slow
def test_100k_keyed_records_roundtrip(broker, topic_name):
    n, parts = 100_000, 8
    md = H.create_topic(broker.bootstrap, topic_name, parts)
    t = md.topics[topic_name]
    assert sorted(t.partitions) == list(range(parts))

    base = H.now_ms() - 300_000
    records = [dict(key=H.key_for(i), value=H.value_for(i), headers=H.headers_for(i), timestamp=base + i)
               for i in range(n)]
    assert len({r["key"] for r in records}) == n and len({r["value"] for r in records}) == n

    producer = Producer(H.producer_conf(broker.bootstrap, **{"batch.num.messages": 10000}))
    t0 = time.monotonic()
    dr = H.produce_all(producer, topic_name, records, timeout=90)
    produce_secs = time.monotonic() - t0

    expected = {}
    for r, d in zip(records, dr):
        assert d.timestamp == (TIMESTAMP_CREATE_TIME, r["timestamp"]), (d, r["timestamp"])
        assert 0 <= d.partition < parts
        pos = (d.partition, d.offset)
        assert pos not in expected, "two records acknowledged at the same position %r" % (pos,)
        expected[pos] = r
    assert len(expected) == n
    H.assert_contiguous(expected, "acknowledged offsets")
    counts = H.counts_by_partition(expected)
    assert sorted(counts) == list(range(parts)), "keyed records did not reach all partitions: %r" % counts

    t0 = time.monotonic()
    got = H.consume_all(broker.bootstrap, topic_name, counts, timeout=90)
    consume_secs = time.monotonic() - t0
    assert len(got) == n
    H.assert_records_match(expected, got)
    # Within a partition the consumer must see offsets in increasing order.
    last = {}
    for r in got:
        assert r["offset"] > last.get(r["partition"], -1), "out-of-order delivery in partition %d" % r["partition"]
        last[r["partition"]] = r["offset"]

    assert check_offsets_for_times_and_watermarks(broker.bootstrap, topic_name, expected) >= parts * 6
    print("100k round trip: produce %.1fs, consume %.1fs" % (produce_secs, consume_secs))


def test_offsets_for_times_and_watermarks(broker, topic_name):
    parts, per_part = 3, 700
    H.create_topic(broker.bootstrap, topic_name, parts)
    base = H.now_ms() - 100_000
    records = []
    for i in range(parts * per_part):
        # Timestamps grow in steps of 10 ms so that ts+1 lies strictly between records.
        records.append(dict(key=H.key_for(i), value=H.value_for(i), headers=H.headers_for(i),
                            timestamp=base + 10 * i, partition=i % parts))
    producer = Producer(H.producer_conf(broker.bootstrap))
    dr = H.produce_all(producer, topic_name, records)
    expected = {(d.partition, d.offset): r for r, d in zip(records, dr)}
    assert all(d.partition == r["partition"] for r, d in zip(records, dr))
    H.assert_contiguous(expected)
    assert H.counts_by_partition(expected) == {p: per_part for p in range(parts)}
    assert check_offsets_for_times_and_watermarks(broker.bootstrap, topic_name, expected) == parts * 7


def test_metadata_describes_the_brokers(broker, topic_name):
    """One broker, or each broker of a shared-mode cluster (its bootstrap list names them all)."""
    H.create_topic(broker.bootstrap, topic_name, 8)
    md = H.admin_client(broker.bootstrap).list_topics(timeout=10)
    want = sorted(("127.0.0.1", int(a.rsplit(":", 1)[1])) for a in broker.bootstrap.split(","))
    assert sorted((b.host, b.port) for b in md.brokers.values()) == want, md.brokers
    assert md.controller_id in md.brokers
    t = md.topics[topic_name]
    assert t.error is None
    assert sorted(t.partitions) == list(range(8))
    for pid, p in t.partitions.items():
        assert p.leader in md.brokers
        assert list(p.replicas) == [p.leader]
        assert list(p.isrs) == [p.leader]
    # A topic that does not exist is not invented by a metadata request.
    assert "no-such-topic-" + topic_name not in H.list_topic_names(broker.bootstrap)


def test_edge_case_records(broker, topic_name):
    """Null/empty keys and values, duplicate and null header values, tiny/old timestamps."""
    H.create_topic(broker.bootstrap, topic_name, 1)
    base = H.now_ms() - 50_000
    cases = [
        dict(key=None, value=b"null key"),
        dict(key=b"null value", value=None),
        dict(key=b"", value=b""),
        dict(key=b"dup headers", value=b"x", headers=[("a", b"1"), ("a", b"2"), ("b", b"")]),
        dict(key=b"null header value", value=b"y", headers=[("n", None)]),
        dict(key=b"\x00\xff" * 10, value=bytes(range(256)) * 4),
        dict(key=b"old timestamp", value=b"z", timestamp=1000),
        dict(key=b"k" * 2000, value=b"v" * 100_000),
    ]
    for i, c in enumerate(cases):
        c.setdefault("headers", None)
        c.setdefault("timestamp", base + i)
        c["partition"] = 0
    producer = Producer(H.producer_conf(broker.bootstrap, **{"linger.ms": 50}))
    dr = H.produce_all(producer, topic_name, cases)
    expected = {}
    for c, d in zip(cases, dr):
        expected[(d.partition, d.offset)] = dict(key=c["key"], value=c["value"], headers=c["headers"],
                                                 timestamp=c["timestamp"])
    H.assert_contiguous(expected)
    got = H.consume_all(broker.bootstrap, topic_name, {0: len(cases)})
    H.assert_records_match(expected, got)

    # The same data seen through a hand-written Fetch v4 (CRC-32C verified).
    with K.Conn(broker.bootstrap) as conn:
        recs, hw = K.fetch_all_v4(conn, topic_name, 0)
    assert hw == len(cases)
    assert [r.offset for r in recs] == list(range(len(cases)))
    for r in recs:
        e = expected[(0, r.offset)]
        assert (r.key, r.value, r.timestamp, r.timestamp_type) == (e["key"], e["value"], e["timestamp"], 0)
        assert r.headers == (e["headers"] or [])
