#!/usr/bin/python3
"""Compressed produce and consume against one Sluice broker, in one run: JSON records
uncompressed, lz4 and zstd (as producers send them), and uncompressed into a topic with
compression.type=zstd (the broker compresses).  For each: payload MB/s of produce
(acks=-1, 8 requests in flight on one connection) and of consume (Fetch of everything
from offset 0), bytes on disk, and broker CPU seconds per GB of payload (utime+stime of
the broker process from /proc).  Batches are built and compressed before the clock
starts, so the figures are the broker's, not the Python client's.

Usage: bench/compression_bench.py [--sluice build/sluice] [--mb 100] [--batch-records 1000]
Needs Debian's python3-lz4 and python3-zstandard (scripts/install-deps.sh test).
MB = 10^6 bytes of record values (keys are ~8 bytes and not counted)."""

import argparse
import json
import os
import random
import subprocess
import sys
import time

from bench_broker import cpu_seconds, sluice_broker

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import kproto as K  # noqa: E402

IN_FLIGHT = 8


def json_records(n, rng):
    pages = ["/", "/cart", "/checkout", "/search", "/products/%d", "/account"]
    out = []
    for i in range(n):
        page = rng.choice(pages)
        out.append(json.dumps({
            "event_id": "%016x" % rng.getrandbits(64), "seq": i, "ts": 1764633600000 + i * 7,
            "user": "user-%d" % rng.randrange(50000), "type": rng.choice(["view", "click", "add", "buy"]),
            "page": page % rng.randrange(10000) if "%d" in page else page,
            "amount": round(rng.random() * 300, 2) if rng.random() < 0.2 else None,
            "agent": rng.choice(["Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0",
                                 "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) Safari/605.1.15",
                                 "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/131.0"]),
        }).encode())
    return out


def produce_body(topic, batch):
    return (K.nullable_string(None) + K.i16(-1) + K.i32(30000)
            + K.i32(1) + K.string(topic) + K.i32(1) + K.i32(0) + K.kbytes(batch))


def check_produce(r):
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            r.i32()
            err = r.i16()
            assert err == 0, "produce error %d" % err
            r.i64(), r.i64(), r.i64()


def produce(bootstrap, topic, batches):
    with K.Conn(bootstrap, timeout=60) as conn:
        pending = 0
        for b in batches:
            conn.send_request(K.PRODUCE, 7, produce_body(topic, b))
            pending += 1
            if pending == IN_FLIGHT:
                check_produce(K.Reader(conn.recv_frame()[4:]))
                pending -= 1
        while pending:
            check_produce(K.Reader(conn.recv_frame()[4:]))
            pending -= 1


def consume(bootstrap, topic, end):
    offset, nbytes, codecs = 0, 0, set()
    with K.Conn(bootstrap, timeout=60) as conn:
        while offset < end:
            p = K.fetch_v4(conn, topic, 0, offset, max_bytes=8 << 20)
            data = p["records"] or b""
            pos = 0
            while len(data) - pos >= 61:  # walk whole batch headers only; no decoding
                size = 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
                if pos + size > len(data):
                    break
                codecs.add(data[pos + 22] & 7)
                offset = int.from_bytes(data[pos:pos + 8], "big") + int.from_bytes(data[pos + 23:pos + 27], "big") + 1
                pos += size
            nbytes += pos
    return nbytes, codecs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", default="build/sluice")
    ap.add_argument("--mb", type=int, default=100, help="MB of payload per case")
    ap.add_argument("--batch-records", type=int, default=1000)
    a = ap.parse_args()

    rng = random.Random(42)
    # Eight distinct sets of records, reused batch after batch: building 100 MB of JSON
    # in Python would take longer than the measurement, and each batch is compressed on
    # its own, so reuse across batches does not help any codec.
    record_sets = [json_records(a.batch_records, rng) for _ in range(8)]
    avg = sum(len(v) for vals in record_sets for v in vals) / (8 * a.batch_records)
    n_batches = max(1, int(a.mb * 1e6 / (avg * a.batch_records)))
    print("records: %d per batch, %.0f bytes of JSON on average, %d batches per case"
          % (a.batch_records, avg, n_batches))

    def batches(codec):
        out, payload = [], 0
        for n in range(n_batches):
            vals = record_sets[n % 8]
            recs = [(1764633600000 + i, b"k%07d" % i, v, []) for i, v in enumerate(vals)]
            out.append(K.encode_batch(recs, compression=codec))
            payload += sum(len(v) for v in vals)
        return out, payload

    with sluice_broker(a.sluice) as (proc, bootstrap, data):
        cases = [("uncompressed", 0, None), ("lz4", K.LZ4, None), ("zstd", K.ZSTD, None),
                 ("uncompressed -> topic zstd", 0, "zstd")]
        rows = []
        for name, codec, topic_codec in cases:
            topic = "bench-" + name.replace(" ", "").replace(">", "").replace("-", "")
            cfg = {"compression.type": topic_codec} if topic_codec else {}
            subprocess.run([a.sluice, "topic", "create", topic, "--bootstrap", bootstrap, "--partitions", "1"]
                           + sum((["--config", "%s=%s" % kv] for kv in cfg.items()), []),
                           check=True, stdout=subprocess.DEVNULL)
            bs, payload = batches(codec)
            cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
            produce(bootstrap, topic, bs)
            t1, cpu1 = time.monotonic(), cpu_seconds(proc.pid)
            fetched, codecs = consume(bootstrap, topic, n_batches * a.batch_records)
            t2, cpu2 = time.monotonic(), cpu_seconds(proc.pid)
            disk = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(os.path.join(data, "logs"))
                       if os.path.basename(d).startswith(topic) for f in fs if f.endswith(".log"))
            rows.append((name, payload / 1e6 / (t1 - t0), (cpu1 - cpu0) / (payload / 1e9),
                         payload / 1e6 / (t2 - t1), (cpu2 - cpu1) / (payload / 1e9), disk, payload, codecs))
        print()
        print("| case | produce MB/s | broker CPU s/GB (produce) | consume MB/s | broker CPU s/GB (consume) "
              "| bytes on disk | of payload | stored codecs |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for name, pm, pc, cm, cc, disk, payload, codecs in rows:
            print("| %s | %.0f | %.2f | %.0f | %.2f | %s | %.1f%% | %s |" % (
                name, pm, pc, cm, cc, format(disk, ","), 100.0 * disk / payload,
                ",".join(K.CODEC_NAMES[c] for c in sorted(codecs))))


if __name__ == "__main__":
    main()
