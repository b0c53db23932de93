#!/usr/bin/python3
"""Whether one slow database query stalls a shared-mode broker's other connections.

    bench/shared_loop_stall.py --kafka HOST:PORT --postgres URL --topic T [--hold-s 3]

Holds an ACCESS EXCLUSIVE lock on sluice_batches for --hold-s seconds (every read of the
batch index waits on it, as on a database that is slow to answer), starts a consumer
fetching partition 0 of the topic from offset 0 (its Fetch waits on the lock), and
meanwhile sends ApiVersions on another connection every 20 ms. Prints the ApiVersions
round trips (p50, p99, max, in ms) and how long the fetch took to return its first
record, and one machine-readable RESULT line. The topic must exist and hold records.
"""

import argparse
import socket
import struct
import threading
import time
from urllib.parse import urlparse

import psycopg2
from confluent_kafka import Consumer, TopicPartition


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def api_versions_rtt(sock, corr):
    client = b"stall-probe"
    body = struct.pack(">hhih", 18, 0, corr, len(client)) + client
    start = time.monotonic()
    sock.sendall(struct.pack(">i", len(body)) + body)
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    got = recv_exact(sock, size)
    assert struct.unpack(">i", got[:4])[0] == corr
    return (time.monotonic() - start) * 1000


def recv_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kafka", required=True)
    ap.add_argument("--postgres", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--hold-s", type=float, default=3.0)
    a = ap.parse_args()
    host, port = a.kafka.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    api_versions_rtt(sock, 0)  # connected and answered once
    u = urlparse(a.postgres)
    db = psycopg2.connect(host=u.hostname, port=u.port, user=u.username, password=u.password,
                          dbname=u.path.lstrip("/"))
    cur = db.cursor()
    cur.execute("LOCK TABLE sluice_batches IN ACCESS EXCLUSIVE MODE")
    locked_at = time.monotonic()
    fetched = {}

    def fetch():
        c = Consumer({"bootstrap.servers": a.kafka, "group.id": "stall-%f" % time.time(),
                      "enable.auto.commit": False})
        c.assign([TopicPartition(a.topic, 0, 0)])
        start = time.monotonic()
        while time.monotonic() - start < 60:
            m = c.poll(0.2)
            if m is not None and not m.error():
                fetched["ms"] = (time.monotonic() - start) * 1000
                break
        c.close()

    # The lock is released after --hold-s whatever the broker does meanwhile.
    release = threading.Timer(a.hold_s, db.commit)
    release.start()
    t = threading.Thread(target=fetch)
    t.start()
    time.sleep(0.3)  # the consumer's fetch reaches the broker and waits on the lock
    rtts, corr = [], 1
    while time.monotonic() - locked_at < a.hold_s:
        rtts.append(api_versions_rtt(sock, corr))
        corr += 1
        time.sleep(0.02)
    release.join()
    t.join()
    db.close()
    sock.close()
    print("ApiVersions while a fetch waits %.1f s on the database: %d requests, p50 %.1f ms, "
          "p99 %.1f ms, max %.1f ms; the fetch returned after %.0f ms" %
          (a.hold_s, len(rtts), pct(rtts, 0.5), pct(rtts, 0.99), max(rtts), fetched.get("ms", -1)))
    print("RESULT requests=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f fetch_ms=%.0f" %
          (len(rtts), pct(rtts, 0.5), pct(rtts, 0.99), max(rtts), fetched.get("ms", -1)))


if __name__ == "__main__":
    main()
