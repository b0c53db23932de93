"""PostgreSQL as analysts and drivers speak it, over the pg listener, with psycopg2.

- psycopg2's default (transactional) mode: CREATE SCHEMA and user-schema DDL inside
  the transaction it opens, COMMIT / ROLLBACK, savepoints, the failed state and the
  transaction status psycopg2 reads from ReadyForQuery ('I', 'T', 'E'); autocommit too.
- PostgreSQL spellings over a topic whose records carry known timestamps: `::` casts,
  ILIKE, string_agg, date_trunc, extract, interval arithmetic, now(), LIMIT/OFFSET,
  FETCH FIRST, ->/->>, coalesce/nullif, convert_from; the hidden timestamptz columns
  and the types psycopg2 maps them to; the literals psycopg2 interpolates
  ('...'::timestamptz, '\\x..'::bytea); a Grafana-style time-series query.
"""

import datetime as dt
import json

import psycopg2
import psycopg2.errors
import psycopg2.extensions as ext
import pytest
from confluent_kafka import Producer

import sluice_helpers as H
import sql_helpers as S

N = 120
PARTITIONS = 2
UTC = dt.timezone.utc
BASE = dt.datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC)  # record i at BASE + i minutes + 250 ms
USERS = ["Alice", "bob", "ALINA", "carol", "Alfred"]
OPS = "cud"

TIMESTAMPTZ_OID = 1184
INT8_OID = 20
INT4_OID = 23
TEXT_OID = 25


def ts_of(i):
    return BASE + dt.timedelta(minutes=i, milliseconds=250)


def ms_of(i):
    return int(ts_of(i).timestamp() * 1000)


def doc_of(i):
    return {"id": i, "op": OPS[i % 3], "user": USERS[i % len(USERS)], "amount": i * 1.5,
            "nested": {"n": i % 7}}


class Topic:
    pass


@pytest.fixture(scope="module")
def tp(module_broker_factory):
    b = module_broker_factory(extra_args=S.SQL_ARGS)
    assert b.pg, "broker did not report its pg listener: %r" % b.stdout_lines
    topic = H.unique_topic("dialect")
    H.create_topic(b.bootstrap, topic, PARTITIONS)
    records = [dict(key=b"k%d" % i, value=json.dumps(doc_of(i)).encode(), timestamp=ms_of(i),
                    partition=i % PARTITIONS) for i in range(N)]
    dr = H.produce_all(Producer(H.producer_conf(b.bootstrap)), topic, records)
    t = Topic()
    t.broker, t.topic, t.table = b, topic, S.topic_table(topic)
    t.pos = {(d.partition, d.offset): i for i, d in enumerate(dr)}
    assert len(t.pos) == N
    return t


def status(conn):
    return conn.info.transaction_status


# ---- Transactions as psycopg2 uses them ----


