"""Run by the interpreter of tests/integration/.venv-sqltools (see test_sql_tools.py):
pandas and DuckDB, which Debian's python3 lacks, against a Sluice pg listener.

Reads one JSON request on stdin, writes one JSON answer on stdout:
  {"tool": "versions"}                                   -> {"duckdb": .., "pandas": ..}
  {"tool": "pandas", "pg": "H:P", "sql": "..."}          -> {"columns", "dtypes", "rows"}
  {"tool": "duckdb", "pg": "H:P", "queries": ["..."]}    -> {"results": [[row, ...], ...]}
DuckDB loads its postgres extension from the duckdb-extension-postgres-scanner wheel,
never from the network (autoinstall and autoload are off).
"""

import json
import pathlib
import sys


def dsn(addr):
    host, port = addr.rsplit(":", 1)
    return "host=%s port=%s dbname=sluice user=tools sslmode=disable connect_timeout=10" % (host, port)


def plain(v):
    """JSON-friendly cells: timestamps as ISO text, bytes as hex, numpy scalars as Python."""
    if v is None:
        return None
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if hasattr(v, "item"):
        return v.item()
    return v


def run_pandas(req):
    import pandas
    import psycopg2
    import warnings

    conn = psycopg2.connect(dsn(req["pg"]))
    try:
        with warnings.catch_warnings():
            # pandas prefers SQLAlchemy connectables; a DBAPI2 connection is supported.
            warnings.simplefilter("ignore", UserWarning)
            df = pandas.read_sql(req["sql"], conn)
    finally:
        conn.close()
    return {"columns": list(df.columns), "dtypes": [str(t) for t in df.dtypes],
            "rows": [[plain(v) if not (isinstance(v, float) and v != v) else None for v in row]
                     for row in df.itertuples(index=False, name=None)]}


def run_duckdb(req):
    import duckdb
    import duckdb_extension_postgres_scanner as ext

    path = next(pathlib.Path(ext.__file__).parent.glob("extensions/*/postgres_scanner.duckdb_extension"))
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    con.execute("LOAD '%s'" % str(path).replace("'", "''"))
    con.execute("ATTACH '%s' AS sluice (TYPE postgres, READ_ONLY)" % dsn(req["pg"]))
    results = []
    for q in req["queries"]:
        results.append([[plain(v) for v in row] for row in con.execute(q).fetchall()])
    return {"results": results}


def main():
    req = json.load(sys.stdin)
    if req["tool"] == "versions":
        import duckdb
        import pandas
        out = {"duckdb": duckdb.__version__, "pandas": pandas.__version__}
    elif req["tool"] == "pandas":
        out = run_pandas(req)
    elif req["tool"] == "duckdb":
        out = run_duckdb(req)
    else:
        raise SystemExit("unknown tool %r" % req["tool"])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
