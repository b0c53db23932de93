"""Helpers for the SQL integration tests: the four ways SQL reaches a broker.

- HTTP: `POST /v1/sql` with the SQL as body (urllib), JSON by default.
- psql: the real `psql` binary, unaligned and tuples-only output.
- psycopg2: a PostgreSQL driver on the wire protocol (autocommit connections).
- CLI: `sluice sql --server HOST:PORT "SQL"`, stdout piped (so CSV unless told otherwise).

A broker started with SQL_ARGS prints `listening pg HOST:PORT` and `listening http
HOST:PORT`; conftest's Broker records them as `.pg` and `.http`.
"""

import base64
import csv
import io
import json
import os
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import psycopg2

import conftest
import sluice_helpers as H

# Every SQL test broker listens for PostgreSQL and HTTP on free loopback ports.
SQL_ARGS = ["--pg", "127.0.0.1:0", "--http", "127.0.0.1:0"]

# Time limits of the client side of each call (the server has its own).
CALL_TIMEOUT = 60.0

def create_index(name, schema, table, columns):
    """CREATE INDEX in a user schema, PostgreSQL's spelling (the schema on the table)."""
    return "CREATE INDEX %s ON %s.%s(%s)" % (name, schema, table, columns)


def topic_table(topic):
    """`kafka_topics."<topic>"` with the name quoted as an SQL identifier."""
    return 'kafka_topics."%s"' % topic.replace('"', '""')


def sql_str(s):
    """An SQL string literal."""
    return "'%s'" % s.replace("'", "''")


# --------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------


class HttpResult:
    def __init__(self, status, content_type, body):
        self.status = status
        self.content_type = content_type or ""
        self.body = body  # bytes

    @property
    def text(self):
        return self.body.decode("utf-8")

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError as e:
            raise AssertionError("HTTP body is not JSON (%s): %r" % (e, self.body[:500]))

    def __repr__(self):
        return "HttpResult(%d, %r, %r)" % (self.status, self.content_type, self.body[:300])


def http_sql(addr, sql, format=None, timeout_ms=None, max_rows=None, params=(), timeout=CALL_TIMEOUT,
             headers=None):
    """POST /v1/sql; returns HttpResult whatever the status (4xx/5xx included)."""
    query = []
    if format is not None:
        query.append(("format", format))
    if timeout_ms is not None:
        query.append(("timeout_ms", str(timeout_ms)))
    if max_rows is not None:
        query.append(("max_rows", str(max_rows)))
    for p in params:
        query.append(("param", str(p)))
    url = "http://%s/v1/sql" % addr
    if query:
        url += "?" + urllib.parse.urlencode(query)
    req = urllib.request.Request(url, data=sql.encode("utf-8"), method="POST",
                                 headers=dict(headers or {"Content-Type": "text/plain"}))
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return HttpResult(resp.status, resp.headers.get("Content-Type"), resp.read())
    except urllib.error.HTTPError as e:
        try:
            body = e.read()
        finally:
            e.close()
        return HttpResult(e.code, e.headers.get("Content-Type"), body)


def http_query(addr, sql, **kw):
    """A JSON result that must succeed: the parsed document {"columns", "rows", ...}."""
    r = http_sql(addr, sql, **kw)
    assert r.status == 200, "HTTP %d for %r: %r" % (r.status, sql[:200], r.body[:1000])
    doc = r.json()
    assert "error" not in doc, "HTTP 200 with an error for %r: %r" % (sql[:200], doc["error"])
    assert isinstance(doc.get("rows"), list) and isinstance(doc.get("columns"), list), doc
    return doc


def http_rows(addr, sql, **kw):
    return http_query(addr, sql, **kw)["rows"]


def http_error(addr, sql, **kw):
    """A statement that must fail: HTTP 400 and its {"kind", "sqlstate", "message"}."""
    r = http_sql(addr, sql, **kw)
    assert r.status == 400, "expected HTTP 400 for %r, got %d: %r" % (sql[:200], r.status, r.body[:1000])
    assert r.content_type.startswith("application/json"), r.content_type
    doc = r.json()
    assert set(doc) == {"error"}, doc
    err = doc["error"]
    assert isinstance(err.get("message"), str) and err["message"], err
    return err


def json_blob(v):
    """A BLOB as the JSON formats write it: a string when UTF-8, else {"base64": ...}."""
    if v is None:
        return None
    if isinstance(v, dict):
        assert set(v) == {"base64"}, v
        return base64.b64decode(v["base64"], validate=True)
    assert isinstance(v, str), v
    return v.encode("utf-8")


# --------------------------------------------------------------------------
# psql
# --------------------------------------------------------------------------


