"""What DuckDB (the pinned version, bench/requirements-sql-analytical.txt) answers to the
statements PostgreSQL clients send, and how its bounds behave when configured as Sluice
would configure it: external access off, extensions off, memory and temp limits, an
allowed export directory, configuration locked. One line per statement: ok and the first
row, or the error. For docs/design/sql-engine.md; run with
bench/.venv-sql-analytical/bin/python bench/duckdb_probe.py (after bench/sql_analytical
has made the venv)."""

import os
import shutil
import tempfile

import duckdb

PG_CLIENTS = [
    # psql
    ("psql", "SELECT now() IS NOT NULL"),
    ("psql", "SELECT version()"),
    ("psql \\dt", "SELECT n.nspname as \"Schema\", c.relname as \"Name\", CASE c.relkind WHEN 'r' "
     "THEN 'table' WHEN 'v' THEN 'view' END as \"Type\", pg_catalog.pg_get_userbyid(c.relowner) "
     "as \"Owner\" FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = "
     "c.relnamespace WHERE c.relkind IN ('r','p','') AND n.nspname <> 'pg_catalog' AND "
     "n.nspname !~ '^pg_toast' AND n.nspname <> 'information_schema' AND "
     "pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1,2"),
    ("psql \\d t", "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull "
     "FROM pg_catalog.pg_attribute a WHERE a.attrelid = (SELECT oid FROM pg_class WHERE relname "
     "= 't') AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"),
    ("psql \\l", "SELECT d.datname as \"Name\", pg_catalog.pg_encoding_to_char(d.encoding) as "
     "\"Encoding\" FROM pg_catalog.pg_database d ORDER BY 1"),
    # JDBC (pgjdbc at connect and for metadata)
    ("JDBC", "SET extra_float_digits = 3"),
    ("JDBC", "SET application_name = 'PostgreSQL JDBC Driver'"),
    ("JDBC", "select current_schema()"),
    ("JDBC", "SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, "
     "pg_type.oid FROM pg_catalog.pg_type WHERE pg_type.oid = 23"),
    ("JDBC", "SHOW TRANSACTION ISOLATION LEVEL"),
    # psycopg2 / SQLAlchemy
    ("SQLAlchemy", "select pg_catalog.version()"),
    ("SQLAlchemy", "show standard_conforming_strings"),
    ("SQLAlchemy", "SELECT t.oid, typarray FROM pg_type t JOIN pg_namespace ns ON typnamespace = "
     "ns.oid WHERE typname = 'hstore'"),
    ("SQLAlchemy", "SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class JOIN "
     "pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace "
     "WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p']) AND "
     "pg_catalog.pg_class.relpersistence != 't' AND pg_catalog.pg_table_is_visible"
     "(pg_catalog.pg_class.oid) AND pg_catalog.pg_namespace.nspname != 'pg_catalog'"),
    # Grafana's PostgreSQL data source
    ("Grafana", "SELECT quote_ident(table_name) AS \"table\" FROM information_schema.tables WHERE "
     "quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog') AND table_type = "
     "'BASE TABLE' AND quote_ident(table_schema) IN (SELECT CASE WHEN trim(s[i]) = '\"$user\"' "
     "THEN user ELSE trim(s[i]) END FROM generate_series(array_lower(string_to_array("
     "current_setting('search_path'),','),1), array_upper(string_to_array(current_setting("
     "'search_path'),','),1)) AS i, string_to_array(current_setting('search_path'),',') s)"),
    ("Grafana", "SELECT quote_ident(column_name) AS \"column\", data_type AS \"type\" FROM "
     "information_schema.columns WHERE quote_ident(table_name) = 't'"),
    ("Grafana", "SELECT date_trunc('minute', ts)::VARCHAR AS time, count(*) FROM t WHERE ts BETWEEN "
     "'2024-05-01T00:00:00Z' AND '2024-05-02T00:00:00Z' GROUP BY 1 ORDER BY 1"),
    ("Grafana", "SELECT extract(epoch from ts)::bigint, to_timestamp(1714521600)::VARCHAR FROM t"),
    # The PostgreSQL spellings the rewriting translators handle today, and JSON
    ("dialect", "SELECT TIMESTAMPTZ '2024-05-01 12:00:00+00' - TIMESTAMPTZ '2024-05-01 11:00:00+00'"),
    ("dialect", "SELECT now() - INTERVAL '1 hour' < now()"),
    ("dialect", "SELECT 1::int4, 'a'::text, true::bool, 2::int8 / 3, 7 % 3"),
    ("dialect", "SELECT '{\"a\":{\"b\":1}}'::json -> 'a' ->> 'b'"),
    ("dialect", "SELECT '{\"a\":{\"b\":1}}' ->> '$.a.b'  -- SQLite's spelling"),
    ("dialect", "SELECT json_extract('{\"a\":2}', '$.a'), json_extract_string('{\"a\":2}', '$.a')"),
    ("dialect", "SELECT string_agg(x::text, ',') FROM generate_series(1, 3) g(x)"),
    ("dialect", "SELECT current_database(), current_user, session_user"),
    ("dialect", "SELECT has_table_privilege('t', 'select')"),
    ("dialect", "SELECT '2024-05-01'::date + 1, age(TIMESTAMP '2024-05-02', TIMESTAMP '2024-05-01')"),
]

