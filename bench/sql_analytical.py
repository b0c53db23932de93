"""SQL at analytical speed (issue 36): the same queries over the same events through
  (a) with --sqlite-sluice BIN only: an older Sluice's SQL over HTTP on its SQLite
      engine (removed from Sluice on 2026-12-07; BIN is a build from before that),
  (b) DuckDB's kafka_topic() table function over the broker's partition logs
      (bench/duck_topic_scan.cc, run by sluice-duckbench once the broker has stopped),
  (e) src/sql/duck's kafka_topic (DuckDB's C++ API: filter pushdown on partition,
      offset and the timestamps; value as BLOB, read as value_text), also by
      sluice-duckbench (--engine sluice) over the stopped broker's logs,
  (f) Sluice's SQL over HTTP (DuckDB; with (a), (a)'s data restarted on this build):
      (e)'s statements, kafka_topics.events read through decode(value),
  (c) DuckDB over the raw NDJSON file of the events,
  (d) DuckDB over its own table of them (typed columns),
in one run. Each broker ((a)'s, then (f)'s) also gets an expansion of the
events into typed columns (x.events; on DuckDB a columnar table): a query over the target
alone and joins of the topic with it, against (d) over its own tables; and the producer
throughput of a flat-out acks=all load with and without a loop of the analytical
queries over HTTP beside it (sluice-loadgen). Then the expansion-target question: rows/s
of DuckDB's appender for 19 typed columns. Prints markdown tables of best-of-N seconds
with ratios.

Run through bench/sql_analytical, which makes the virtual environment and builds the
tools; see bench/README.md."""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import duckdb
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from sql_analytical_lib import (TARGET, create_expansion, http_sql, load_average,
                                produce_alongside, wait_expansion)

KINDS = ["view", "click", "cart", "buy", "refund", "login", "logout", "search"]
BASE_TS = 1_750_000_000_000
STEP_MS = 5  # event i at BASE_TS + i * STEP_MS


