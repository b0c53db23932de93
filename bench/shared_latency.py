#!/usr/bin/python3
"""End-to-end latency across brokers: a record produced (acks=all, idempotent) through
broker A, read by a consumer bootstrapped at broker B that long-polls the partition.

    bench/shared_latency.py --produce HOST:PORT --consume HOST:PORT --topic T [--count N]

Prints p50/p99 of (consumer receives - producer sends) and of the produce acknowledgement,
in ms, and one machine-readable RESULT line. The topic must exist with one partition or
more; records go to partition 0, one at a time (each waits for its acknowledgement).
"""

import argparse
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--produce", required=True)
    ap.add_argument("--consume", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--count", type=int, default=200)
    a = ap.parse_args()
    c = Consumer({"bootstrap.servers": a.consume, "group.id": "latency", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 500, "fetch.min.bytes": 1})
    lo, hi = c.get_watermark_offsets(TopicPartition(a.topic, 0), timeout=10)
    c.assign([TopicPartition(a.topic, 0, hi)])
    p = Producer({"bootstrap.servers": a.produce, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 0})
    # Warm up the connections (metadata, producer id, the consumer's first fetch).
    p.produce(a.topic, b"warm", partition=0)
    p.flush(10)
    while True:
        m = c.poll(5)
        if m is not None and not m.error():
            break
    e2e, ack = [], []
    for i in range(a.count):
        sent = time.monotonic()
        acked = []
        p.produce(a.topic, str(i).encode(), partition=0,
                  on_delivery=lambda err, msg: acked.append(time.monotonic()))
        p.poll(0)
        while True:
            m = c.poll(5)
            if m is not None and not m.error() and m.value() == str(i).encode():
                e2e.append((time.monotonic() - sent) * 1000)
                break
        p.flush(10)
        ack.append((acked[0] - sent) * 1000)
    c.close()
    print("end to end ms: p50 %.1f p99 %.1f; produce ack ms: p50 %.1f p99 %.1f" %
          (pct(e2e, 0.5), pct(e2e, 0.99), pct(ack, 0.5), pct(ack, 0.99)))
    print("RESULT e2e_p50_ms=%.1f e2e_p99_ms=%.1f ack_p50_ms=%.1f ack_p99_ms=%.1f" %
          (pct(e2e, 0.5), pct(e2e, 0.99), pct(ack, 0.5), pct(ack, 0.99)))


if __name__ == "__main__":
    main()
