"""The columns a query leaves unnamed are named as PostgreSQL names them (docs/sql.md,
"Engines"; src/sql/duck/pg_names.h): each statement below runs on Debian's PostgreSQL 15
(postgres_helpers) and on a broker (DuckDB, the default engine) over the same table, and
the column names psycopg2 reads (RowDescription), and those of HTTP's JSON answer, are
PostgreSQL's. Aliased columns and `SELECT *` keep their names."""

import pytest

import sql_helpers as S

TABLE = ("CREATE TABLE t (x INTEGER, y INTEGER, b BOOLEAN, s TEXT, d DATE, ts TIMESTAMPTZ, "
         "arr INTEGER[])")
ROW = ("INSERT INTO t VALUES (2, 3, true, 'abc', DATE '2024-05-01', "
       "TIMESTAMPTZ '2024-05-01 12:00:00+00', ARRAY[4, 5])")

# Select lists (run as SELECT ... FROM t), or whole statements.
STATEMENTS = [
    "1 + 1",
    "count(*)",
    "count(DISTINCT x), sum(x), max(s)",
    "now()",
    "x::int",
    "CAST(x AS BIGINT), x::text::varchar",
    # DuckDB's parser reads text and varchar alike: both are named text (not compared).
    "1::int, 1::bigint, 1::smallint, 'a'::text, 1.5::double precision, 1.5::real",
    "'a'::varchar(3), 'a'::bytea, NULL::int[], '{}'::json, INTERVAL '1 day', true, false",
    "current_date, current_timestamp, current_user, localtimestamp",
    "trim(s), position('a' IN s), ARRAY(SELECT x FROM t), ROW(1, 2), s ~ 'a'",
    "'1'::boolean, 1::numeric, NULL::int, (x + 1)::text",
    "'2024-01-01'::date, '2024-01-01 00:00:00+00'::timestamptz",
    "CASE WHEN x > 1 THEN 'a' ELSE 'b' END",
    "CASE WHEN x > 1 THEN 'a' END",
    "CASE WHEN x > 1 THEN 0 ELSE y END",
    "coalesce(x, 0), nullif(x, 0), greatest(x, y), least(x, y)",
    "EXISTS (SELECT 1), NOT EXISTS (SELECT 1)",
    "(SELECT max(x) FROM t), (SELECT x AS z FROM t), (SELECT 1)",
    "t.x, t.y, x",
    "ARRAY[1, 2]",
    "arr[1]",
    "upper(s), lower(s), length(s)",
    "x IS NULL, x = 1, NOT b, b AND x > 1",
    "s || 'x', s LIKE 'a%'",
    "'abc', 42, NULL",
    "sum(x) OVER (), row_number() OVER (ORDER BY x)",
    "x IN (1, 2), x BETWEEN 1 AND 2, x IS DISTINCT FROM y",
    "-x, x + 1 AS plus, y",
    "count(*) AS n, sum(x) AS total",
    "*",
    "ts AT TIME ZONE 'UTC'",
    "substring(s FROM 1 FOR 2)",
    "SELECT x + 1 FROM t UNION ALL SELECT 2",
    "SELECT count(*) FROM t UNION SELECT 2",
    "SELECT * FROM (SELECT x + 1 AS p FROM t) q",
    "SELECT count, max FROM (SELECT count(*), max(x) FROM t) q",
    "WITH c AS (SELECT count(*) FROM t) SELECT * FROM c",
]


def statement(s):
    return s if s.startswith(("SELECT ", "WITH ")) else "SELECT %s FROM t" % s


SETUP = [TABLE, ROW]


@pytest.fixture(scope="module")
def b(compared_broker):
    return compared_broker


def names(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return [c.name for c in cur.description]


@pytest.mark.parametrize("sql", STATEMENTS)
def test_unnamed_columns_are_named_as_postgresql_names_them(postgres, b, pg, sql):
    sql = statement(sql)
    want = names(postgres, sql)
    assert names(pg, sql) == want, sql
    assert [c["name"] for c in S.http_query(b.http, sql)["columns"]] == want, sql



def test_known_differences(postgres, b, pg):
    """docs/sql.md's known differences, from DuckDB's parser: varchar read as text, float as
    float4, extract as date_part; a subquery's equal names made distinct for the query
    above it (the top query's are kept)."""
    sql = "SELECT 'a'::varchar, 1::float, extract(year FROM d) FROM t"
    assert names(postgres, sql) == ["varchar", "float8", "extract"]
    assert names(pg, sql) == ["text", "float4", "date_part"]
    sql = "SELECT * FROM (SELECT x + 1, y + 1 FROM t) q"
    assert names(postgres, sql) == ["?column?", "?column?"]
    assert names(pg, sql) == ["?column?", "?column?_1"]
    assert names(pg, "SELECT x + 1, y + 1 FROM t") == ["?column?", "?column?"]