def make_events(path, n, users, seed=36):
    """NDJSON of n events {"ts","user","kind","amount"}; returns the lines."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        lines.append('{"ts":%d,"user":"u%d","kind":"%s","amount":%d}' % (
            BASE_TS + i * STEP_MS, rnd.randrange(users), KINDS[rnd.randrange(len(KINDS))],
            rnd.randint(1, 1000)))
    with open(path, "w") as f:
        f.write("\n".join(lines))
        f.write("\n")
    return lines


def create_topic(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # The events carry 2025's timestamps: without retention.ms=-1 the default seven days'
    # retention deletes them while the queries run.
    new = NewTopic(topic, num_partitions=4, replication_factor=1, config={"retention.ms": "-1"})
    for fut in admin.create_topics([new]).values():
        fut.result(30)


def produce(bootstrap, topic, lines):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "queue.buffering.max.messages": 1_000_000, "acks": 1,
                  "partitioner": "murmur2_random"})
    t0 = time.monotonic()
    for line in lines:
        ts = int(line[6:line.index(",")])
        user = line[line.index('"user":"') + 8:line.index('","kind"')]
        while True:
            try:
                p.produce(topic, value=line.encode(), key=user.encode(), timestamp=ts)
                break
            except BufferError:
                p.poll(0.05)
    left = p.flush(120)
    assert left == 0, "%d events not delivered" % left
    return len(lines) / (time.monotonic() - t0)


def queries(n):
    """name -> {engine: SQL}. a: Sluice (SQLite spellings), b: kafka_topic, c/d: DuckDB
    over NDJSON ('{F}') and its table."""
    t0 = BASE_TS + (n // 2) * STEP_MS
    t1 = t0 + 60_000
    k = "value ->> '$.kind'"
    a_amt = "value ->> '$.amount'"
    b_amt = "(value ->> '$.amount')::BIGINT"
    src = {"a": "kafka_topics.events", "b": "kafka_topic('events')", "c": "read_ndjson('{F}')",
           "d": "events"}
    q = {}
    q["count(*)"] = {e: "SELECT count(*) FROM %s" % s for e, s in src.items()}
    q["GROUP BY kind, sum(amount)"] = {
        "a": "SELECT %s AS kind, sum(%s) FROM %s GROUP BY 1 ORDER BY 1" % (k, a_amt, src["a"]),
        "b": "SELECT %s AS kind, sum(%s) FROM %s GROUP BY 1 ORDER BY 1" % (k, b_amt, src["b"]),
        "c": "SELECT kind, sum(amount) FROM %s GROUP BY 1 ORDER BY 1" % src["c"],
        "d": "SELECT kind, sum(amount) FROM events GROUP BY 1 ORDER BY 1"}
    q["filter kind and amount"] = {
        "a": "SELECT count(*) FROM %s WHERE %s = 'buy' AND %s > 900" % (src["a"], k, a_amt),
        "b": "SELECT count(*) FROM %s WHERE %s = 'buy' AND %s > 900" % (src["b"], k, b_amt),
        "c": "SELECT count(*) FROM %s WHERE kind = 'buy' AND amount > 900" % src["c"],
        "d": "SELECT count(*) FROM events WHERE kind = 'buy' AND amount > 900"}
    tr = "timestamp_producer >= %d AND timestamp_producer < %d" % (t0, t1)
    q["one minute: count, sum(amount)"] = {
        "a": "SELECT count(*), sum(%s) FROM %s WHERE %s" % (a_amt, src["a"], tr),
        "b": "SELECT count(*), sum(%s) FROM %s WHERE %s" % (b_amt, src["b"], tr),
        "c": "SELECT count(*), sum(amount) FROM %s WHERE ts >= %d AND ts < %d" % (src["c"], t0, t1),
        "d": "SELECT count(*), sum(amount) FROM events WHERE ts >= %d AND ts < %d" % (t0, t1)}
    # The C API has no filter pushdown: the same minute as kafka_topic's named bounds.
    q["one minute, bounds as parameters (b)"] = {
        "b": "SELECT count(*), sum(%s) FROM kafka_topic('events', from_timestamp := %d, "
             "to_timestamp := %d)" % (b_amt, t0, t1)}
    # Each ->> parses the value again; one json_extract_string of a list of paths parses once.
    q["GROUP BY kind, one JSON parse per row (b)"] = {
        "b": "SELECT j[1] AS kind, sum(j[2]::BIGINT) FROM (SELECT json_extract_string(value, "
             "['$.kind', '$.amount']) AS j FROM %s) GROUP BY 1 ORDER BY 1" % src["b"]}
    # kafka_topic behind a view, as Sluice would name topics (kafka_topics."name").
    q["GROUP BY kind through a view (b)"] = {
        "b": "SELECT %s AS kind, sum(%s) FROM kafka_topics.events GROUP BY 1 ORDER BY 1" % (k, b_amt)}
    q["latest amount per key"] = {
        "a": "SELECT count(*), sum(a) FROM (SELECT key, %s AS a, max(offset) FROM %s GROUP BY key)"
             % (a_amt, src["a"]),
        "b": "SELECT count(*), sum(a) FROM (SELECT key, arg_max(%s, \"offset\") AS a FROM %s "
             "GROUP BY key)" % (b_amt, src["b"]),
        "c": "SELECT count(*), sum(a) FROM (SELECT \"user\", arg_max(amount, ts) AS a FROM %s "
             "GROUP BY 1)" % src["c"],
        "d": "SELECT count(*), sum(a) FROM (SELECT \"user\", arg_max(amount, ts) AS a FROM events "
             "GROUP BY 1)"}
    # (e): (b)'s statements through src/sql/duck, whose value is a BLOB and value_text its
    # checked text; the WHERE on timestamp_producer is pushed into the scan there.
    for per in q.values():
        if "b" in per and "from_timestamp" not in per["b"]:
            per["e"] = per["b"].replace("value ->>", "value_text ->>").replace(
                "json_extract_string(value,", "json_extract_string(value_text,")
    # (f): the same through the broker's DuckDB engine; its kafka_topics.T has the SQLite
    # engine's columns (value a BLOB, read as text with decode()).
    for per in q.values():
        if "e" in per:
            f = per["e"]
            if "kafka_topics.events" in f:
                f = f.replace("value_text ->>", "decode(value) ->>")
            per["f"] = f
    # The expansion target x.events (typed: ts, user, kind, amount) alone and joined with
    # its topic on the event's place; (d) joins its table with raw (id, ts), the "topic"
    # of its own rows (both made from the NDJSON, events carrying the id too).
    on = 'c._partition = t.partition AND c._offset = t."offset"'
    for name, sql in [
            ("target: GROUP BY kind, sum(amount)",
             "SELECT kind, sum(amount) FROM {X} GROUP BY 1 ORDER BY 1"),
            ("target: filter kind and amount",
             "SELECT count(*) FROM {X} WHERE kind = 'buy' AND amount > 900")]:
        q[name] = {"a": sql.format(X=TARGET), "f": sql.format(X=TARGET), "d": sql.format(X="events")}
    join_min = ("SELECT c.kind, count(*), sum(c.amount) FROM kafka_topics.events t JOIN %s c ON %s "
                "WHERE %s GROUP BY 1 ORDER BY 1" % (TARGET, on, tr.replace("timestamp_", "t.timestamp_")))
    q["join topic and target, one minute, by kind"] = {
        "a": join_min, "f": join_min,
        "d": "SELECT c.kind, count(*), sum(c.amount) FROM raw t JOIN events c ON c.id = t.id "
             "WHERE t.ts >= %d AND t.ts < %d GROUP BY 1 ORDER BY 1" % (t0, t1)}
    join_all = ("SELECT count(*), sum(c.amount), max(t.timestamp_producer) FROM kafka_topics.events t "
                "JOIN %s c ON %s" % (TARGET, on))
    q["join topic and target, every event"] = {
        "a": join_all, "f": join_all,
        "d": "SELECT count(*), sum(c.amount), max(t.ts) FROM raw t JOIN events c ON c.id = t.id"}
    return q


# What the query loop beside the produce load runs, round robin (best_of's names).
LOOP_QUERIES = ["GROUP BY kind, sum(amount)", "filter kind and amount",
                "one minute: count, sum(amount)", "target: GROUP BY kind, sum(amount)",
                "join topic and target, one minute, by kind"]


def norm(cell):
    """A result cell as a comparable string (SQLite's sum of text gives 1.0e6-style reals)."""
    try:
        f = float(cell)
        return str(int(f)) if f == int(f) else repr(f)
    except (TypeError, ValueError):
        return str(cell)


def best_of(runs, fn):
    times, out = [], None
    for _ in range(runs):
        t = time.monotonic()
        out = fn()
        times.append(time.monotonic() - t)
    return min(times), out


def start_broker(binary, data, engine, sql_threads=0, timeout_s=60):
    """Starts a broker and waits for its listeners. The first start on DuckDB over a
    SQLite broker's data copies its tables and expansion targets first (docs/sql.md),
    minutes for 10,000,000 rows: give it a longer timeout_s."""
    threads = ["--sql-threads", str(sql_threads)] if sql_threads else []
    proc = subprocess.Popen([binary, "serve", "--data-dir", data, "--listen", "127.0.0.1:0",
                             "--http", "127.0.0.1:0", "--sql-timeout-ms", "600000",
                             "--sql-engine", engine] + threads,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    kafka = http = None
    deadline = time.monotonic() + timeout_s
    while (kafka is None or http is None) and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("listening kafka "):
            kafka = line.split()[2]
        elif line.startswith("listening http "):
            http = "http://" + line.split()[2].replace("http://", "")
    assert kafka and http, "the broker did not print its listeners"
    return proc, kafka, http


ENGINES = [("a", "(a) Sluice HTTP, SQLite"), ("f", "(f) Sluice HTTP, DuckDB"),
           ("b", "(b) kafka_topic, C API"), ("e", "(e) src/sql/duck"), ("c", "(c) DuckDB NDJSON"),
           ("d", "(d) DuckDB table")]
RATIOS = ["af", "fc", "fd", "ac", "ad", "bc", "ec", "ed", "ae", "be"]


def print_tables(times, load, args):
    """The seconds and ratios of the engines that ran, then the produce loads."""
    seen = {e for tm in times.values() for e in tm}
    engines = [(e, label) for e, label in ENGINES if e in seen]
    ratios = [r for r in RATIOS if any(r[0] in tm and r[1] in tm for tm in times.values())]
    print("\n| query | %s | %s |" % (" | ".join(label for _, label in engines),
                                     " | ".join("%s/%s" % (r[0], r[1]) for r in ratios)))
    print("|---|%s" % ("---:|" * (len(engines) + len(ratios))))
    for name, tm in times.items():
        cells = ["%.4f s" % tm[e] if e in tm else "-" for e, _ in engines]
        cells += ["%.1f" % (tm[r[0]] / tm[r[1]]) if r[0] in tm and tm.get(r[1]) else "-"
                  for r in ratios]
        print("| %s | %s |" % (name, " | ".join(cells)))
    if not any(load.values()):
        return
    print("\n| engine | produce alone, rec/s (p99 ms) | with the query loop, rec/s (p99 ms) | "
          "with / alone | statements done (timed out at %d ms) | load average |"
          % args.loop_timeout_ms)
    print("|---|---:|---:|---:|---:|---|")
    for e, label in ENGINES:
        r = load.get(e)
        if r:
            q, b = r["quiet"], r["busy"]
            print("| %s | %s (%s) | %s (%s) | %.2f | %d (%d) | %s |" % (
                label, format(int(float(q["rps"])), ","), q["p99_ms"],
                format(int(float(b["rps"])), ","), b["p99_ms"],
                float(b["rps"]) / float(q["rps"]), r["loop"][0], r["loop"][1], r["load"]))
    print("\n%d s of flat-out acks=all produce of %d-byte records into a fresh 4-partition topic "
          "(sluice-loadgen), alone, then with the loop of %s over HTTP." % (
              args.load_seconds, args.load_record_size, ", ".join(LOOP_QUERIES)))


def fill(kafka, http, lines, engine_label):
    """Creates the topic and its expansion (live) and produces the events; returns None,
    for the caller to drop its list of the events' lines."""
    create_topic(kafka, "events")
    create_expansion(http, "events", backfill=False)
    rate = produce(kafka, "events", lines)
    print("# produced at %.0f events/s (%s expansion live)" % (rate, engine_label), flush=True)
    return None


def run_scan(args, data, qs, engine, times, results):
    """(b) or (e): sluice-duckbench over the stopped broker's partition logs."""
    cmd = [args.duckbench, "scan"] + (["--engine", "sluice"] if engine == "e" else []) + [
        "--data-dir", data, "--topic", "events", "--threads",
           str(args.threads), "--runs", str(args.runs), "--setup", "CREATE SCHEMA kafka_topics",
           "--setup", "CREATE VIEW kafka_topics.events AS SELECT *%s FROM kafka_topic('events')"
           % (", value_text" if engine == "e" else "")]  # value_text is hidden from *
    for name, per in qs.items():
        if engine in per:
            cmd += ["--query", "%s=%s" % (name, per[engine])]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("sluice-duckbench (%s) failed: %s" % (engine, run.stderr[-2000:]))
    for line in run.stdout.splitlines():
        r = json.loads(line)
        times[r["name"]][engine] = r["best_s"]
        results[r["name"]][engine] = [r["first"].split("|")] if r["first"] else []


def run_http(args, http, qs, engine, runs, times, results):
    for name, per in qs.items():
        if engine in per:
            t, rows = best_of(runs, lambda: http_sql(http, per[engine]))
            times[name][engine], results[name][engine] = t, rows
            print("#   %s %s: %.3f s (load %s)" % (engine, name, t, load_average()), flush=True)


def alongside(args, kafka, http, qs, engine):
    """Producer throughput with and without the query loop, on this broker."""
    if args.load_seconds <= 0:
        return None
    stmts = [qs[n][engine] for n in LOOP_QUERIES]
    r = produce_alongside(args.loadgen, kafka, http, lambda t: create_topic(kafka, t), stmts,
                          args.load_seconds, args.load_record_size, args.loop_timeout_ms, engine)
    r["load"] = load_average()
    print("# produce alone %s rec/s, with queries %s rec/s (%d statements done, %d timed out; load %s)"
          % (r["quiet"]["rps"], r["busy"]["rps"], r["loop"][0], r["loop"][1], r["load"]), flush=True)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sqlite-runs", type=int, help="runs of (a) (default --runs)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sql-threads", type=int, default=0,
                    help="the DuckDB broker's --sql-threads (0: its default, one per core)")
    ap.add_argument("--append-rows", type=int, default=1_000_000)
    ap.add_argument("--sluice", default="build/sluice")
    ap.add_argument("--sqlite-sluice", help="run (a) with this broker's SQLite engine: a build of Sluice "
                    "from before the SQLite engine was removed (2026-12-07), e.g. of commit 8d69d4b; "
                    "(f) then starts on (a)'s data, which tests the copy into DuckDB (default: no (a))")
    ap.add_argument("--duckbench", default="build/bench/sluice-duckbench")
    ap.add_argument("--loadgen", default="build/bench/sluice-loadgen")
    ap.add_argument("--load-seconds", type=int, default=20,
                    help="seconds of each produce load beside the queries (0: none)")
    ap.add_argument("--load-record-size", type=int, default=200)
    ap.add_argument("--loop-timeout-ms", type=int, default=30000,
                    help="statement timeout of the query loop beside the produce load")
    ap.add_argument("--keep", help="keep the data directory and NDJSON file here")
    ap.add_argument("--no-append", action="store_true", help="skip the appender measurements")
    ap.add_argument("--no-scans", action="store_true",
                    help="skip (b) and (e), sluice-duckbench over the stopped broker's logs")
    args = ap.parse_args()
    sqlite_runs = args.sqlite_runs or args.runs

    work = args.keep or tempfile.mkdtemp(prefix="sluice-sql-analytical-")
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "data")
    ndjson = os.path.join(work, "events.ndjson")
    print("# %d events, %d keys, %d runs (best; %d of SQLite), DuckDB %s, %d threads; %s; load %s"
          % (args.events, args.users, args.runs, sqlite_runs, duckdb.__version__, args.threads, work,
             load_average()), flush=True)
    lines = make_events(ndjson, args.events, args.users)
    print("# NDJSON: %.0f MB" % (os.path.getsize(ndjson) / 1e6), flush=True)

    qs = queries(args.events)
    if args.no_scans:
        for per in qs.values():
            per.pop("b", None)
            per.pop("e", None)
        qs = {n: per for n, per in qs.items() if per}
    times = {name: {} for name in qs}
    results = {name: {} for name in qs}
    load = {}

    shutil.rmtree(data, ignore_errors=True)
    if args.sqlite_sluice:
        # (a) an older Sluice's SQLite engine over HTTP, its expansion live while producing.
        proc, kafka, http = start_broker(args.sqlite_sluice, data, "sqlite")
        try:
            lines = fill(kafka, http, lines, "SQLite")
            wait_expansion(http, args.events)
            run_http(args, http, qs, "a", sqlite_runs, times, results)
            load["a"] = alongside(args, kafka, http, qs, "a")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=300)

    # (f) this build's DuckDB engine: on (a)'s data (copied into DuckDB at the first start;
    # the expansion made again with a backfill into the columnar store), or on a new data
    # dir, its expansion live while producing.
    t = time.monotonic()
    proc, kafka, http = start_broker(args.sluice, data, "duckdb", args.sql_threads, timeout_s=3600)
    print("# first start on DuckDB in %.1f s%s" % (
        time.monotonic() - t, " (the SQLite tables and expansion targets copied)" if args.sqlite_sluice else ""),
        flush=True)
    try:
        if args.sqlite_sluice:
            create_expansion(http, "events", backfill=True)
            s = wait_expansion(http, args.events)
            print("# DuckDB expansion backfilled in %.1f s (%.0f events/s)" % (s, args.events / s), flush=True)
        else:
            lines = fill(kafka, http, lines, "DuckDB")
            wait_expansion(http, args.events)
        run_http(args, http, qs, "f", args.runs, times, results)
        load["f"] = alongside(args, kafka, http, qs, "f")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=300)

    if not args.no_scans:
        run_scan(args, data, qs, "b", times, results)
        run_scan(args, data, qs, "e", times, results)

    # (c) and (d): DuckDB over the NDJSON file and over its own tables.
    con = duckdb.connect(config={"threads": args.threads})
    for name, per in qs.items():
        if "c" in per:
            sql = per["c"].replace("{F}", ndjson)
            times[name]["c"], results[name]["c"] = best_of(args.runs, lambda: con.execute(sql).fetchall())
    t = time.monotonic()
    con.execute("CREATE TABLE events AS SELECT row_number() OVER () AS id, * FROM read_ndjson('%s')"
                % ndjson)
    load_s = time.monotonic() - t
    con.execute("CREATE TABLE raw AS SELECT id, ts FROM events")
    for name, per in qs.items():
        if "d" in per:
            times[name]["d"], results[name]["d"] = best_of(args.runs, lambda: con.execute(per["d"]).fetchall())

    # Every engine must give the same first row.
    for name in qs:
        firsts = {e: [norm(c) for c in (rows[0] if rows else [])] for e, rows in results[name].items()}
        if len({tuple(v) for v in firsts.values()}) != 1:
            sys.exit("results differ for %s: %s" % (name, firsts))

    print_tables(times, load, args)
    print("\n(d)'s table was loaded from the NDJSON in %.2f s. Results agree across engines; load %s."
          % (load_s, load_average()))

    if args.no_append:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        return
    # The expansion-target question: DuckDB's appender for 19 typed columns.
    print("\n| DuckDB appender, %d rows of 19 typed columns | rows/s |" % args.append_rows)
    print("|---|---:|")
    db = os.path.join(work, "append.duckdb")
    for label, extra in [
        ("in memory, row by row, one transaction", ["--mode", "rows"]),
        ("in memory, data chunks, one transaction", ["--mode", "chunks"]),
        ("file, row by row, one transaction", ["--mode", "rows", "--db", db]),
        ("file, data chunks, one transaction", ["--mode", "chunks", "--db", db]),
        # Expansion backfill commits every 5,000 events (docs/expansions.md); live
        # expansion commits what arrived while the last commit ran.
        ("file, row by row, a commit per 5,000 rows", ["--mode", "rows", "--db", db, "--commit-every", "5000"]),
        ("file, data chunks, a commit per 5,000 rows", ["--mode", "chunks", "--db", db, "--commit-every", "5000"]),
        ("file, row by row, a commit per 5,000 rows, no automatic checkpoint",
         ["--mode", "rows", "--db", db, "--commit-every", "5000", "--setup", "SET checkpoint_threshold = '64GB'"]),
        ("file, row by row, a commit per 500 rows", ["--mode", "rows", "--db", db, "--commit-every", "500"]),
        ("SQLite as expansion targets today (WAL, synchronous=NORMAL), a commit per 5,000 rows",
         ["--mode", "sqlite", "--db", db + ".sqlite", "--commit-every", "5000"]),
    ]:
        r = json.loads(subprocess.run([args.duckbench, "append", "--rows", str(args.append_rows)] + extra,
                                      check=True, capture_output=True, text=True).stdout)
        print("| %s | %s |" % (label, format(int(r["rows_per_s"]), ",")))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
