"""Columnar expansion targets served (`sluice serve --sql-engine duckdb`): the expansions
write into the SQL engine's own DuckDB database (<data_dir>/expansions.duckdb), and real
clients read them from it (docs/expansions.md, Storage).

Covered, on one broker: rows typed (psycopg over the PostgreSQL listener: int, float,
bool, str, None) and complete the moment the produce is acknowledged, through HTTP and
`sluice sql` too, joined with their topic; the same after a SIGTERM restart, and after
kill -9 during a produce stream: the target then holds exactly one row per event of the
topic, each its event, every acknowledged event among them. Authorization per target
(KafkaRead on the topic, however a statement reaches the table) is covered by
tests/unit/expansion_duck/duck_serving_test.cc."""

import json
import os
import pathlib
import subprocess
import time

import psycopg2
import pytest
from confluent_kafka import Producer

import expansion_helpers as X
import sluice_helpers as H
import sql_helpers as S

DUCK_ARGS = S.SQL_ARGS + ["--sql-engine", "duckdb"]
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


def test_targets_served_typed_across_restarts_and_kill9(broker_factory, topic_name, procs, tmp_path):
    exports = tmp_path / "exports"
    exports.mkdir()
    b = broker_factory(extra_args=DUCK_ARGS + ["--sql-export-dir", str(exports)])
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
    acked.update(produce(b, topic_name, range(300, 400)))
    conn = S.pg_connect(b.pg)
    try:
        assert assert_target_is_topic(conn, topic_name, acked, "after a restart") == 400
    finally:
        conn.close()

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


def test_sqlite_tables_and_targets_move_to_duckdb(broker_factory, topic_name):
    """The upgrade: a data directory the SQLite engine served (the default before DuckDB,
    here --sql-engine sqlite), started again with no --sql-engine, the default DuckDB:
    users' tables (schemas, types, keys, rows) and an expansion's target are copied once
    into DuckDB, the expansion goes on from its progress (each new event once), and the
    SQLite files stay, so --sql-engine sqlite shows them again, without what was written
    on DuckDB (docs/sql.md, Switching engines). A second start on DuckDB copies nothing."""
    assert H.sql_engine_under_test() is None, "the default engine's test: run without SLUICE_TEST_SQL_ENGINE"
    b = broker_factory(extra_args=S.SQL_ARGS + ["--sql-engine", "sqlite"])
    H.create_topic(b.bootstrap, topic_name, 2)
    X.create(b.http, topic_name, TARGET, X.EVENT_FIELDS)
    acked = produce(b, topic_name, range(40))
    rows = [(1, "alice", 10.5, True, "2026-12-07", b"\x00\xff"), (2, "bob", None, False, None, None),
            (3, "ca'rol", -2.0, None, "2025-01-31", b"")]
    conn = S.pg_connect(b.pg)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, balance REAL, "
                        "active BOOLEAN, opened DATE, photo BLOB)")
            for r in rows:
                cur.execute("INSERT INTO accounts VALUES (%s, %s, %s, %s, %s, %s)",
                            r[:5] + (None if r[5] is None else psycopg2.Binary(r[5]),))
            cur.execute("CREATE SCHEMA ledger")
            cur.execute("CREATE TABLE ledger.entries (account INT, amount NUMERIC(10,2), memo VARCHAR(20))")
            cur.execute("INSERT INTO ledger.entries VALUES (1, 5, 'first'), (1, 5.5, 'second'), (2, -1, NULL)")
    finally:
        conn.close()
    X.wait_caught_up(b.http, TARGET)

    b.stop()
    b.extra_args = list(S.SQL_ARGS)  # the default engine
    b.start()
    copied = [ln for ln in b.log_lines() if "from the SQLite engine's files into DuckDB" in ln]
    for table in ("main.accounts (3 rows", "ledger.entries (3 rows", TARGET + " (40 rows"):
        assert any("copied " + table in ln for ln in copied), (table, copied)
    acked.update(produce(b, topic_name, range(40, 70)))
    conn = S.pg_connect(b.pg)
    try:
        got = S.pg_rows(conn, "SELECT id, name, balance, active, CAST(opened AS VARCHAR), photo FROM accounts "
                              "ORDER BY id")
        assert [r[:5] + (None if r[5] is None else bytes(r[5]),) for r in got] == rows, got
        assert S.pg_rows(conn, "SELECT data_type FROM information_schema.columns WHERE table_name = 'accounts' "
                               "ORDER BY ordinal_position") == [
            ("bigint",), ("text",), ("double precision",), ("boolean",), ("date",), ("bytea",)]
        assert S.pg_rows(conn, "SELECT account, amount, memo FROM ledger.entries ORDER BY amount") == [
            (2, -1.0, None), (1, 5.0, "first"), (1, 5.5, "second")]
        # The key and its numbering came along.
        assert S.pg_error(conn, "INSERT INTO accounts (id, name) VALUES (1, 'again')").pgcode == "23505"
        with conn.cursor() as cur:
            cur.execute("INSERT INTO accounts (name) VALUES ('dave')")
        assert S.pg_rows(conn, "SELECT id FROM accounts WHERE name = 'dave'") == [(4,)]
        # The target: the 40 events copied, the 30 since expanded by DuckDB's store, once each.
        assert assert_target_is_topic(conn, topic_name, acked, "after the move") == 70
        assert S.pg_rows(conn, "SELECT value FROM main._sluice_meta WHERE key = 'sqlite_migration_format'") == [
            ("1",)]
    finally:
        conn.close()
    assert X.get(b.http, TARGET)["state"] == "running"

    # Back to SQLite: its files are as they were at the move; its expander catches up.
    b.stop()
    b.extra_args = S.SQL_ARGS + ["--sql-engine", "sqlite"]
    b.start()
    X.wait_caught_up(b.http, TARGET)
    assert S.http_rows(b.http, "SELECT count(*), max(id) FROM accounts") == [[3, 3]]
    assert S.http_rows(b.http, "SELECT count(*), count(DISTINCT _offset || ':' || _partition) FROM %s"
                       % TARGET) == [[70, 70]]

    # On DuckDB again: nothing copied a second time; what was written there is there.
    b.stop()
    b.extra_args = list(S.SQL_ARGS)
    b.start()
    assert not [ln for ln in b.log_lines() if "from the SQLite engine's files into DuckDB" in ln]
    assert S.http_rows(b.http, "SELECT count(*), max(id) FROM accounts") == [[4, 4]]
    X.wait_caught_up(b.http, TARGET)
    assert S.http_rows(b.http, "SELECT count(*) FROM %s" % TARGET) == [[70]]
