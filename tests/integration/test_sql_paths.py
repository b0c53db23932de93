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
    got = S.http_rows(b.http, "SELECT DISTINCT schema FROM pragma_table_list ORDER BY 1")
    assert ["listed"] in got and ["main"] in got, got
    no_path(b, repr(got))
    assert S.psql_lines(b.pg, "SELECT sqlite_source_id() IS NOT NULL") == ["t"]  # a bool, as in PostgreSQL


def test_an_error_about_a_file_names_no_path(b, pg):
    # A schema whose file cannot be opened (a directory holds its place).
    (b.data_dir / "sql" / "schemas" / "blocked.db" / "x").mkdir(parents=True)
    err = S.http_error(b.http, "CREATE SCHEMA blocked")
    assert "blocked" in err["message"], err
    no_path(b, err["message"])
    e = S.pg_error(pg, "CREATE SCHEMA blocked")
    no_path(b, str(e))
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
    assert err["message"] == "no such table: nonesuch_data_d", err
    with S.pg_connect(b.pg) as conn:
        msg = S.pg_error(conn, "SELECT * FROM data.points")
    assert "unknown database data" in str(msg) or "no such table: data.points" in str(msg), msg
    # A message naming a file inside the directory still hides it.
    (b.workdir / data_dir / "sql" / "schemas" / "blocked.db" / "x").mkdir(parents=True)
    err = S.http_error(b.http, "CREATE SCHEMA blocked", timeout=10)
    assert "blocked" in err["message"] and data_dir + "/" not in err["message"], err
