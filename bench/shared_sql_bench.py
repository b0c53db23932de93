#!/usr/bin/python3
"""The same queries at two brokers in shared mode and at a single-node broker, in one run
(issues 35 and 36; docs/shared-mode.md, "SQL").

    bench/shared_sql_bench.py [--build DIR] [--events N] [--repeats R] [--keep]

`scripts/cluster up --brokers 2` (both brokers reading the topic through the
partition-log interface: the batch index in PostgreSQL, the bytes from the object store
through each broker's cache) and one single-node `sluice serve` (the local logs). The same
N JSON events (~100 bytes, 4 partitions) are produced to each (acks=all, at broker 0 for
the cluster); then, over the PostgreSQL listener, `SELECT count(*)` and a GROUP BY of a
JSON field run R times on each (after one unmeasured run, which fills broker 1's object
cache; broker 0 produced the events, so its cache holds them already); prints best-of-R
seconds, each shared broker's ratio to single node, and a RESULT line.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg2
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parents[1]
TOPIC = "events"
PARTITIONS = 4
QUERIES = {
    "count": 'SELECT count(*) FROM kafka_topics."%s"' % TOPIC,
    "group_by": "SELECT value ->> '$.kind' AS kind, count(*) AS n, sum((value ->> '$.n')::BIGINT) AS s "
                'FROM kafka_topics."%s" GROUP BY 1 ORDER BY 1' % TOPIC,
}


def produce(bootstrap, events):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, config={"retention.ms": "-1"})],
                                 operation_timeout=30).values():
        f.result(timeout=30)
    time.sleep(1)  # the other brokers read the topics every half second
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                  "queue.buffering.max.messages": 1000000})
    kinds = ("click", "view", "buy", "cart", "leave")
    for i in range(events):
        v = json.dumps({"kind": kinds[i % len(kinds)], "n": i, "user": "user-%06d" % (i % 5000),
                        "page": "/p/%d" % (i % 97)})
        while True:
            try:
                p.produce(TOPIC, value=v.encode(), partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(120) == 0


def timed(pg, sql, repeats):
    conn = psycopg2.connect(host=pg[0], port=pg[1], dbname="sluice", user="bench", connect_timeout=10)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(sql)  # unmeasured: fills the object cache of a broker that did not write
            answer = cur.fetchall()
            best = None
            for _ in range(repeats):
                t0 = time.perf_counter()
                cur.execute(sql)
                cur.fetchall()
                dt = time.perf_counter() - t0
                best = dt if best is None else min(best, dt)
        return best, answer
    finally:
        conn.close()


def addr(text):
    host, port = text.split("://")[-1].rsplit(":", 1)
    return host, int(port)


def single_node(sluice, work, events):
    log = work / "single.log"
    out = open(log, "wb")
    proc = subprocess.Popen([sluice, "serve", "--data-dir", str(work / "single"), "--listen", "127.0.0.1:0",
                             "--pg", "127.0.0.1:0"],
                            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        text = log.read_text(errors="replace")
        k = re.search(r"listening kafka (\S+)", text)
        pg = re.search(r"listening pg (\S+)", text)
        if k and pg:
            break
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit("shared_sql_bench: the single-node broker did not start (%s)" % log)
        time.sleep(0.1)
    produce(k.group(1).split("://")[-1], events)
    return proc, addr(pg.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--events", type=int, default=200000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    sluice = str(Path(args.build) / "sluice")
    work = Path(tempfile.mkdtemp(prefix="shared-sql-bench-"))
    env = dict(os.environ, SLUICE_BIN=sluice)
    cluster = work / "cluster"
    single = None
    try:
        r = subprocess.run([str(REPO / "scripts" / "cluster"), "up", str(cluster), "--brokers", "2"],
                           capture_output=True, text=True, env=env, timeout=600)
        if r.returncode != 0:
            sys.exit("shared_sql_bench: scripts/cluster up failed:\n" + r.stdout + r.stderr)
        brokers = {b["id"]: b for b in json.loads((cluster / "cluster.json").read_text())["brokers"]}
        t0 = time.monotonic()
        produce(brokers[0]["kafka"], args.events)
        print("produced %d events to the cluster in %.1f s" % (args.events, time.monotonic() - t0))
        single, single_pg = single_node(sluice, work, args.events)
        setups = [("shared b1", addr(brokers[1]["pg"])), ("shared b0", addr(brokers[0]["pg"])),
                  ("single", single_pg)]
        results = {}
        for q, sql in QUERIES.items():
            answers = {}
            for name, pg in setups:
                results[(q, name)], answers[name] = timed(pg, sql, args.repeats)
            norm = {n: [tuple(str(c) for c in row) for row in a] for n, a in answers.items()}
            if len(set(map(tuple, norm.values()))) != 1:
                print("shared_sql_bench: the answers differ for %s: %s" % (q, norm), file=sys.stderr)
        print("%-9s %14s %14s %14s   shared b1/single  shared b0/single" % ("query", *[n for n, _ in setups]))
        out = {}
        for q in QUERIES:
            s1, s0, nd = (results[(q, n)] for n, _ in setups)
            print("%-9s %13.3fs %13.3fs %13.3fs   %16.2f  %16.2f" % (q, s1, s0, nd, s1 / nd, s0 / nd))
            out[q] = {"shared_b1_s": round(s1, 4), "shared_b0_s": round(s0, 4), "single_s": round(nd, 4),
                      "shared_b1_vs_single": round(s1 / nd, 2), "shared_b0_vs_single": round(s0 / nd, 2)}
        print("RESULT " + json.dumps({"events": args.events, "repeats": args.repeats, "queries": out}))
    finally:
        if single is not None:
            single.terminate()
            single.wait(timeout=30)
        subprocess.run([str(REPO / "scripts" / "cluster"), "down", str(cluster)], capture_output=True, timeout=120)
        if args.keep:
            print("kept " + str(work))
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
