"""Columnar expansion targets: the expansions write into the SQL engine's own DuckDB
database (<data_dir>/sql-duck/sluice.duckdb), and real clients read them from it
(docs/expansions.md, Storage).

Covered, on one broker: rows typed (psycopg over the PostgreSQL listener: int, float,
bool, str, None) and complete the moment the produce is acknowledged, through HTTP and
`sluice sql` too, joined with their topic; the same after a SIGTERM restart, and after
kill -9 during a produce stream: the target then holds exactly one row per event of the
topic, each its event, every acknowledged event among them. Authorization per target
(KafkaRead on the topic, however a statement reaches the table) is covered by
tests/unit/expansion_duck/duck_serving_test.cc. The upgrade from the SQLite engine's files
(tables, targets, progress) into DuckDB: the last test."""

import contextlib
import json
import os
import pathlib
import re
import shutil
import sqlite3
import subprocess
import time

import pytest
from confluent_kafka import Producer

import expansion_helpers as X
import sluice_helpers as H
import sql_helpers as S

HERE = pathlib.Path(__file__).resolve().parent
VENV = pathlib.Path(os.environ.get("SLUICE_SQLTOOLS_VENV") or HERE / ".venv-sqltools")
READ_PARQUET = """
import duckdb, json, sys
con = duckdb.connect()
path = sys.argv[1]
types = [(r[0], r[1]) for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [path]).fetchall()]
summary = con.execute("SELECT count(*), sum(seq), count(DISTINCT (_partition, _offset)), "
                      "min(name), sum(amount), count(*) FILTER (WHERE ok) FROM read_parquet(?)", [path]).fetchone()
print(json.dumps({"types": types, "summary": [float(v) if not isinstance(v, (int, str)) else v for v in summary]}))
"""


