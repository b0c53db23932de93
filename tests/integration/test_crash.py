"""kill -9 mid-stream: every acks=all acknowledged record survives, intact, at its offset."""

import time
from pathlib import Path

from confluent_kafka import TIMESTAMP_CREATE_TIME, Producer, TopicPartition

import sluice_helpers as H

HERE = Path(__file__).resolve().parent


def expected_record(seq, base):
    return dict(key=H.key_for(seq, b"c"), value=H.value_for(seq, b"crash"),
                headers=H.headers_for(seq, b"crash"), timestamp=base + seq)

def test_kill9_keeps_acknowledged_records(broker, topic_name, procs, tmp_path):
    parts = 4
    H.create_topic(broker.bootstrap, topic_name, parts, config={"segment.bytes": "262144"})
    acked = {}      # (partition, offset) -> seq
    bases = {}      # seq range start -> base timestamp
    for cycle in range(2):
        start_seq = cycle * 10_000_000
        pp = H.ProducerProc(broker.bootstrap, topic_name, parts, start_seq, tmp_path / ("producer-%d.log" % cycle),
                          procs)
        t0 = time.monotonic()
        # Let it run ~2 s, and make sure acknowledgements are flowing before the kill.
        while time.monotonic() - t0 < 2.0 or pp.ack_count() < 200:
            assert time.monotonic() - t0 < 25, "producer got only %d acks in 25s (stderr: %s)" % (
                pp.ack_count(), H.tail(pp.log_path))
            assert pp.proc.poll() is None, "producer exited early: %s" % H.tail(pp.log_path)
            time.sleep(0.05)
        broker.kill9()
        time.sleep(1.0)  # in-flight requests now fail; nothing more can be acknowledged
        base, acks = pp.finish()
        assert base is not None and len(acks) >= 200, (base, len(acks))
        bases[start_seq] = base
        for p, o, seq in acks:
            prev = acked.get((p, o))
            assert prev is None or prev == seq, "two different records acknowledged at %r: seq %d and %d" % (
                (p, o), prev, seq)
            acked[(p, o)] = seq
        print("cycle %d: %d acknowledged records before kill -9" % (cycle, len(acks)))

        broker.start()
        verify(broker, topic_name, parts, acked, bases)

    # After the crashes the log is writable and offsets continue from the end.
    c = H.make_consumer(broker.bootstrap)
    try:
        highs = {p: c.get_watermark_offsets(TopicPartition(topic_name, p), timeout=10, cached=False)[1]
                 for p in range(parts)}
    finally:
        c.close()
    producer = Producer(H.producer_conf(broker.bootstrap))
    for p in range(parts):
        d = H.produce_one(producer, topic_name, b"after-crash", b"v%d" % p, partition=p)
        assert d.err is None and d.offset == highs[p], (p, d, highs[p])

def verify(broker, topic, parts, acked, bases):
    c = H.make_consumer(broker.bootstrap)
    try:
        highs = {}
        for p in range(parts):
            low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
            assert low == 0
            highs[p] = high
    finally:
        c.close()
    for (p, o), seq in acked.items():
        assert o < highs[p], "acknowledged offset %d in partition %d is beyond the high watermark %d after restart" % (
            o, p, highs[p])
    got = H.consume_all(broker.bootstrap, topic, highs, timeout=90)
    by_pos = {(r["partition"], r["offset"]): r for r in got}
    assert len(by_pos) == len(got) == sum(highs.values())
    H.assert_contiguous(by_pos, "records after restart")

    def base_for(seq):
        return bases[(seq // 10_000_000) * 10_000_000]

    # Every acknowledged record is there, intact, at its offset.
    bad = []
    for pos, seq in sorted(acked.items()):
        r = by_pos[pos]
        e = expected_record(seq, base_for(seq))
        if (r["key"], r["value"], r["headers"], r["timestamp_type"], r["timestamp"]) != (
                e["key"], e["value"], e["headers"], TIMESTAMP_CREATE_TIME, e["timestamp"]):
            bad.append((pos, seq, r["key"]))
    assert not bad, "%d acknowledged records damaged or misplaced, first: %r" % (len(bad), bad[:5])
    # Records that were stored but not acknowledged must still be whole records of ours.
    for pos, r in by_pos.items():
        k = r["key"]
        assert k.startswith(b"c") and k[1:].isdigit(), "unexpected key %r at %r" % (k, pos)
        seq = int(k[1:])
        e = expected_record(seq, base_for(seq))
        assert (r["value"], r["headers"]) == (e["value"], e["headers"]), "torn record at %r" % (pos,)
        assert pos[0] == seq % parts