def test_default_mode_runs_schema_ddl_in_its_transaction(tp):
    conn = S.pg_connect(tp.broker.pg, autocommit=False)
    other = S.pg_connect(tp.broker.pg)
    try:
        assert status(conn) == ext.TRANSACTION_STATUS_IDLE
        with conn.cursor() as cur:
            cur.execute("CREATE SCHEMA IF NOT EXISTS reports")
            assert status(conn) == ext.TRANSACTION_STATUS_INTRANS  # psycopg2 sent BEGIN
            # "at" quoted: DuckDB's grammar reserves AT (PostgreSQL's does not); quoted, it is
            # a column on every engine (docs/sql.md, Moving queries...).
            cur.execute('CREATE TABLE reports.daily (day TEXT PRIMARY KEY, n INTEGER, "at" TIMESTAMPTZ)')
            cur.execute(S.create_index("daily_n", "reports", "daily", "n"))
            cur.execute("INSERT INTO reports.daily VALUES (%s, %s, %s)", ("2024-05-01", 3, BASE))
            cur.execute('SELECT day, n, "at" FROM reports.daily')
            assert cur.fetchall() == [("2024-05-01", 3, BASE)]
            # n INTEGER is int4, as in PostgreSQL (and in the catalog pg_attribute shows)
            assert [d.type_code for d in cur.description] == [TEXT_OID, INT4_OID, TIMESTAMPTZ_OID]
        # Not committed yet: another session sees the schema (it takes effect at once)
        # but not the table.
        assert S.pg_error(other, "SELECT * FROM reports.daily").pgcode == "42P01"
        conn.commit()
        assert status(conn) == ext.TRANSACTION_STATUS_IDLE
        assert S.pg_rows(other, "SELECT day, n FROM reports.daily") == [("2024-05-01", 3)]

        # ROLLBACK undoes the writes.
        with conn.cursor() as cur:
            cur.execute("INSERT INTO reports.daily VALUES ('2024-05-02', 4, NULL)")
        conn.rollback()
        assert S.pg_rows(other, "SELECT count(*) FROM reports.daily") == [(1,)]

        # Savepoints, as psycopg2 users issue them: DuckDB has none, so PostgreSQL's
        # feature_not_supported (0A000) with a message saying what to do, which fails the
        # transaction as any error does.
        with conn.cursor() as cur:
            cur.execute("INSERT INTO reports.daily VALUES ('2024-05-03', 5, NULL)")
            with pytest.raises(psycopg2.errors.FeatureNotSupported) as e:
                cur.execute("SAVEPOINT before_bad")
        assert "savepoints are not supported" in str(e.value) and "BEGIN" in str(e.value), e.value
        assert status(conn) == ext.TRANSACTION_STATUS_INERROR
        conn.rollback()
        for sql in ("RELEASE SAVEPOINT before_bad", "RELEASE before_bad", "ROLLBACK TO SAVEPOINT before_bad",
                    "rollback work to before_bad", "/* c */ savepoint x"):
            assert S.pg_error(other, sql).pgcode == "0A000", sql
            assert S.http_error(tp.broker.http, sql)["sqlstate"] == "0A000", sql
        with conn.cursor() as cur:
            cur.execute("INSERT INTO reports.daily VALUES ('2024-05-03', 5, NULL)")
        conn.commit()
        assert S.pg_rows(other, "SELECT day FROM reports.daily ORDER BY day") == [("2024-05-01",), ("2024-05-03",)]

        # An error fails the transaction ('E') until ROLLBACK.
        with conn.cursor() as cur:
            with pytest.raises(psycopg2.errors.UniqueViolation):
                cur.execute("INSERT INTO reports.daily VALUES ('2024-05-01', 9, NULL)")
        assert status(conn) == ext.TRANSACTION_STATUS_INERROR
        with conn.cursor() as cur:
            with pytest.raises(psycopg2.errors.InFailedSqlTransaction):
                cur.execute("SELECT 1")
        conn.rollback()
        assert status(conn) == ext.TRANSACTION_STATUS_IDLE

        # DuckDB's DDL is transactional, as PostgreSQL's: CREATE SCHEMA after a write is part
        # of the transaction and goes with its ROLLBACK.
        with conn.cursor() as cur:
            cur.execute("INSERT INTO reports.daily VALUES ('2024-05-05', 7, NULL)")
            cur.execute("CREATE SCHEMA late")
        conn.rollback()
        assert S.pg_rows(other, "SELECT count(*) FROM information_schema.schemata "
                                "WHERE schema_name = 'late'") == [(0,)]
        assert S.pg_rows(other, "SELECT count(*) FROM reports.daily") == [(2,)]

        # A ROLLBACK drops the (empty) schema its transaction created; a COMMIT keeps it.
        schemas = ("SELECT DISTINCT schema_name FROM information_schema.schemata "
                   "WHERE schema_name LIKE 'rolled%' ORDER BY 1")
        with conn.cursor() as cur:
            cur.execute("CREATE SCHEMA rolled_back")
            cur.execute("CREATE TABLE rolled_back.t (a INTEGER)")
        conn.rollback()
        with conn.cursor() as cur:
            cur.execute("CREATE SCHEMA rolled_on")
        conn.commit()
        assert S.pg_rows(conn, schemas) == [("rolled_on",)]
        conn.commit()
        assert S.pg_rows(other, schemas) == [("rolled_on",)]

        # Reads of a topic inside the transaction, and DROP SCHEMA as its first statement.
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM %s" % tp.table)
            assert cur.fetchall() == [(N,)]
            cur.execute("DROP SCHEMA reports CASCADE")
        conn.commit()
        assert S.pg_error(other, "SELECT * FROM reports.daily").pgcode == "42P01"
    finally:
        conn.close()
        other.close()