def read_parquet(path):
    python = VENV / "bin" / "python"
    if not python.exists():
        pytest.fail("no venv at %s: run `make test-deps` (or point SLUICE_SQLTOOLS_VENV at one)" % VENV)
    proc = subprocess.run([str(python), "-c", READ_PARQUET, str(path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)
TARGET = "cdc.events"
PARTS = 3


def expected(seq):
    return (seq, "event-%d" % seq, seq * 0.5, seq % 3 == 0, "x" * (seq % 50), 0, 0, 0, 0)


COLUMNS = "seq, name, amount, ok, pad, _missing_fields, _excess_fields, _type_errors, _parse_error"


def target_rows(conn):
    rows = {}
    for r in S.pg_rows(conn, "SELECT _partition, _offset, %s FROM %s" % (COLUMNS, TARGET)):
        assert (r[0], r[1]) not in rows, "two rows at %r" % ((r[0], r[1]),)
        rows[(r[0], r[1])] = tuple(r[2:])
    return rows


def topic_seqs(conn, topic):
    """{(partition, offset): seq} of every event of the topic."""
    return {(p, o): int(s) for p, o, s in S.pg_rows(
        conn, "SELECT partition, \"offset\", value ->> '$.seq' FROM %s" % S.topic_table(topic))}


def assert_target_is_topic(conn, topic, acked, what):
    events = topic_seqs(conn, topic)
    rows = target_rows(conn)
    assert set(rows) == set(events), "%s: %d rows missing (first %r), %d not in the topic (first %r)" % (
        what, len(set(events) - set(rows)), sorted(set(events) - set(rows))[:5],
        len(set(rows) - set(events)), sorted(set(rows) - set(events))[:5])
    wrong = [(pos, rows[pos]) for pos, seq in events.items() if rows[pos] != expected(seq)]
    assert not wrong, "%s: %d rows are not their event, first %r" % (what, len(wrong), wrong[:3])
    lost = [pos for pos, seq in acked.items() if events.get(pos) != seq]
    assert not lost, "%s: acknowledged events missing: %r" % (what, lost[:5])
    return len(rows)


def produce(b, topic, seqs):
    p = Producer(H.producer_conf(b.bootstrap, **{"linger.ms": 2}))
    recs = [dict(key=X.event_key(s), value=X.event_value(s)) for s in seqs]
    return {(d.partition, d.offset): s for d, s in zip(H.produce_all(p, topic, recs), seqs)}


def produce_and_check(b, topic, acked, seqs, what):
    """Produces `seqs` (added to `acked`), then checks that the target is the topic; its rows."""
    acked.update(produce(b, topic, seqs))
    conn = S.pg_connect(b.pg)
    try:
        return assert_target_is_topic(conn, topic, acked, what)
    finally:
        conn.close()


def test_targets_served_typed_across_restarts_and_kill9(broker_factory, topic_name, procs, tmp_path):
    exports = tmp_path / "exports"
    exports.mkdir()
    b = broker_factory(extra_args=S.SQL_ARGS + ["--sql-export-dir", str(exports)])
    H.create_topic(b.bootstrap, topic_name, PARTS)
    made = X.create(b.http, topic_name, TARGET, X.EVENT_FIELDS)
    assert [c["name"] for c in made["columns"]][3:8] == ["seq", "name", "amount", "ok", "pad"], made["columns"]

    acked = produce(b, topic_name, range(300))
    conn = S.pg_connect(b.pg)
    try:
        # Right after the acknowledgements: every row, typed as the schema says.
        rows = target_rows(conn)
        assert len(rows) == 300
        assert {pos: r for pos, r in rows.items()} == {pos: expected(s) for pos, s in acked.items()}
        one = next(iter(rows.values()))
        assert [type(v) for v in one[:5]] == [int, str, float, bool, str], one
        # Joined with its topic, one statement.
        assert S.pg_rows(conn, "SELECT count(*) FROM %s x JOIN %s k ON k.partition = x._partition AND "
                               "k.\"offset\" = x._offset WHERE x.seq = (k.value ->> '$.seq')::BIGINT"
                         % (TARGET, S.topic_table(topic_name))) == [(300,)]
        # Users' writes are refused.
        # Users' own tables share the database; the targets are the broker's to write.
        schema = TARGET.split(".")[0]
        for bad in ("DELETE FROM %s" % TARGET, "INSERT INTO %s (seq) VALUES (1)" % TARGET,
                    "UPDATE %s SET seq = 0" % TARGET, "DROP TABLE %s" % TARGET,
                    "ALTER TABLE %s ADD COLUMN x INTEGER" % TARGET,
                    "CREATE UNIQUE INDEX refused_ix ON %s (seq)" % TARGET,
                    "DROP SCHEMA %s CASCADE" % schema,
                    "DELETE FROM main._sluice_expansion_progress"):
            e = S.pg_error(conn, bad)
            assert e.pgcode == "42501", (bad, e.pgcode, str(e))
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE mine_notes (id INTEGER, note TEXT)")
            cur.execute("INSERT INTO mine_notes VALUES (1, 'kept')")
        assert S.pg_rows(conn, "SELECT note FROM mine_notes") == [("kept",)]
        # COPY (query) TO under --sql-export-dir: a Parquet file DuckDB reads back, typed.
        with conn.cursor() as cur:
            cur.execute("COPY (SELECT _partition, _offset, seq, name, amount, ok FROM %s) "
                        "TO 'events.parquet' (FORMAT parquet)" % TARGET)
        got = read_parquet(exports / "events.parquet")
        assert got["types"] == [["_partition", "BIGINT"], ["_offset", "BIGINT"], ["seq", "BIGINT"],
                                ["name", "VARCHAR"], ["amount", "DOUBLE"], ["ok", "BOOLEAN"]], got
        assert got["summary"] == [300, sum(range(300)), 300, "event-0", sum(range(300)) * 0.5,
                                  len([s for s in range(300) if s % 3 == 0])], got
        for bad in ("COPY (SELECT 1) TO '/tmp/sluice-export-refused.csv' (FORMAT csv)",
                    "COPY (SELECT 1) TO '../outside.csv' (FORMAT csv)",
                    "SELECT * FROM read_parquet('events.parquet')"):
            e = S.pg_error(conn, bad)
            assert e.pgcode == "42501", (bad, e.pgcode, str(e))
        # COPY ... FROM is the listener's refusal on both engines: not supported, use INSERT.
        e = S.pg_error(conn, "COPY %s FROM 'events.parquet'" % TARGET)
        assert (e.pgcode, str(e).strip()) == ("0A000", "COPY FROM is not supported: use INSERT"), e
        assert "--sql-export-dir" in str(S.pg_error(conn, "COPY (SELECT 1) TO '/tmp/x.csv'"))
        assert sorted(os.listdir(exports)) == ["events.parquet"]
    finally:
        conn.close()
    # HTTP and `sluice sql` read the same table.
    assert S.http_rows(b.http, "SELECT count(*), sum(seq) FROM %s" % TARGET) == [[300, sum(range(300))]]
    assert S.cli_csv(b.http, "SELECT name FROM %s WHERE seq = 7" % TARGET)[1] == [["event-7"]]
    assert X.get(b.http, TARGET)["rows"] == 300

    # A clean restart: the rows stay, the next events are expanded at once.
    b.stop()
    b.start()
    assert produce_and_check(b, topic_name, acked, range(300, 400), "after a restart") == 400

    # kill -9 during a produce stream: after the restart the target is the topic.
    pp = H.ProducerProc(b.bootstrap, topic_name, PARTS, 1_000_000, tmp_path / "producer.log", procs,
                        seconds=20, extra=["--values", "json", "--rate", "4000"])
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.0 or pp.ack_count() < 200:
        assert time.monotonic() - t0 < 20, "producer got %d acks (stderr: %s)" % (pp.ack_count(),
                                                                                   H.tail(pp.log_path))
        assert pp.proc.poll() is None, "producer exited early: %s" % H.tail(pp.log_path)
        time.sleep(0.02)
    b.kill9()
    _, acks = pp.finish()
    for p_, o, seq in acks:
        acked[(p_, o)] = seq
    b.start()
    doc = X.get(b.http, TARGET)
    assert (doc["state"], doc["lag"]) == ("running", 0), doc
    acked.update(produce(b, topic_name, range(2_000_000, 2_000_000 + PARTS * 4)))
    conn = S.pg_connect(b.pg)
    try:
        n = assert_target_is_topic(conn, topic_name, acked, "after kill -9")
        print("after kill -9: %d acknowledged in the stream, %d events in the topic and the target" % (len(acks), n))
    finally:
        conn.close()


# ---- The upgrade from the SQLite engine: its files, as an older broker wrote them.

ACCOUNTS = [(1, "alice", 10.5, True, "2026-12-07", b"\x00\xff"), (2, "bob", None, False, None, None),
            (3, "ca'rol", -2.0, None, "2025-01-31", b"")]
ENTRIES = [(1, 5, "first"), (1, 5.5, "second"), (2, -1, None)]
LOST = 5  # events of partition 1 whose rows and progress the older broker lost (power loss)
COPIED = re.compile(r"copied (\S+ \(\d+ rows[^)]*\)) from the SQLite engine's files into DuckDB")


@contextlib.contextmanager
def sqlite_file(path):
    """A new SQLite file in WAL mode, as the SQLite engine kept each schema
    (formats/sql-dir.md); committed and closed at the end."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path))
    try:
        assert db.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
        yield db
        db.commit()
    finally:
        db.close()


def write_sqlite_engine_files(data_dir, events, progress):
    """<data_dir>/sql/ as the SQLite engine left it (formats/sql-dir.md): users' tables in
    main.db and schemas/ledger.db, typed as SQLite stores what psql inserted (BOOLEAN as 1/0,
    DATE as text); the target cdc.events in schemas/cdc.db (formats/expansion-progress.md):
    its table, its rows for `events` [(partition, offset, timestamp_broker, seq)], the
    progress table with `progress` {partition: next_offset} (created when the log was empty:
    no backfill), the format row, the position index and its planner figures."""
    with sqlite_file(data_dir / "sql" / "main.db") as db:
        db.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, balance REAL, "
                   "active BOOLEAN, opened DATE, photo BLOB)")
        db.executemany("INSERT INTO accounts VALUES (?, ?, ?, ?, ?, ?)", ACCOUNTS)
    with sqlite_file(data_dir / "sql" / "schemas" / "ledger.db") as db:
        db.execute("CREATE TABLE entries (account INT, amount NUMERIC(10,2), memo VARCHAR(20))")
        db.executemany("INSERT INTO entries VALUES (?, ?, ?)", ENTRIES)
    with sqlite_file(data_dir / "sql" / "schemas" / "cdc.db") as db:
        db.executescript("""
            CREATE TABLE _sluice_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
            INSERT INTO _sluice_meta VALUES ('expansion_progress_format', '1');
            CREATE TABLE _sluice_expansion_progress (target TEXT NOT NULL, partition INTEGER NOT NULL,
                next_offset INTEGER NOT NULL, backfill_start INTEGER NOT NULL,
                backfill_next INTEGER NOT NULL, backfill_end INTEGER NOT NULL,
                PRIMARY KEY (target, partition)) WITHOUT ROWID;
            CREATE TABLE main."events" ("_partition" INTEGER NOT NULL, "_offset" INTEGER NOT NULL,
                "_timestamp_broker" INTEGER NOT NULL, "seq" INTEGER, "name" TEXT, "amount" REAL,
                "ok" BOOLEAN, "pad" TEXT, "_missing_fields" INTEGER NOT NULL,
                "_excess_fields" INTEGER NOT NULL, "_type_errors" INTEGER NOT NULL,
                "_parse_error" INTEGER NOT NULL);
            CREATE INDEX main."_sluice_position_events" ON "events" (_partition, _offset);
            ANALYZE main.sqlite_schema;
            DELETE FROM main.sqlite_stat1 WHERE idx = '_sluice_position_events';
            INSERT INTO main.sqlite_stat1 (tbl, idx, stat) VALUES ('events', '_sluice_position_events',
                '1000000 100000 1');
        """)
        db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0)",
                       [(p, o, ts, seq, "event-%d" % seq, seq * 0.5, seq % 3 == 0, "x" * (seq % 50))
                        for p, o, ts, seq in events])
        db.executemany("INSERT INTO _sluice_expansion_progress VALUES ('events', ?, ?, 0, 0, 0)",
                       sorted(progress.items()))


def migration_marker(b):
    rows = dict(S.http_rows(b.http, "SELECT key, value FROM main._sluice_meta WHERE key LIKE 'sqlite_migration%'"))
    return rows.get("sqlite_migration_format"), json.loads(rows.get("sqlite_migration", "null"))


def test_sqlite_tables_and_targets_move_to_duckdb(broker_factory, topic_name):
    """The upgrade from a broker whose SQL engine was SQLite (the default before DuckDB):
    its data directory holds the SQLite engine's files under <data_dir>/sql and no DuckDB
    file. Emulated: a broker of today creates the topic and the expansion (the catalog
    rows, the same whatever the engine) and takes 40 events; stopped, its DuckDB file is
    removed and the SQLite files written with Python's sqlite3 as the formats pages say an
    older broker wrote them, the target's rows and progress being those events' (partition
    1's last few lost, rows and progress together, as a power loss may leave them). Started
    again: users' tables (types, key, numbering, rows) and the target with its progress are
    copied once into DuckDB, the marker says what was copied, the expansion catches up
    from its progress and goes on with new events, each once; a second start copies
    nothing. (docs/formats/sql-duck-migration.md)"""
    b = broker_factory(extra_args=S.SQL_ARGS)
    H.create_topic(b.bootstrap, topic_name, 2)
    X.create(b.http, topic_name, TARGET, X.EVENT_FIELDS)
    acked = produce(b, topic_name, range(40))
    X.wait_caught_up(b.http, TARGET)
    times = {(p, o): ts for p, o, ts in S.http_rows(
        b.http, 'SELECT partition, "offset", timestamp_broker FROM %s' % S.topic_table(topic_name))}
    assert set(times) == set(acked)
    b.stop()

    ends = {p: 1 + max(o for q, o in acked if q == p) for p in range(2)}
    assert ends[1] > LOST, ends
    progress = {0: ends[0], 1: ends[1] - LOST}
    shutil.rmtree(b.data_dir / "sql-duck")
    shutil.rmtree(b.data_dir / "sql", ignore_errors=True)
    write_sqlite_engine_files(b.data_dir, [(p, o, times[(p, o)], seq) for (p, o), seq in sorted(acked.items())
                                           if o < progress[p]], progress)
    b.start()
    copied = sorted(m.group(1) for m in map(COPIED.search, b.log_lines()) if m)
    planted = 40 - LOST
    assert copied == ["%s (%d rows, an expansion's target)" % (TARGET, planted), "ledger.entries (3 rows)",
                      "main.accounts (3 rows)"], copied
    fmt, report = migration_marker(b)
    assert fmt == "1" and report["tables"] == ["main.accounts 3", "%s %d" % (TARGET, planted),
                                               "ledger.entries 3"] and report["notes"] == [], report
    # The target catches up from its progress: the lost events are expanded again, once.
    X.wait_caught_up(b.http, TARGET)
    rc, out, err = X.sluice(["expansion", "list", "--server", b.http])
    assert rc == 0 and "SINCE START" in out.splitlines()[0], (rc, out, err)
    line = next(ln for ln in out.splitlines() if ln.startswith(TARGET))
    assert line.split()[4:6] == ["40", str(LOST)], out
    assert produce_and_check(b, topic_name, acked, range(40, 70), "after the move") == 70
    # The copied rows keep their events' broker times.
    assert S.http_rows(b.http, "SELECT count(*) FROM %s x JOIN %s t ON t.partition = x._partition AND "
                               "t.\"offset\" = x._offset AND t.timestamp_broker = x._timestamp_broker"
                       % (TARGET, S.topic_table(topic_name))) == [[70]]
    check_moved_tables(b)

    # A second start: nothing copied again; what was written on DuckDB stays.
    b.stop()
    b.start()
    assert not [ln for ln in b.log_lines() if "SQLite engine's" in ln], b.log_lines()
    assert migration_marker(b) == (fmt, report)
    assert S.http_rows(b.http, "SELECT count(*), max(id) FROM accounts") == [[4, 4]]
    assert produce_and_check(b, topic_name, acked, range(70, 80), "after a second start") == 80


def check_moved_tables(b):
    """Users' tables after the move: rows by value, types, the key and its numbering."""
    conn = S.pg_connect(b.pg)
    try:
        got = S.pg_rows(conn, "SELECT id, name, balance, active, CAST(opened AS VARCHAR), photo FROM accounts "
                              "ORDER BY id")
        assert [r[:5] + (None if r[5] is None else bytes(r[5]),) for r in got] == ACCOUNTS, got
        assert S.pg_rows(conn, "SELECT data_type FROM information_schema.columns WHERE table_name = 'accounts' "
                               "ORDER BY ordinal_position") == [
            ("bigint",), ("text",), ("double precision",), ("boolean",), ("date",), ("bytea",)]
        assert S.pg_rows(conn, "SELECT account, amount, memo FROM ledger.entries ORDER BY amount") == [
            (2, -1.0, None), (1, 5.0, "first"), (1, 5.5, "second")]
        assert S.pg_error(conn, "INSERT INTO accounts (id, name) VALUES (1, 'again')").pgcode == "23505"
        with conn.cursor() as cur:
            cur.execute("INSERT INTO accounts (name) VALUES ('dave')")
        assert S.pg_rows(conn, "SELECT id FROM accounts WHERE name = 'dave'") == [(4,)]
    finally:
        conn.close()