BOUNDS = [
    ("no files", "SELECT * FROM read_csv('/etc/passwd')"),
    ("no files", "SELECT * FROM read_text('/etc/hostname')"),
    ("no files", "ATTACH '/tmp/sluice-probe-attach.db'"),
    ("no files", "COPY (SELECT 1) TO '/tmp/sluice-probe.csv'"),
    ("exports", "COPY (SELECT 42 AS x) TO '{EXPORTS}/out.parquet' (FORMAT parquet)"),
    ("exports", "COPY (SELECT 42 AS x) TO '{EXPORTS}/out.csv' (FORMAT csv)"),
    ("exports", "SELECT * FROM read_parquet('{EXPORTS}/out.parquet')"),
    ("no extensions", "INSTALL httpfs"),
    ("no extensions", "LOAD httpfs"),
    ("no network", "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')"),
    ("locked", "SET memory_limit = '10GB'"),
    ("locked", "SET enable_external_access = true"),
    ("locked", "RESET lock_configuration"),
    ("settings", "SELECT current_setting('memory_limit'), current_setting('max_temp_directory_size')"),
    ("memory", "SELECT count(*) FROM (SELECT range % 1000003 AS k, string_agg(range::text, ',') "
     "FROM range(20000000) GROUP BY 1)"),
    ("memory", "SELECT sum(length(s)) FROM (SELECT repeat('x', 1000) || range AS s FROM range(3000000) "
     "ORDER BY random())"),
    ("catalog", "CREATE TABLE x AS SELECT 1 AS a"),
]


def run(con, group, sql):
    try:
        row = con.execute(sql).fetchone()
        print("ok    | %-13s | %s | %r" % (group, sql[:110], row))
    except Exception as e:  # noqa: BLE001 - the probe reports every error as it comes
        msg = str(e).splitlines()[0]
        print("ERROR | %-13s | %s | %s: %s" % (group, sql[:110], type(e).__name__, msg[:160]))


def main():
    work = tempfile.mkdtemp(prefix="sluice-duckdb-probe-")
    exports = os.path.join(work, "exports")
    os.makedirs(exports)
    print("# DuckDB", duckdb.__version__)
    con = duckdb.connect(config={"threads": 2})
    con.execute("CREATE TABLE t (ts TIMESTAMPTZ, v VARCHAR)")
    con.execute("INSERT INTO t VALUES ('2024-05-01 12:00:00+00', '{\"a\":1}')")
    print("## PostgreSQL clients' statements (default configuration)")
    for group, sql in PG_CLIENTS:
        run(con, group, sql)
    print("## bounds: external access off, extensions off, 256 MB memory, 512 MB temp, locked")
    con = duckdb.connect(config={
        "threads": 2, "memory_limit": "256MB", "temp_directory": os.path.join(work, "tmp"),
        "max_temp_directory_size": "512MB", "autoinstall_known_extensions": False,
        "autoload_known_extensions": False, "allow_community_extensions": False})
    # allowed_directories can only be set once the database runs; then external access
    # goes off (leaving those directories) and the configuration is locked.
    con.execute("SET allowed_directories = ['%s/']" % exports)
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    for group, sql in BOUNDS:
        run(con, group, sql.replace("{EXPORTS}", exports))
    con.close()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
