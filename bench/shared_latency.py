#!/usr/bin/python3
"""End-to-end latency across brokers: a record produced (acks=all, idempotent) through
the partition's leader, read by a long-polling Fetch sent to broker B.

    bench/shared_latency.py --bootstrap HOST:PORT --consume HOST:PORT --topic T [--count N]

The producer (librdkafka) sends to the partition's leader, as clients do. The reader
sends Kafka Fetch requests (v4, max wait 500 ms, min bytes 1) straight to --consume, so
that in shared mode the record is read at a broker other than the one that took it (a
librdkafka consumer would fetch from the leader too): the partition is one whose leader
is not --consume when there is such a partition. Records go one at a time, each after the
previous one was both acknowledged and read. Prints p50/p99 of (read at B - produce()
called) and of the acknowledgement, in ms, and one machine-readable RESULT line.
"""

import argparse
import socket
import struct
import threading
import time

from confluent_kafka import Producer


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class Fetcher:
    """Fetch v4 of one partition over one connection to one broker."""

    def __init__(self, addr, topic, partition):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.topic, self.partition, self.corr = topic, partition, 0
        self.last_bytes = 0  # of the records the last fetch returned

    def _recv(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            buf += chunk
        return buf

    def fetch(self, offset, max_wait_ms=500):
        """One Fetch from `offset`; returns (error code, high watermark, last offset of
        the records returned or -1)."""
        self.corr += 1
        body = (struct.pack(">hhi", 1, 4, self.corr) + kstr("shared-latency")
                + struct.pack(">iiiib", -1, max_wait_ms, 1, 1 << 20, 0)
                + struct.pack(">i", 1) + kstr(self.topic)
                + struct.pack(">iiqi", 1, self.partition, offset, 1 << 20))
        self.sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", self._recv(4))
        resp = self._recv(size)
        pos = 4 + 4 + 4  # correlation id, throttle time, topic count (one)
        (tlen,) = struct.unpack_from(">h", resp, pos)
        pos += 2 + tlen + 4  # topic name, partition count (one)
        _, err, hw, _, naborted = struct.unpack_from(">ihqqi", resp, pos)
        pos += 4 + 2 + 8 + 8 + 4 + max(naborted, 0) * 16
        (rlen,) = struct.unpack_from(">i", resp, pos)
        pos += 4
        self.last_bytes = max(rlen, 0)
        last = -1
        end = pos + max(rlen, 0)
        while pos + 27 <= end:  # each v2 batch: base offset, length, ..., last offset delta
            base, blen = struct.unpack_from(">qi", resp, pos)
            (delta,) = struct.unpack_from(">i", resp, pos + 23)
            if pos + 12 + blen > end:
                break
            last = base + delta
            pos += 12 + blen
        return err, hw, last


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", "--produce", required=True)
    ap.add_argument("--consume", required=True, help="the broker the Fetch requests go to")
    ap.add_argument("--topic", required=True)
    ap.add_argument("--count", type=int, default=200)
    a = ap.parse_args()
    p = Producer({"bootstrap.servers": a.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 0})
    md = p.list_topics(a.topic, timeout=10)
    addr_of = {b.id: "%s:%d" % (b.host, b.port) for b in md.brokers.values()}
    reader = [i for i, addr in addr_of.items() if addr == a.consume]
    parts = sorted(md.topics[a.topic].partitions.values(), key=lambda x: x.id)
    other = [x for x in parts if not reader or x.leader != reader[0]]
    part = (other or parts)[0]
    print("partition %d: leader broker %d (%s), read at %s" %
          (part.id, part.leader, addr_of.get(part.leader), a.consume), flush=True)

    # Warm up the connections (metadata, producer id) and learn the next offset.
    offsets = []
    p.produce(a.topic, b"warm", partition=part.id, on_delivery=lambda err, msg: offsets.append(msg.offset()))
    p.flush(10)
    fetcher = Fetcher(a.consume, a.topic, part.id)
    want = offsets[0] + 1
    state = {"want": want, "seen": None, "error": None}
    cond = threading.Condition()

    def read_loop():
        try:
            while True:
                with cond:
                    while state["want"] is None or state["seen"] is not None:
                        if state["want"] == -1:
                            return
                        cond.wait()
                    offset = state["want"]
                err, _, last = fetcher.fetch(offset)
                if err:
                    raise RuntimeError("Fetch at %s answered error %d" % (a.consume, err))
                if last >= offset:
                    with cond:
                        state["seen"] = time.monotonic()
                        cond.notify_all()
        except Exception as e:  # reported by the main thread
            with cond:
                state["error"] = e
                cond.notify_all()

    t = threading.Thread(target=read_loop, daemon=True)
    t.start()
    e2e, ack = [], []
    for i in range(a.count):
        acked = []
        sent = time.monotonic()
        p.produce(a.topic, str(i).encode(), partition=part.id,
                  on_delivery=lambda err, msg: acked.append((time.monotonic(), err, msg.offset())))
        p.flush(30)
        if not acked or acked[0][1] is not None:
            raise SystemExit("record %d not acknowledged: %s" % (i, acked and acked[0][1]))
        with cond:
            deadline = time.monotonic() + 30
            while state["seen"] is None and state["error"] is None and time.monotonic() < deadline:
                cond.wait(1)
            if state["error"] is not None or state["seen"] is None:
                raise SystemExit("record %d not read at %s: %s" % (i, a.consume, state["error"] or "timeout"))
            e2e.append((state["seen"] - sent) * 1000)
            ack.append((acked[0][0] - sent) * 1000)
            state["want"], state["seen"] = acked[0][2] + 1, None
            cond.notify_all()
    with cond:
        state["want"] = -1
        cond.notify_all()
    print("end to end ms: p50 %.1f p99 %.1f; produce ack ms: p50 %.1f p99 %.1f" %
          (pct(e2e, 0.5), pct(e2e, 0.99), pct(ack, 0.5), pct(ack, 0.99)))
    print("RESULT e2e_p50_ms=%.1f e2e_p99_ms=%.1f ack_p50_ms=%.1f ack_p99_ms=%.1f leader=%d" %
          (pct(e2e, 0.5), pct(e2e, 0.99), pct(ack, 0.5), pct(ack, 0.99), part.leader))


if __name__ == "__main__":
    main()
