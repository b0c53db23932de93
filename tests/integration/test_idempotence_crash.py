"""The decisive idempotence test: several librdkafka producers with enable.idempotence
at acks=all keep producing while the broker is killed with kill -9 and restarted several
times on the same port. Their retries after each restart must not duplicate records;
afterwards every partition holds each producer's records exactly once, in the order it
sent them, with no gap, and every acknowledged record at the offset it was given."""

import socket
import time

import sluice_helpers as H

PRODUCERS = 4
PARTS = 3
SPAN = 10_000_000  # producer k sends sequences k * SPAN, k * SPAN + 1, ...


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_kill9_restarts_leave_each_record_exactly_once(broker_factory, topic_name, procs, tmp_path):
    broker = broker_factory(listen="127.0.0.1:%d" % free_port())
    H.create_topic(broker.bootstrap, topic_name, PARTS, config={"segment.bytes": "262144"})
    seconds = 14
    producers = [H.ProducerProc(broker.bootstrap, topic_name, PARTS, k * SPAN,
                                tmp_path / ("producer-%d.log" % k), procs, seconds=seconds,
                                extra=["--idempotent", "--rate", "1500"])
                 for k in range(PRODUCERS)]
    t0 = time.monotonic()
    kills = 0
    for at in (2.5, 5.5, 8.5):
        while time.monotonic() - t0 < at:
            time.sleep(0.05)
        assert all(pp.ack_count() > 0 for pp in producers), "acks are not flowing"
        broker.kill9()
        kills += 1
        time.sleep(0.5)  # requests in flight fail; librdkafka retries them after the restart
        broker.start()
    for pp in producers:
        pp.proc.wait(timeout=seconds + 90)
    acked = {}  # (partition, offset) -> seq
    for k, pp in enumerate(producers):
        base, acks = pp.finish()
        errs = [ln for ln in pp.lines if ln.startswith(b"ERR ")]
        assert not errs, "producer %d had failed deliveries: %r" % (k, errs[:5])
        assert len(acks) > 1000, (k, len(acks))
        for p, o, seq in acks:
            assert (p, o) not in acked, "two records acknowledged at %r" % ((p, o),)
            acked[(p, o)] = seq
    highs = H.high_watermarks(broker.bootstrap, topic_name, PARTS)
    got = H.consume_all(broker.bootstrap, topic_name, highs, timeout=120)
    stored = {(r["partition"], r["offset"]): int(r["key"][1:]) for r in got}
    assert len(stored) == len(got) == sum(highs.values())
    # Every acknowledged record is where its acknowledgement said.
    wrong = [(pos, seq, stored.get(pos)) for pos, seq in acked.items() if stored.get(pos) != seq]
    assert not wrong, "%d acknowledged records missing or moved, first: %r" % (len(wrong), wrong[:5])
    # Each producer's records in each partition: once each, in order, no gap.
    for p in range(PARTS):
        seqs = [seq for (part, _), seq in sorted(stored.items()) if part == p]
        for k in range(PRODUCERS):
            mine = [s for s in seqs if s // SPAN == k]
            first = k * SPAN + (p - k * SPAN) % PARTS  # crash_producer sends seq to seq % PARTS
            expect = list(range(first, first + PARTS * len(mine), PARTS))
            assert mine == expect, "partition %d, producer %d: %d records, first differences %r" % (
                p, k, len(mine), [(a, b) for a, b in zip(mine, expect) if a != b][:5])
            sent = [s for (part, _), s in acked.items() if part == p and s // SPAN == k]
            assert len(mine) == len(sent), (p, k, len(mine), len(sent))
    print("%d kills; %d records acknowledged, %d stored" % (kills, len(acked), len(stored)))
