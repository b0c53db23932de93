#!/usr/bin/python3
"""Reading a partition's tail in shared mode from the object store, from the read cache's
disk tier and from its memory tier (docs/shared-mode.md, "The read cache").

    bench/shared_cache_bench.py [--mb 64] [--record-bytes 1000] [--keep]

Starts `scripts/cluster up DIR --brokers 1` (background work off, so that no merge moves
the batches between passes), produces --mb MB into a one-partition topic through the
broker (whose uploads fill both tiers), then reads the partition from offset 0 to its end
with Kafka Fetch v4 requests (1 MB each, shared_latency.Fetcher) three times:

- store:  the broker killed and started again with --shared-disk-cache-bytes 0, so every
          range is a GET to the S3 server (s3proxy on this machine: no network between);
- disk:   killed and started again with the disk tier on: it finds the entries its
          uploads left and reads them (the memory tier starts empty);
- memory: the same read again in that process (the disk hits went into memory).

Prints per pass: MB/s, p50/p99 of one fetch in ms, and the store GETs and cache hits the
broker's GET /metrics counted; then one RESULT line.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from shared_latency import Fetcher, pct

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from cluster_helpers import broker_metrics, state  # noqa: E402

TOPIC = "tail"


def cluster(*args, env):
    r = subprocess.run([str(ROOT / "scripts" / "cluster"), *map(str, args)], env=env,
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit("scripts/cluster %s failed:\n%s%s" % (args[0], r.stdout, r.stderr))


def broker(d):
    return state(d)["brokers"][0]


def metrics(d):
    return broker_metrics(d, 0)


def produce(bootstrap, mb, record_bytes):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)], operation_timeout=30)[TOPIC].result(timeout=30)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                  "batch.size": 1 << 20, "compression.type": "none"})
    value = os.urandom(record_bytes // 2).hex().encode()[:record_bytes]
    failed = []
    for _ in range(mb * (1 << 20) // record_bytes):
        while True:
            try:
                p.produce(TOPIC, value, partition=0,
                          on_delivery=lambda err, _m: err is not None and failed.append(err))
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    if p.flush(120) != 0 or failed:
        raise SystemExit("produce failed: %s" % failed[:3])


def read_all(addr):
    """Fetches the partition from offset 0 to its high watermark; (seconds, bytes, ms of
    each fetch)."""
    f = Fetcher(addr, TOPIC, 0)
    offset, hw, total, each = 0, 1, 0, []
    start = time.monotonic()
    while offset < hw:
        t = time.monotonic()
        err, hw, last = f.fetch(offset)
        each.append((time.monotonic() - t) * 1000)
        if err:
            raise SystemExit("Fetch at offset %d answered error %d" % (offset, err))
        total += f.last_bytes
        if last >= offset:
            offset = last + 1
    return time.monotonic() - start, total, each


def one_pass(d, name, before=None):
    m0 = before if before is not None else metrics(d)
    secs, nbytes, each = read_all(broker(d)["kafka"])
    m1 = metrics(d)

    def delta(series):
        return m1.get(series, 0) - m0.get(series, 0)
    gets = delta('sluice_object_store_requests_total{operation="GET",outcome="ok"}')
    row = {"pass": name, "mb_s": nbytes / secs / 1e6, "fetches": len(each),
           "p50_ms": pct(each, 0.5), "p99_ms": pct(each, 0.99), "gets": int(gets),
           "memory_hits": int(delta('sluice_object_cache_hits_total{tier="memory"}')),
           "disk_hits": int(delta('sluice_object_cache_hits_total{tier="disk"}'))}
    print("%-7s %7.1f MB/s  %5d fetches  fetch p50 %6.2f ms  p99 %6.2f ms  store GETs %5d  "
          "memory hits %5d  disk hits %5d" % (name, row["mb_s"], row["fetches"], row["p50_ms"],
                                              row["p99_ms"], row["gets"], row["memory_hits"],
                                              row["disk_hits"]), flush=True)
    return row, m1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=64, help="MB produced, then read in each pass")
    ap.add_argument("--record-bytes", type=int, default=1000)
    ap.add_argument("--keep", action="store_true", help="keep the scratch dir")
    a = ap.parse_args()
    env = dict(os.environ, SLUICE_BIN=os.environ.get("SLUICE_BIN", str(ROOT / "build" / "sluice")))
    work = Path(tempfile.mkdtemp(prefix="sluice-cache-bench-"))
    d = work / "cluster"
    try:
        cluster("up", d, "--brokers", 1, "--lease-ms", 1000, "--",
                "--maintenance-interval-ms", 86400000, env=env)
        produce(broker(d)["kafka"], a.mb, a.record_bytes)
        time.sleep(1)  # the disk tier's writer finishes the uploads' ranges
        rows = []
        cluster("kill", d, 0, env=env)
        cluster("start", d, 0, "--", "--shared-disk-cache-bytes", 0, env=env)
        rows.append(one_pass(d, "store")[0])
        cluster("kill", d, 0, env=env)
        cluster("start", d, 0, env=env)
        row, m = one_pass(d, "disk")
        rows.append(row)
        rows.append(one_pass(d, "memory", m)[0])
        print("RESULT " + " ".join("%s_%s=%s" % (r["pass"], k, round(v, 2) if isinstance(v, float) else v)
                                   for r in rows for k, v in r.items() if k != "pass"))
    finally:
        if (d / "cluster.json").exists():
            subprocess.run([str(ROOT / "scripts" / "cluster"), "down", str(d)], env=env,
                           capture_output=True, timeout=300)
        if a.keep:
            print("kept", work, file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
