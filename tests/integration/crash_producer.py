"""Helper process for test_crash.py (not a test module).

Produces continuously with acks=all (librdkafka) until killed or until
--seconds elapse, and prints one line per *acknowledged* record:
    BASE <base timestamp ms>          (first line; record seq has timestamp base+seq)
    ACK <partition> <offset> <seq>
Key and value are derived from <seq> (see sluice_helpers.key_for/value_for with
salt b"crash"), so the parent can check content without this process sending
it.  Lines go straight to the stdout file descriptor (no buffering); a SIGKILL
can at worst cut the last line short (the parent ignores an unterminated last
line) or lose acknowledgements not yet written, which only makes the parent's
check weaker, never wrong.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from confluent_kafka import Producer  # noqa: E402

import expansion_helpers as X  # noqa: E402
import sluice_helpers as H  # noqa: E402


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    ap.add_argument("topic")
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--start-seq", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=30.0)
    # Bounded rate keeps the verification after the crash quick (a local broker can ack
    # ~100k records/s, which would make the read-back dominate the test's runtime).
    ap.add_argument("--rate", type=float, default=10000.0, help="records per second")
    # json: expansion_helpers' JSON events (keys and values, no headers), for tests of
    # expansions; crash: the records test_crash.py checks byte for byte.
    ap.add_argument("--values", choices=["crash", "json"], default="crash")
    # Idempotence on (test_idempotence_crash.py): the producer outlives broker restarts,
    # retrying for up to a minute, and flushes everything before it exits.
    ap.add_argument("--idempotent", action="store_true")
    args = ap.parse_args()

    out = sys.stdout.buffer
    acked = []

    def cb(err, msg, seq):
        if err is None:
            acked.append(b"ACK %d %d %d\n" % (msg.partition(), msg.offset(), seq))
        else:
            acked.append(b"ERR %d %s\n" % (seq, str(err.code()).encode()))

    p = Producer(H.producer_conf(args.bootstrap, **{
        "linger.ms": 2,
        "batch.size": 65536,  # a batch must fit in the test topic's 256 KiB segments
        "message.timeout.ms": 10000,
        "reconnect.backoff.ms": 100,
        "reconnect.backoff.max.ms": 500,
        **({"enable.idempotence": True, "message.timeout.ms": 60000} if args.idempotent else {}),
    }))
    seq = args.start_seq
    end = time.monotonic() + args.seconds
    # Record seq's timestamp is base+seq: counted from start_seq, it stays near the clock,
    # as brokers refuse timestamps more than message.timestamp.after.max.ms (one hour by
    # default, as in Kafka 4) ahead of it.
    base_ts = H.now_ms() - args.start_seq
    write_all(out.fileno(), b"BASE %d\n" % base_ts)
    t0 = time.monotonic()
    while time.monotonic() < end:
        allowed = int((time.monotonic() - t0) * args.rate) + 200
        if seq - args.start_seq >= allowed:
            p.poll(0.005)
        for _ in range(min(200, max(0, allowed - (seq - args.start_seq)))):
            if args.values == "json":
                record = dict(key=X.event_key(seq), value=X.event_value(seq))
            else:
                record = dict(key=H.key_for(seq, b"c"), value=H.value_for(seq, b"crash"),
                              headers=H.headers_for(seq, b"crash"))
            try:
                p.produce(args.topic, partition=seq % args.partitions, timestamp=base_ts + seq,
                          on_delivery=lambda e, m, s=seq: cb(e, m, s), **record)
            except BufferError:
                break
            seq += 1
        p.poll(0.01)
        if acked:
            chunk = b"".join(acked)
            del acked[:]
            write_all(out.fileno(), chunk)
    p.flush(60 if args.idempotent else 5)
    if acked:
        write_all(out.fileno(), b"".join(acked))


if __name__ == "__main__":
    main()
