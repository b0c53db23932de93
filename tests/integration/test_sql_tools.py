"""Analysts' tools against the pg listener: pandas.read_sql of a topic, DuckDB's postgres
extension attaching Sluice and querying a topic and an expansion target, and the
PostgreSQL JDBC driver (prepared statements with typed parameters, a ResultSet of
every type, binary results after its prepareThreshold).

pandas 2.2.3 and DuckDB 1.5.5 with its postgres extension come from PyPI, pinned with
hashes in requirements-sqltools.txt, in the venv `make test-deps` makes
(tests/integration/.venv-sqltools); they run in that venv's interpreter through
sql_tools_venv.py (JSON in and out). The JDBC driver is tests/jvm's (42.7.14).
"""

import base64
import datetime as dt
import json
import os
import pathlib
import subprocess

import pytest
from confluent_kafka import Producer

import expansion_helpers as E
import jvm_helpers as J
import sluice_helpers as H
import sql_helpers as S

HERE = pathlib.Path(__file__).resolve().parent
VENV = pathlib.Path(os.environ.get("SLUICE_SQLTOOLS_VENV") or HERE / ".venv-sqltools")
VERSIONS = {"duckdb": "1.5.5", "pandas": "2.2.3"}
N = 40
PARTITIONS = 2
UTC = dt.timezone.utc
BASE = dt.datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC)
TARGET = "tools_x.orders"


def ts_of(i):
    return BASE + dt.timedelta(seconds=30 * i)


def doc_of(i):
    return {"id": i, "op": "cud"[i % 3], "amount": i * 2.5}


