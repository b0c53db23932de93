#!/usr/bin/env python3
"""A topic joined with its expansion target on (_partition, _offset), in every spelling
of tests/integration/test_sql_joins.py (JOIN both ways, LEFT JOIN ... IS NULL, IN,
NOT IN, EXISTS, NOT EXISTS): the seconds each query takes over psycopg2, median and best
of --runs runs after one warm-up, with its plan.

    bench/sql_join_bench.py [--sluice build/sluice] [--records 100000] [--runs 5]

One broker in a temporary data directory, a two-partition topic of `{"n": i}` events
(librdkafka, 20 ms linger) and its target, filled before the clock starts.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import expansion_helpers as X  # noqa: E402
import sql_helpers as S  # noqa: E402
import test_sql_joins as J  # noqa: E402


def start(sluice, data):
    proc = subprocess.Popen([sluice, "serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--pg",
                             "127.0.0.1:0", "--http", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    addrs = {}
    deadline = time.monotonic() + 30
    while len(addrs) < 3 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("listening "):
            _, kind, addr = line.split()[:3]
            addrs[kind] = addr
    assert len(addrs) == 3, "the broker printed no listening lines: %r" % addrs
    return proc, addrs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", default=os.path.join(HERE, "..", "build", "sluice"))
    ap.add_argument("--records", type=int, default=J.N)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    data = tempfile.mkdtemp(prefix="sluice-joinbench-")
    proc, addrs = start(a.sluice, data)
    try:
        class B:  # what test_sql_joins' fixture reads of a broker
            bootstrap, http, pg = addrs["kafka"], addrs["http"], addrs["pg"]
        t0 = time.monotonic()
        topic = J.fill_topic_and_target(B, a.records)
        print("filled %d events and the target in %.1f s" % (a.records, time.monotonic() - t0))
        pg = S.pg_connect(B.pg)
        print("| query | median s | best s | plan |\n|---|---|---|---|")
        for name in sorted(J.QUERIES):
            sql = J.QUERIES[name][0].format(topic=topic)
            S.pg_rows(pg, sql)
            times = [J.timed(pg, sql)[1] for _ in range(a.runs)]
            plan = " / ".join(str(r[-1]) for r in S.pg_rows(pg, "EXPLAIN QUERY PLAN " + sql))
            print("| %s | %.3f | %.3f | %s |" % (name, statistics.median(times), min(times), plan))
        pg.close()
    finally:
        proc.terminate()
        proc.wait(30)
        subprocess.run(["rm", "-rf", data])


if __name__ == "__main__":
    main()