def psql(addr, *sqls, extra=(), timeout=CALL_TIMEOUT, field_sep=","):
    """Runs `psql -X -q -A -t -F SEP ... -c SQL [-c SQL ...]`; returns (rc, stdout, stderr).

    Several statements run one after the other in one session. Errors are printed in
    verbose form ("ERROR:  42601: ...") so that the SQLSTATE can be checked.
    """
    host, port = addr.rsplit(":", 1)
    cmd = ["psql", "-X", "-q", "-A", "-t", "-F", field_sep, "-h", host, "-p", port, "-d", "sluice", "-U", "test",
           "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose"] + list(extra)
    for s in sqls:
        cmd += ["-c", s]
    env = dict(os.environ, PGCONNECT_TIMEOUT="10", PGAPPNAME="sluice-it")
    env.pop("PGPASSWORD", None)
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, env=env)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def psql_ok(addr, *sqls, **kw):
    rc, out, err = psql(addr, *sqls, **kw)
    assert rc == 0, "psql %r exited %d\nstdout:\n%s\nstderr:\n%s" % (sqls, rc, out[:2000], err[:2000])
    return out


def psql_lines(addr, *sqls, **kw):
    return [ln for ln in psql_ok(addr, *sqls, **kw).split("\n") if ln != ""]


def psql_error(addr, *sqls, **kw):
    """A statement that must fail: (sqlstate, stderr). psql exits 1 with "ERROR:  XXXXX: ..."."""
    rc, out, err = psql(addr, *sqls, **kw)
    assert rc == 1, "psql %r: expected exit 1, got %d\nstdout:\n%s\nstderr:\n%s" % (sqls, rc, out[:2000], err)
    line = next((ln for ln in err.splitlines() if ln.startswith("ERROR:")), None)
    assert line is not None, "psql %r: no ERROR line in stderr:\n%s" % (sqls, err)
    state = line[len("ERROR:"):].strip().split(":", 1)[0]
    return state, err


def bytea_text(b):
    """PostgreSQL's hex output of a bytea, as psql prints it."""
    return "\\x" + b.hex()


def parse_bytea_text(s):
    assert s.startswith("\\x"), "not a hex bytea: %r" % s[:60]
    return bytes.fromhex(s[2:])


# --------------------------------------------------------------------------
# psycopg2
# --------------------------------------------------------------------------


def pg_connect(addr, autocommit=True, **kw):
    host, port = addr.rsplit(":", 1)
    conn = psycopg2.connect(host=host, port=int(port), dbname="sluice", user="test", connect_timeout=10, **kw)
    conn.autocommit = autocommit
    return conn


def pg_rows(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def pg_error(conn, sql, args=None):
    """A statement that must fail: the psycopg2.Error (check .pgcode)."""
    with conn.cursor() as cur:
        try:
            cur.execute(sql, args)
        except psycopg2.Error as e:
            return e
        rows = cur.fetchall() if cur.description else None
    raise AssertionError("expected %r to fail, it returned %r" % (sql[:200], (rows or [])[:5]))


def as_bytes(v):
    """bytea from psycopg2 (memoryview, or bytes) -> bytes; None stays None."""
    if v is None:
        return None
    if isinstance(v, memoryview):
        return v.tobytes()
    assert isinstance(v, (bytes, bytearray)), "expected bytea, got %r" % (v,)
    return bytes(v)


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def cli(addr, sql, *args, timeout=CALL_TIMEOUT):
    """`sluice sql --server ADDR [args] SQL`, stdout piped; returns (rc, stdout, stderr)."""
    cmd = [conftest.require_binary(), "sql", "--server", addr] + list(args) + [sql]
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def cli_csv(addr, sql, *args, **kw):
    """CSV output (the default when piped) as (header, rows of strings)."""
    rc, out, err = cli(addr, sql, *args, **kw)
    assert rc == 0, "sluice sql %r exited %d\nstdout:\n%s\nstderr:\n%s" % (sql[:200], rc, out[:2000], err)
    assert err == "", "sluice sql %r wrote to stderr: %r" % (sql[:200], err)
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert rows, "sluice sql %r printed nothing" % sql[:200]
    return rows[0], rows[1:]


def cli_error(addr, sql, *args, **kw):
    """A statement that must fail: exit 1, stderr "error: ... (SQLSTATE xxxxx)"; returns (sqlstate, stderr)."""
    rc, out, err = cli(addr, sql, *args, **kw)
    assert rc == 1, "sluice sql %r: expected exit 1, got %d\nstdout:\n%s\nstderr:\n%s" % (sql[:200], rc, out, err)
    line = next((ln for ln in err.splitlines() if ln.startswith("error: ")), None)
    assert line is not None, "sluice sql %r: no 'error: ' line on stderr: %r" % (sql[:200], err)
    marker = "(SQLSTATE "
    assert line.endswith(")") and marker in line, "no SQLSTATE in %r" % line
    return line[line.rindex(marker) + len(marker):-1], err


# --------------------------------------------------------------------------
# Waiting
# --------------------------------------------------------------------------


def wait_until(what, fn, timeout=15.0, interval=0.1):
    """sluice_helpers.wait_until, with database errors counting as "not yet"."""
    return H.wait_until(what, fn, timeout, interval, errors=(AssertionError, psycopg2.Error, OSError))


def cpu_seconds(pid):
    """User + system CPU time of a process so far (Linux /proc)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def raw_http_post(addr, sql, path="/v1/sql"):
    """Opens a socket and sends a POST /v1/sql without reading the answer; returns the socket."""
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    body = sql.encode("utf-8")
    s.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
              % (path.encode(), addr.encode(), len(body)) + body)
    return s