def venv_run(req, timeout=120):
    python = VENV / "bin" / "python"
    if not python.exists():
        pytest.fail("no venv at %s: run `make test-deps` (or point SLUICE_SQLTOOLS_VENV at one)" % VENV)
    proc = subprocess.run([str(python), str(HERE / "sql_tools_venv.py")], input=json.dumps(req),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, "sql_tools_venv.py %s exited %d:\n%s" % (req["tool"], proc.returncode,
                                                                        proc.stderr[-4000:])
    return json.loads(proc.stdout)


class Env:
    pass


@pytest.fixture(scope="module")
def env(module_broker_factory):
    b = module_broker_factory(extra_args=S.SQL_ARGS)
    assert b.pg and b.http, b.stdout_lines
    topic = H.unique_topic("tools")
    H.create_topic(b.bootstrap, topic, PARTITIONS)
    E.create(b.http, topic, TARGET, [{"name": "id", "type": "int64"}, {"name": "op", "type": "string"},
                                     {"name": "amount", "type": "float64"}])
    records = [dict(key=b"k%d" % i, value=json.dumps(doc_of(i)).encode(),
                    timestamp=int(ts_of(i).timestamp() * 1000), partition=i % PARTITIONS) for i in range(N)]
    dr = H.produce_all(Producer(H.producer_conf(b.bootstrap)), topic, records)
    E.wait_caught_up(b.http, TARGET)
    e = Env()
    e.broker, e.topic, e.table = b, topic, S.topic_table(topic)
    e.pos = {(d.partition, d.offset): i for i, d in enumerate(dr)}
    return e


def test_venv_has_the_pinned_versions():
    got = venv_run({"tool": "versions"})
    assert got == VERSIONS, "the venv holds %r, not %r: run `make test-deps`" % (got, VERSIONS)


def test_pandas_read_sql_of_a_topic(env):
    got = venv_run({"tool": "pandas", "pg": env.broker.pg, "sql":
                    "SELECT partition, \"offset\", key::text, value ->> 'op' AS op, "
                    "(value ->> 'amount')::float8 AS amount, timestamp_producer_tz "
                    "FROM %s ORDER BY partition, \"offset\"" % env.table})
    assert got["columns"] == ["partition", "offset", "key", "op", "amount", "timestamp_producer_tz"]
    # The timestamps arrive as timestamptz, so pandas makes a time axis of them.
    assert got["dtypes"][:2] == ["int64", "int64"] and got["dtypes"][4] == "float64", got["dtypes"]
    assert got["dtypes"][5].startswith("datetime64[") and "UTC" in got["dtypes"][5], got["dtypes"]
    want = []
    for (p, o) in sorted(env.pos):
        i = env.pos[(p, o)]
        want.append([p, o, "k%d" % i, doc_of(i)["op"], doc_of(i)["amount"], ts_of(i).isoformat()])
    assert got["rows"] == want


def test_duckdb_attaches_and_queries_a_topic_and_a_target(env):
    topic_sql = ("SELECT partition, \"offset\", key::text AS k, value ->> 'op' AS op, timestamp_producer "
                 "FROM %s ORDER BY partition, \"offset\"" % env.table).replace("'", "''")
    target_sql = "SELECT _partition, _offset, id, op, amount FROM %s" % TARGET
    got = venv_run({"tool": "duckdb", "pg": env.broker.pg, "queries": [
        "SELECT * FROM postgres_query('sluice', '%s')" % topic_sql,
        "SELECT op, count(*), sum(amount) FROM postgres_query('sluice', '%s') GROUP BY op ORDER BY op" % target_sql,
        # DuckDB joins the topic with its target on (partition, offset) itself.
        "SELECT count(*) FROM postgres_query('sluice', '%s') t JOIN postgres_query('sluice', '%s') x "
        "ON t.partition = x._partition AND t.offset = x._offset AND t.op = x.op" % (topic_sql, target_sql),
    ]})["results"]
    want_topic = []
    for (p, o) in sorted(env.pos):
        i = env.pos[(p, o)]
        want_topic.append([p, o, "k%d" % i, doc_of(i)["op"], int(ts_of(i).timestamp() * 1000)])
    assert got[0] == want_topic
    by_op = {}
    for i in range(N):
        op = doc_of(i)["op"]
        n, s = by_op.get(op, (0, 0.0))
        by_op[op] = (n + 1, s + doc_of(i)["amount"])
    assert got[1] == [[op, n, s] for op, (n, s) in sorted(by_op.items())]
    assert got[2] == [[N]]


def test_duckdb_reads_numeric_columns_exactly(env):
    """A table's numeric columns through DuckDB's scanner (typed by the catalog, read by
    binary COPY) and postgres_query (typed by RowDescription): the digits and the scale
    as stored, beyond a double's."""
    S.http_rows(env.broker.http, "CREATE TABLE tools_nums (amount NUMERIC(10,2), big NUMERIC(38,10), n BIGINT)")
    S.http_rows(env.broker.http, "INSERT INTO tools_nums VALUES (12.5, '12345678901234567890.0123456789', 1), "
                                 "(-0.05, 0, 2), (NULL, -1.5, 3)")
    got = venv_run({"tool": "duckdb", "pg": env.broker.pg, "queries": [
        "SELECT CAST(amount AS VARCHAR), CAST(big AS VARCHAR), n FROM sluice.main.tools_nums ORDER BY n",
        "SELECT CAST(amount * 2 AS VARCHAR) FROM postgres_query('sluice', "
        "'SELECT amount FROM tools_nums WHERE n = 1')",
    ]})["results"]
    assert got[0] == [["12.50", "12345678901234567890.0123456789", 1], ["-0.05", "0.0000000000", 2],
                      [None, "-1.5000000000", 3]]
    assert got[1] == [["25.00"]]


def test_duckdb_reads_integer_columns_of_every_width(env):
    """DuckDB's scanner types a table's columns from the catalog (pg_attribute: INTEGER is
    int4) and reads them by binary COPY: the widths the listener sends must be the
    catalog's (until 2026-12-07 an INTEGER went out as int8 and (1, 2) came back as
    (0, 34359738368))."""
    S.http_rows(env.broker.http, "CREATE TABLE tools_ints (s SMALLINT, i INTEGER, b BIGINT)")
    S.http_rows(env.broker.http, "INSERT INTO tools_ints VALUES (1, 2, 3), (-32768, -2147483648, "
                                 "-9223372036854775808), (NULL, 2147483647, 9223372036854775807)")
    got = venv_run({"tool": "duckdb", "pg": env.broker.pg, "queries": [
        "SELECT s, i, b FROM sluice.main.tools_ints ORDER BY i",
        "SELECT typeof(i), i + 1 FROM postgres_query('sluice', 'SELECT i FROM tools_ints WHERE b = 3')",
    ]})["results"]
    assert got[0] == [[-32768, -2147483648, -9223372036854775808], [1, 2, 3],
                      [None, 2147483647, 9223372036854775807]]
    assert got[1] == [["INTEGER", 3]]


def test_jdbc_prepared_statements_and_every_type(env):
    url = "jdbc:postgresql://%s/sluice?user=jdbc&sslmode=disable" % env.broker.pg
    proc = J.run_java("dev.sluice.jvmtests.sqldialect.JdbcTypes", url, env.table, timeout=180)
    lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    kinds = [ln["kind"] for ln in lines]
    assert kinds == ["committed"] + ["all_types"] * 7 + ["typed_binds"] * 7 + ["topic"] * 7 + \
        ["autosave", "done"], kinds
    # DuckDB has no savepoints: the driver's first SAVEPOINT PGJDBC_AUTOSAVE is refused as
    # PostgreSQL's feature_not_supported (docs/sql.md, Engines), saying why; after ROLLBACK
    # the connection serves on, in autocommit (no savepoints sent there).
    got = dict(lines[22])
    message = got.pop("message")
    assert "savepoints are not supported on the duckdb SQL engine" in message, message
    assert got == {"kind": "autosave", "refused": "0A000", "error": "23505", "rows": [1, 2]}, got
    want_rows = [{"i": 9_000_000_000 + n, "f": 1.5 * n, "t": "text-%d-ż" % n,
                  "b": base64.b64encode(bytes([0, 0xFF, n])).decode(), "ok": n % 2 == 0,
                  "at": (dt.datetime(2024, 5, 1, 10, 0, n, 250000, tzinfo=UTC)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                  "doc": '{"n":%d}' % n} for n in (1, 2)]
    for ln in lines[1:8]:
        # The same answer before and after the driver switches to binary results.
        assert ln["types"] == ["int8", "float8", "text", "bytea", "bool", "timestamptz", "json"], ln
        assert ln["rows"] == want_rows, (ln["run"], ln["rows"])
    want_topic = []
    for (p, o) in sorted(env.pos):
        if p == 1 and o < 3:
            i = env.pos[(p, o)]
            ms = int(ts_of(i).timestamp() * 1000)
            want_topic.append({"partition": 1, "offset": o, "key": "k%d" % i, "ms": ms, "tz": ms})
    for ln in lines[8:15]:
        # at >= 10:00:01.25Z and f < 2.75: only n = 1 (9000000001).
        assert (ln["count"], ln["min"]) == (1, 9_000_000_001), ln
    for ln in lines[15:22]:
        assert ln["rows"] == want_topic, (ln["run"], ln["rows"])
    # The schema the program made is gone again (DROP SCHEMA in its transaction).
    conn = S.pg_connect(env.broker.pg)
    try:
        assert S.pg_error(conn, "SELECT * FROM jdbc_s.all_types").pgcode == "42P01"
    finally:
        conn.close()
