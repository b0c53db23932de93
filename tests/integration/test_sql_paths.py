"""SQL users see no file paths of the server (issue 21): PRAGMA database_list and the
other PRAGMAs that name files, their table-valued forms, and error messages, over the
PostgreSQL wire (psql, psycopg2) and HTTP."""

import pytest

import sql_helpers as S

REFUSED = [
    "PRAGMA database_list",
    "SELECT file FROM pragma_database_list",
    "SELECT * FROM pragma_database_list()",
    "PRAGMA main.database_list",
    "PRAGMA temp_store_directory",
    "PRAGMA data_store_directory",
    # DuckDB's own ways to the same paths (the database file, temp_directory,
    # allowed_paths), refused the same way (src/sql/duck/statement_checks.h): in a query,
    # a CTE, a subquery and EXPLAIN.
    "SELECT path FROM duckdb_databases()",
    "SELECT * FROM duckdb_databases",
    "SELECT current_setting('temp_directory')",
    "SELECT current_setting('allowed_paths')",
    "SELECT name, value FROM duckdb_settings()",
    "SELECT name, setting FROM pg_settings",
    "SELECT * FROM duckdb_temporary_files()",
    "WITH x AS (SELECT path FROM duckdb_databases()) SELECT * FROM x",
    "SELECT (SELECT max(path) FROM duckdb_databases())",
    "EXPLAIN SELECT * FROM pragma_database_list",
]


@pytest.fixture(scope="module")
def b(module_broker_factory):
    broker = module_broker_factory(extra_args=S.SQL_ARGS)
    assert broker.pg and broker.http, broker.stdout_lines
    return broker


def no_path(b, text):
    for p in (str(b.data_dir), str(b.data_dir.resolve()), str(b.workdir)):
        assert p not in text, "a server path in %r" % text


@pytest.mark.parametrize("sql", REFUSED)
def test_pragmas_naming_files_are_refused(b, pg, sql):
    err = S.http_error(b.http, sql)
    assert err["sqlstate"] == "42501" and "not available" in err["message"], err
    no_path(b, err["message"])
    e = S.pg_error(pg, sql)
    assert e.pgcode == "42501", (e.pgcode, str(e))
    no_path(b, str(e))
    state, stderr = S.psql_error(b.pg, sql)
    assert state == "42501", stderr
    no_path(b, stderr)


def test_schemas_are_still_listed_by_name(b, pg):
    with pg.cursor() as cur:
        cur.execute("CREATE SCHEMA IF NOT EXISTS listed")
    got = S.http_rows(b.http, "SELECT DISTINCT schema_name FROM information_schema.schemata ORDER BY 1")
    assert ["listed"] in got and ["main"] in got, got
    no_path(b, repr(got))
    assert S.psql_lines(b.pg, "SELECT version() IS NOT NULL") == ["t"]  # a bool, as in PostgreSQL


def test_an_error_about_a_file_names_no_path(b, pg):
    # DuckDB's schemas are not files: the errors about files are those of reading, writing
    # or attaching one, named relative to the data directory.
    for sql in ("SELECT * FROM read_csv('sql-duck/sluice.duckdb')", "SELECT * FROM read_blob('catalog.db')",
                "COPY (SELECT 1) TO 'out.csv'", "ATTACH 'other.duckdb' AS other"):
        r = S.http_sql(b.http, sql)  # 400 refused, or 403 when DuckDB's file access is off
        assert r.status in (400, 403), (sql, r)
        err = r.json()["error"]
        assert err["sqlstate"] == "42501", (sql, err)
        no_path(b, err["message"])
        no_path(b, str(S.pg_error(pg, sql)))
    # SQL keeps serving, in old sessions and new ones.
    assert S.pg_rows(pg, "SELECT 1") == [(1,)]
    assert S.http_rows(b.http, "SELECT 2") == [[2]]
    assert S.psql_lines(b.pg, "SELECT 3") == ["3"]


@pytest.mark.parametrize("data_dir", ["data", "d"])
def test_a_short_relative_data_dir_leaves_messages_whole(broker_factory, data_dir):
    """`--data-dir data` as a user types it (relative to the broker's directory): an error
    whose text contains the name is answered whole and at once. The placeholder
    `<data-dir>` contains "data" and "d", and the replacement used to run forever on it,
    holding a thread at 100% CPU; and "database" is a word, not a path."""
    b = broker_factory(extra_args=S.SQL_ARGS + ["--data-dir", data_dir])
    assert (b.workdir / data_dir / "catalog.db").exists()
    err = S.http_error(b.http, "SELECT * FROM nonesuch_data_d", timeout=10)
    # DuckDB's wording, whole.
    assert err["message"].startswith("Catalog Error: Table with name nonesuch_data_d does not exist"), err
    with S.pg_connect(b.pg) as conn:
        msg = S.pg_error(conn, "SELECT * FROM data.points")
    assert 'schema "data" does not exist' in str(msg), msg
