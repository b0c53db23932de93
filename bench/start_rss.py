#!/usr/bin/python3
"""Start time and idle memory of `sluice serve` (docs/design/sql-engine.md, "DuckDB the
default" and "DuckDB opened on first need"):

    bench/start_rss.py [--bin build/sluice] [--runs 5] [--idle 3]

For each case, --runs times: a new data directory, a first start, then a restart on it;
each start timed from exec to the `listening kafka` line, then VmRSS read after --idle
seconds. Prints the median of each, and whether DuckDB's database file exists.
Cases: Kafka only; Kafka only on a data directory with an expansion (made by a start with
--http that creates a topic and an expansion of it); Kafka with --pg and --http."""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

SQL = ["--pg", "127.0.0.1:0", "--http", "127.0.0.1:0"]


def start(binary, data, extra):
    """(process, ms from exec to `listening kafka`, {kind: address})."""
    t0 = time.monotonic()
    p = subprocess.Popen([binary, "serve", "--data-dir", str(data), "--listen", "127.0.0.1:0", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ms, where = None, {}
    want = 1 + sum(a in ("--pg", "--http") for a in extra)
    for line in p.stdout:
        parts = line.split()
        if len(parts) == 3 and parts[0] == "listening":
            if parts[1] == "kafka" and ms is None:
                ms = (time.monotonic() - t0) * 1000
            where[parts[1]] = parts[2]
            if len(where) == want:
                break
    if ms is None:
        raise SystemExit("the broker did not start: %s" % p.wait())
    return p, ms, where


def rss_after(p, idle):
    time.sleep(idle)
    for line in Path("/proc/%d/status" % p.pid).read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise SystemExit("no VmRSS")


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.stdout.close()
    if p.wait(timeout=60) != 0:
        raise SystemExit("the broker exited %d" % p.returncode)


def post(http, path, body, ctype):
    req = urllib.request.Request("http://%s%s" % (http, path), data=body.encode(), method="POST",
                                 headers={"Content-Type": ctype})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read()


def with_expansion(binary, data):
    """A data directory whose catalog has a topic with an expansion."""
    p, _, where = start(binary, data, ["--http", "127.0.0.1:0"])
    subprocess.run([binary, "topic", "create", "events", "--partitions", "2", "--bootstrap", where["kafka"]],
                   check=True, capture_output=True, timeout=60)
    post(where["http"], "/v1/expansions", json.dumps(
        {"topic": "events", "target": "shop.events",
         "schema": {"fields": [{"name": "n", "type": "int64"}]}}), "application/json")
    stop(p)


def measure(binary, extra, prepare, runs, idle):
    got = {"first": [], "restart": [], "rss": [], "rss_restart": []}
    duck = []
    for _ in range(runs):
        d = Path(tempfile.mkdtemp(prefix="sluice-start-"))
        try:
            if prepare:
                prepare(binary, d / "data")
            for kind in ("first", "restart"):
                p, ms, _ = start(binary, d / "data", extra)
                rss = rss_after(p, idle)
                stop(p)
                got[kind].append(ms)
                got["rss" if kind == "first" else "rss_restart"].append(rss)
            duck.append((d / "data" / "sql-duck" / "sluice.duckdb").exists())
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return {k: round(statistics.median(v), 1) for k, v in got.items()} | {"duckdb_file": all(duck)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("SLUICE_BIN", "build/sluice"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--idle", type=float, default=3.0)
    a = ap.parse_args()
    cases = [("kafka only", [], None), ("kafka only, an expansion", [], with_expansion),
             ("kafka, pg, http", SQL, None)]
    for name, extra, prepare in cases:
        print(name, json.dumps(measure(a.bin, extra, prepare, a.runs, a.idle)), flush=True)


if __name__ == "__main__":
    main()