def test_autocommit_mode(tp):
    conn = S.pg_connect(tp.broker.pg, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE SCHEMA auto_s")
            assert status(conn) == ext.TRANSACTION_STATUS_IDLE
            cur.execute("CREATE TABLE auto_s.t (id INTEGER, ok BOOLEAN, doc JSON)")
            cur.execute("INSERT INTO auto_s.t VALUES (%s, %s, %s)", (1, True, json.dumps({"a": [1, 2]})))
            cur.execute("SELECT id, ok, doc FROM auto_s.t")
            # bool and json columns come back as Python's bool and parsed JSON.
            assert cur.fetchall() == [(1, True, {"a": [1, 2]})]
            cur.execute("BEGIN")
            assert status(conn) == ext.TRANSACTION_STATUS_INTRANS
            cur.execute("INSERT INTO auto_s.t VALUES (2, false, NULL)")
            cur.execute("COMMIT")
            assert status(conn) == ext.TRANSACTION_STATUS_IDLE
            cur.execute("SELECT count(*) FROM auto_s.t")
            assert cur.fetchall() == [(2,)]
            cur.execute("DROP SCHEMA auto_s CASCADE")
    finally:
        conn.close()


# ---- PostgreSQL spellings over a topic ----


@pytest.fixture(scope="module")
def pg(tp):
    conn = S.pg_connect(tp.broker.pg)
    yield conn
    conn.close()


def query(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall(), [d.name for d in cur.description], [d.type_code for d in cur.description]


def test_casts(tp, pg):
    rows, names, types = query(pg, "SELECT key::text, value::json ->> 'op', count(*) OVER ()::int, "
                                   "(value ->> 'amount')::float8, (value ->> 'id')::text::int "
                                   "FROM %s ORDER BY partition, \"offset\"" % tp.table)
    # count(*) OVER ()::int is int4, as in PostgreSQL
    assert names[0] == "key" and types[0] == TEXT_OID and types[2] == INT4_OID
    expected = [(p, o) for (p, o) in sorted(tp.pos)]
    assert len(rows) == N
    for (k, op, total, amount, i2), pos in zip(rows, expected):
        i = tp.pos[pos]
        assert (k, op, total, amount, i2) == ("k%d" % i, OPS[i % 3], N, i * 1.5, i)


def test_text_functions(tp, pg):
    want = sorted(i for i in range(N) if USERS[i % len(USERS)].lower().startswith("al"))
    rows, _, _ = query(pg, "SELECT (value ->> 'id')::int FROM %s WHERE value ->> 'user' ILIKE 'al%%' "
                           "ORDER BY 1" % tp.table)
    assert [r[0] for r in rows] == want
    rows, names, _ = query(pg, "SELECT string_agg(k, ',') FROM (SELECT key::text AS k FROM %s "
                               "WHERE partition = 0 ORDER BY \"offset\" LIMIT 4)" % tp.table)
    assert names == ["string_agg"] and rows == [("k0,k2,k4,k6",)]
    rows, _, _ = query(pg, "SELECT coalesce(value ->> 'missing', 'none'), nullif(value -> 'nested' ->> 'n', 0), "
                           "convert_from(key, 'UTF8') FROM %s WHERE partition = 0 AND \"offset\" < 2 "
                           "ORDER BY \"offset\"" % tp.table)
    # ->> gives the JSON value's SQL type (2); the column is text, as its first value is NULL.
    assert rows == [("none", None, "k0"), ("none", "2", "k2")]


def test_paging(tp, pg):
    ordered = ["k%d" % tp.pos[p] for p in sorted(tp.pos)]
    base = "SELECT key::text FROM %s ORDER BY partition, \"offset\"" % tp.table
    assert [r[0] for r in query(pg, base + " LIMIT 5 OFFSET 10")[0]] == ordered[10:15]
    assert [r[0] for r in query(pg, base + " OFFSET 115")[0]] == ordered[115:]
    assert [r[0] for r in query(pg, base + " FETCH FIRST 3 ROWS ONLY")[0]] == ordered[:3]
    assert [r[0] for r in query(pg, base + " OFFSET 7 ROWS FETCH NEXT 2 ROWS ONLY")[0]] == ordered[7:9]


def test_timestamps_as_timestamptz(tp, pg):
    rows, names, types = query(pg, "SELECT partition, \"offset\", timestamp_producer_tz, timestamp_broker_tz, "
                                   "to_timestamp(timestamp_producer / 1000.0), "
                                   "extract(epoch FROM timestamp_producer_tz) * 1000 "
                                   "FROM %s ORDER BY partition, \"offset\"" % tp.table)
    assert types[2:5] == [TIMESTAMPTZ_OID] * 3, types
    now = dt.datetime.now(UTC)
    for p, o, producer_tz, broker_tz, from_ms, epoch_ms in rows:
        i = tp.pos[(p, o)]
        assert producer_tz == ts_of(i) and from_ms == ts_of(i)
        assert producer_tz.tzinfo is not None
        assert now - dt.timedelta(minutes=10) < broker_tz <= now + dt.timedelta(seconds=5)
        assert round(epoch_ms) == ms_of(i)
    # SELECT * keeps the documented seven columns.
    _, names, _ = query(pg, "SELECT * FROM %s LIMIT 1" % tp.table)
    assert names == ["partition", "offset", "timestamp_producer", "timestamp_broker", "key", "value", "headers"]


def test_date_trunc_extract_and_intervals(tp, pg):
    rows, _, types = query(pg, "SELECT date_trunc('hour', timestamp_producer_tz) AS h, count(*) FROM %s "
                               "GROUP BY 1 ORDER BY 1" % tp.table)
    want = {}
    for i in range(N):
        h = ts_of(i).replace(minute=0, second=0, microsecond=0)
        want[h] = want.get(h, 0) + 1
    assert types[0] == TIMESTAMPTZ_OID
    assert rows == sorted(want.items())
    rows, _, _ = query(pg, "SELECT extract(hour FROM timestamp_producer_tz)::int, extract(minute FROM "
                           "timestamp_producer_tz)::int, extract(dow FROM timestamp_producer_tz)::int "
                           "FROM %s WHERE \"offset\" = 0 AND partition = 1" % tp.table)
    assert rows == [(ts_of(1).hour, ts_of(1).minute, 3)]  # 2024-05-01 was a Wednesday
    # Interval arithmetic: records within 10 minutes after BASE + 30 minutes.
    rows, _, _ = query(pg, "SELECT count(*) FROM %s WHERE timestamp_producer_tz >= timestamp '2024-05-01 10:30:00' "
                           "AND timestamp_producer_tz < timestamp '2024-05-01 10:30:00' + interval '10 minutes'"
                           % tp.table)
    assert rows == [(10,)]
    rows, _, _ = query(pg, "SELECT timestamp_producer_tz - interval '1 day 2 hours', "
                           "timestamp_producer_tz + '1 month'::interval FROM %s WHERE partition = 0 AND \"offset\" = 0"
                           % tp.table)
    assert rows == [(ts_of(0) - dt.timedelta(days=1, hours=2), ts_of(0).replace(month=6))]
    rows, _, _ = query(pg, "SELECT count(*) FROM %s WHERE timestamp_broker_tz > now() - interval '1 hour' "
                           "AND timestamp_broker_tz <= current_timestamp" % tp.table)
    assert rows == [(N,)]


def test_parameters_as_psycopg2_interpolates_them(tp, pg):
    # psycopg2 writes datetimes as '...'::timestamptz, bytes as '\\x..'::bytea, and
    # booleans as true/false.
    rows, _, _ = query(pg, "SELECT key::text FROM " + tp.table + " WHERE timestamp_producer_tz = %s AND %s",
                       (ts_of(5), True))
    assert rows == [("k5",)]
    rows, _, _ = query(pg, "SELECT (value ->> 'id')::int FROM " + tp.table + " WHERE key = %s",
                       (psycopg2.Binary(b"k17"),))
    assert rows == [(17,)]
    rows, _, _ = query(pg, "SELECT count(*) FROM " + tp.table + " WHERE timestamp_producer_tz::date = %s",
                       (dt.date(2024, 5, 1),))
    assert rows == [(N,)]


def test_grafana_style_time_series(tp, pg):
    # What Grafana's PostgreSQL data source sends for $__unixEpochGroupAlias(col, 5m) and
    # $__unixEpochFilter(col) over the integer timestamps, for a range in the data.
    lo, hi = int(dt.datetime(2024, 5, 1, 10, 30, tzinfo=UTC).timestamp()), int(ts_of(89).timestamp())
    sql = ('SELECT floor((timestamp_producer / 1000)/300)*300 AS "time", count(*) AS "value" '
           "FROM %s WHERE timestamp_producer / 1000 >= %d AND timestamp_producer / 1000 <= %d "
           "GROUP BY 1 ORDER BY 1" % (tp.table, lo, hi))
    rows, names, _ = query(pg, sql)
    want = {}
    for i in range(N):
        secs = ms_of(i) // 1000
        if lo <= secs <= hi:
            want[secs // 300 * 300] = want.get(secs // 300 * 300, 0) + 1
    assert names == ["time", "value"]
    assert [(int(a), b) for a, b in rows] == sorted(want.items())
    # $__timeGroupAlias(col, 5m) and $__timeFilter(col) over the timestamptz column.
    sql = ('SELECT floor(extract(epoch from timestamp_producer_tz)/300)*300 AS "time", count(*) AS "value" '
           "FROM %s WHERE timestamp_producer_tz BETWEEN '2024-05-01T10:30:00Z' AND '2024-05-01T11:29:15.25Z' "
           "GROUP BY 1 ORDER BY 1" % tp.table)
    rows, names, _ = query(pg, sql)
    assert names == ["time", "value"]
    assert [(int(a), b) for a, b in rows] == sorted(want.items())
    # The timestamptz form of the time column, which Grafana's time series reads too.
    rows, _, types = query(pg, 'SELECT date_trunc(\'minute\', timestamp_producer_tz) AS "time", '
                               "count(*) FROM %s GROUP BY 1 ORDER BY 1 LIMIT 3" % tp.table)
    assert types[0] == TIMESTAMPTZ_OID
    assert rows == [(ts_of(i).replace(second=0, microsecond=0), 1) for i in range(3)]


def test_quotes_and_identifiers_are_untouched(tp, pg):
    rows, names, _ = query(pg, "SELECT 'a::text ILIKE b' AS \"x::int\", count(*) FROM %s "
                               "WHERE value ->> 'user' NOT ILIKE '%%::%%'" % tp.table)
    assert rows == [("a::text ILIKE b", N)] and names[0] == "x::int"


def test_unsupported_spellings_name_the_problem(tp, pg):
    e = S.pg_error(pg, "SELECT date_trunc('hour', timestamp_producer) FROM %s" % tp.table)
    assert "to_timestamp(ms / 1000.0)" in str(e), e
    # DuckDB reads x'ff' as text (PostgreSQL as a bit string): the bytes as bytea there.
    e = S.pg_error(pg, "SELECT convert_from('\\xff'::bytea, 'UTF8')")
    assert "UTF8" in str(e), e
    e = S.pg_error(pg, "SELECT timestamp_producer_tz + interval 'soon' FROM %s" % tp.table)
    assert "interval" in str(e), e
    # `a <> b ->> 'p'` is `a <> (b ->> 'p')` in PostgreSQL; DuckDB's grammar binds it as
    # `(a <> b) ->> 'p'`, another answer without an error: refused, naming the fix.
    e = S.pg_error(pg, "SELECT count(*) FROM %s WHERE key::text <> value ->> 'user'" % tp.table)
    assert e.pgcode == "42601" and "parentheses" in str(e), (e.pgcode, str(e))
    assert query(pg, "SELECT count(*) FROM %s WHERE key::text <> (value ->> 'user')" % tp.table)[0] == [(N,)]


def test_copy_to_stdout_with_psycopg2(tp, pg):
    import io
    buf = io.StringIO()
    with pg.cursor() as cur:
        cur.copy_expert("COPY (SELECT partition, \"offset\", key::text, value ->> 'user' AS who FROM %s "
                        "ORDER BY partition, \"offset\" LIMIT 3) TO STDOUT WITH (FORMAT csv, HEADER)" % tp.table, buf)
    want = ["partition,offset,key,who"]
    for (p, o) in sorted(tp.pos)[:3]:
        i = tp.pos[(p, o)]
        want.append("%d,%d,k%d,%s" % (p, o, i, USERS[i % len(USERS)]))
    assert buf.getvalue().splitlines() == want
    buf = io.StringIO()
    with pg.cursor() as cur:
        cur.copy_expert("COPY (SELECT key, NULL, 'a\tb' FROM %s WHERE partition = 0 AND \"offset\" = 0) TO STDOUT"
                        % tp.table, buf)
    assert buf.getvalue() == "\\\\x6b30\t\\N\ta\\tb\n"
    with pg.cursor() as cur:
        with pytest.raises(psycopg2.errors.FeatureNotSupported):
            cur.copy_expert("COPY %s FROM STDIN" % tp.table, io.StringIO("1\n"))
