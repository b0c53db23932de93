"""Statements the PostgreSQL listener answers as PostgreSQL 15 does (docs/sql-pg.md): each
runs on Debian's PostgreSQL (the postgres_cluster fixture) and on a broker, side by side
over psycopg2, and the answers are compared.
- BEGIN's spellings: SQLite's BEGIN DEFERRED, IMMEDIATE and EXCLUSIVE are syntax errors
  (42601, at the same word); PostgreSQL's BEGIN, BEGIN WORK/TRANSACTION, START
  TRANSACTION and the transaction modes begin a transaction.
- numeric: a DECIMAL column is numeric (OID 1700), read as decimal.Decimal with its exact
  digits and scale, and carries its precision and scale (the type modifier psycopg2 reads
  as precision and scale) where PostgreSQL's does: a table's column and a cast to
  numeric(p,s), not a computed value."""

import decimal

import psycopg2
import psycopg2.extensions as PE
import pytest

import sql_helpers as S

TABLE = "CREATE TABLE prices (id INTEGER, amount NUMERIC(10,2), rate NUMERIC(6,4))"
ROWS = "INSERT INTO prices VALUES (1, 12.5, 0.0625), (2, -3.25, 1.5), (3, NULL, 0)"


SETUP = [TABLE, ROWS]


@pytest.fixture(scope="module")
def b(compared_broker):
    return compared_broker


def outcome(conn, sql):
    """What psycopg2 sees of one statement: the error's SQLSTATE and message, or the
    transaction status after it (the transaction is then rolled back)."""
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
    except psycopg2.Error as e:
        return ("error", e.pgcode, e.diag.message_primary, conn.get_transaction_status())
    status = conn.get_transaction_status()
    with conn.cursor() as cur:
        cur.execute("ROLLBACK")
    return ("ok", status)


REFUSED_BEGINS = [
    "BEGIN DEFERRED", "BEGIN IMMEDIATE", "BEGIN EXCLUSIVE", "begin immediate",
    "BEGIN DEFERRED TRANSACTION", "BEGIN EXCLUSIVE TRANSACTION", "BEGIN TRANSACTION EXCLUSIVE",
    "START TRANSACTION DEFERRED", "START", "BEGIN ISOLATION LEVEL", "BEGIN ISOLATION LEVEL READ",
    "BEGIN READ", "BEGIN READ ONLY,", "BEGIN NOT", "BEGIN WORK TRANSACTION",
]
BEGINS = [
    "BEGIN", "BEGIN WORK", "BEGIN TRANSACTION", "START TRANSACTION", "begin transaction",
    "BEGIN ISOLATION LEVEL SERIALIZABLE", "BEGIN TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY",
    "BEGIN READ ONLY", "BEGIN READ WRITE", "BEGIN DEFERRABLE", "BEGIN NOT DEFERRABLE",
    "START TRANSACTION ISOLATION LEVEL REPEATABLE READ READ WRITE",
    "BEGIN ISOLATION LEVEL READ UNCOMMITTED", "BEGIN; ",
]


@pytest.mark.parametrize("sql", REFUSED_BEGINS + BEGINS)
def test_begin_as_postgresql_answers_it(postgres, b, pg, sql):
    want = outcome(postgres, sql)
    expected = "error" if sql in REFUSED_BEGINS else "ok"
    assert want[0] == expected, (sql, want)  # the list above says what PostgreSQL does
    if expected == "error":
        assert want[1] == "42601", want
    else:
        assert want[1] == PE.TRANSACTION_STATUS_INTRANS, want
    assert outcome(pg, sql) == want, sql
    # The session serves on: a statement after the refusal runs outside any transaction.
    assert S.pg_rows(pg, "SELECT 1") == [(1,)]
    assert pg.get_transaction_status() == PE.TRANSACTION_STATUS_IDLE


# (Not compared: `id`, an INTEGER, which the listener announces as int8; docs/sql-pg.md.)
def answer(conn, sql):
    """Each column's name, type OID, size, precision and scale (from the type modifier),
    and the rows as each value's Python type and text."""
    with conn.cursor() as cur:
        cur.execute(sql)
        cols = [(c.name, c.type_code, c.internal_size, c.precision, c.scale) for c in cur.description]
        rows = [[(type(v).__name__, str(v)) for v in r] for r in cur.fetchall()]
    return cols, rows


NUMERIC_QUERIES = [
    "SELECT 1.5::numeric(10,2)",
    "SELECT CAST(12.5 AS DECIMAL(10,2)) * 2",
    "SELECT 1.5, -0.25, 100.125",
    "SELECT amount, rate FROM prices ORDER BY id",
    "SELECT * FROM (SELECT amount, rate FROM prices) q ORDER BY rate",
    "SELECT amount AS a, amount + 1 AS b, -amount AS c FROM prices ORDER BY id",
    "SELECT amount * rate FROM prices ORDER BY id",
    "SELECT sum(amount), min(amount), max(rate) FROM prices",
    "SELECT CAST(amount AS NUMERIC(12,3)) FROM prices WHERE id = 2",
    "SELECT amount FROM prices WHERE amount > 0",
]


@pytest.mark.parametrize("sql", NUMERIC_QUERIES)
def test_numeric_as_postgresql_sends_it(postgres, b, pg, sql):
    want = answer(postgres, sql)
    assert all(c[1] == 1700 for c in want[0]), want  # every column is a numeric
    assert answer(pg, sql) == want, sql


def test_numeric_values_are_exact(b, pg):
    """Digits beyond a double's, and the scale, reach the client as written."""
    sql = "SELECT CAST('12345678901234567890.123456789' AS NUMERIC(38,9)), CAST(12.5 AS NUMERIC(10,2))"
    assert S.pg_rows(pg, sql) == [(decimal.Decimal("12345678901234567890.123456789"), decimal.Decimal("12.50"))]
    assert [str(v) for v in S.pg_rows(pg, sql)[0]] == ["12345678901234567890.123456789", "12.50"]
    # HTTP shows them as it did: REAL, a double.
    got = S.http_query(b.http, "SELECT amount FROM prices WHERE id = 1")
    assert [c["type"] for c in got["columns"]] == ["REAL"] and got["rows"] == [[12.5]], got
