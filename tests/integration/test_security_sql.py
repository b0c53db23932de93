"""Authentication, TLS and authorization on the SQL endpoints of a broker that
authenticates (a SASL listener): PostgreSQL logins (SCRAM-SHA-256 in plain text, the
password itself over TLS) with psql and psycopg2, HTTPS with Basic credentials for
POST /v1/sql and `sluice sql`, and KafkaRead / KafkaDescribe deciding what a SQL user
reads and sees.

Users and policies are made offline (`sluice user add`, `sluice policy put/attach`)
before the broker starts:
  admin  everything (produces the data)
  alice  KafkaRead on sluice:topic:sqlsec-* (Describe implied), KafkaDescribe on the cluster
  bob    no policy
  carol  KafkaAlter and KafkaDescribe on the cluster (manages expansions), KafkaRead on
         sluice:topic:sqlsec-* only
"""

import base64
import http.client
import json
import os
import socket
import ssl
import struct
import subprocess
import urllib.error
import urllib.request

import psycopg2
import pytest

import security_helpers as S
import sluice_helpers as H
import sql_helpers as Q

ADMIN_PW = "admin-secret"
ALICE_PW = "alice-secret"
BOB_PW = "bob-secret"
CAROL_PW = "carol-secret"
ORDERS = "sqlsec-orders"
SECRET = "ledger-secret"
PAIRS = [(b"k%d" % i, b'{"n":%d}' % i) for i in range(5)]
SECRET_PAIRS = [(b"s", b"hidden")]
SASL_LISTENS = ["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"]
CALL_TIMEOUT = 60


class Env:
    pass


@pytest.fixture(scope="module")
def env(module_secure_broker_factory, tmp_path_factory):
    work = tmp_path_factory.mktemp("sql-security")
    pki = S.Pki(work / "pki")
    server = pki.server()
    b = module_secure_broker_factory(
        SASL_LISTENS,
        extra_args=S.tls_flags(pki, server) + ["--pg", "127.0.0.1:0", "--http", "https://127.0.0.1:0"],
        start=False)
    t = S.Target.offline(b.data_dir, workdir=work / "policies", init=True)
    S.grant(t, "admin", [S.allow("*", "sluice:*")], password=ADMIN_PW)
    S.grant(t, "alice", [S.allow(["KafkaRead"], ["sluice:topic:sqlsec-*"]),
                         S.allow(["KafkaDescribe"], ["sluice:cluster"])], password=ALICE_PW)
    S.user_add(t, "bob", BOB_PW)
    S.grant(t, "carol", [S.allow(["KafkaAlter", "KafkaDescribe"], ["sluice:cluster"]),
                         S.allow(["KafkaRead"], ["sluice:topic:sqlsec-*"])], password=CAROL_PW)
    b.start()
    assert b.pg and b.http, "the broker printed no pg/http listener: %r" % (b.stdout_lines,)
    admin = S.Creds("SASL_PLAINTEXT", "SCRAM-SHA-256", "admin", ADMIN_PW)
    kafka = b.addr("SASL_PLAINTEXT")
    for topic, pairs in ((ORDERS, PAIRS), (SECRET, SECRET_PAIRS)):
        S.create_topic(kafka, admin, topic, 1)
        with S.SecureConn(kafka, admin) as conn:
            r = S.produce_raw(conn, topic, pairs)
            assert r["error"] == 0 and r["base_offset"] == 0, r
    e = Env()
    e.broker = b
    e.pki = pki
    e.pg = b.pg
    # `listening http https://HOST:PORT` or `listening http HOST:PORT`.
    e.https = b.http.split("://", 1)[-1]
    return e


def orders_sql():
    return "SELECT \"offset\", CAST(key AS TEXT), CAST(value AS TEXT) FROM %s ORDER BY \"offset\"" % Q.topic_table(ORDERS)


def expected_orders():
    return [(i, k.decode(), v.decode()) for i, (k, v) in enumerate(PAIRS)]


# --------------------------------------------------------------------------
# PostgreSQL wire
# --------------------------------------------------------------------------


def psql(env, user, password, sql, sslmode="disable"):
    """psql with a conninfo string and PGPASSWORD (None: no password); (rc, stdout, stderr)."""
    host, port = env.pg.rsplit(":", 1)
    conninfo = "host=%s port=%s user=%s dbname=sluice sslmode=%s" % (host, port, user, sslmode)
    cmd = ["psql", conninfo, "-X", "-w", "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1",
           "-v", "VERBOSITY=verbose", "-c", sql]
    run_env = dict(os.environ, PGCONNECT_TIMEOUT="10")
    run_env.pop("PGPASSWORD", None)
    run_env["PGPASSFILE"] = os.devnull
    if password is not None:
        run_env["PGPASSWORD"] = password
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=CALL_TIMEOUT, env=run_env)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def psql_table(out):
    return [tuple(ln.split("|")) for ln in out.splitlines() if ln]


def pg_conn(env, user, password, sslmode="disable"):
    host, port = env.pg.rsplit(":", 1)
    kw = {} if password is None else {"password": password}
    conn = psycopg2.connect(host=host, port=int(port), user=user, dbname="sluice", sslmode=sslmode,
                            connect_timeout=10, **kw)
    conn.autocommit = True
    return conn


def raw_scram_login(env, user, password):
    """A SCRAM-SHA-256 login spoken byte by byte; ("ok", None) or ("error", SQLSTATE, message)."""
    host, port = env.pg.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as s:
        f = s.makefile("rb")

        def send(type_byte, body):
            s.sendall(type_byte + struct.pack("!I", len(body) + 4) + body)

        def read():
            head = f.read(5)
            assert len(head) == 5, "connection closed"
            (n,) = struct.unpack("!I", head[1:])
            return head[:1], f.read(n - 4)

        def error_fields(body):
            out = {}
            for part in body.split(b"\0"):
                if part:
                    out[part[:1].decode()] = part[1:].decode()
            return out

        params = b"user\0" + user.encode() + b"\0database\0sluice\0\0"
        body = struct.pack("!I", 196608) + params
        s.sendall(struct.pack("!I", len(body) + 4) + body)
        t, b = read()
        assert t == b"R" and struct.unpack("!I", b[:4])[0] == 10 and b"SCRAM-SHA-256" in b, (t, b)
        scram = S.ScramClient("SCRAM-SHA-256", "", password)   # PostgreSQL clients leave n= empty
        first = scram.first()
        send(b"p", b"SCRAM-SHA-256\0" + struct.pack("!i", len(first)) + first)
        t, b = read()
        if t == b"E":
            e = error_fields(b)
            return ("error", e.get("C"), e.get("M"))
        assert t == b"R" and struct.unpack("!I", b[:4])[0] == 11, (t, b)
        send(b"p", scram.final(b[4:]))
        t, b = read()
        if t == b"E":
            e = error_fields(b)
            return ("error", e.get("C"), e.get("M"))
        assert t == b"R" and struct.unpack("!I", b[:4])[0] == 12, (t, b)
        assert scram.verify(b[4:]), "server signature does not verify"
        t, b = read()
        assert t == b"R" and struct.unpack("!I", b[:4])[0] == 0, (t, b)
        return ("ok", None)


def test_psql_with_the_right_password_reads_the_topic(env):
    rc, out, err = psql(env, "alice", ALICE_PW, orders_sql())
    assert rc == 0, err
    assert psql_table(out) == [(str(o), k, v) for o, k, v in expected_orders()]


def test_psql_without_or_with_a_wrong_password_fails(env):
    rc, out, err = psql(env, "alice", None, "SELECT 1")
    assert rc != 0 and "password" in err, err
    for user, password in (("alice", "wrong"), ("nobody", ALICE_PW)):
        rc, out, err = psql(env, user, password, "SELECT 1")
        assert rc != 0, out
        assert 'password authentication failed for user "%s"' % user in err, err


def test_failed_login_is_28P01_on_the_wire(env):
    assert raw_scram_login(env, "alice", ALICE_PW) == ("ok", None)
    assert raw_scram_login(env, "alice", "wrong") == (
        "error", "28P01", 'password authentication failed for user "alice"')
    assert raw_scram_login(env, "nobody", "x") == (
        "error", "28P01", 'password authentication failed for user "nobody"')


def test_psql_cleartext_password_over_tls(env):
    rc, out, err = psql(env, "alice", ALICE_PW, orders_sql(), sslmode="require")
    assert rc == 0, err
    assert psql_table(out) == [(str(o), k, v) for o, k, v in expected_orders()]
    rc, out, err = psql(env, "alice", "wrong", "SELECT 1", sslmode="require")
    assert rc != 0 and 'password authentication failed for user "alice"' in err, err


@pytest.mark.parametrize("sslmode", ["disable", "require"])
def test_psycopg2_login(env, sslmode):
    conn = pg_conn(env, "alice", ALICE_PW, sslmode=sslmode)
    try:
        rows = Q.pg_rows(conn, orders_sql())
        assert [(o, k, v) for o, k, v in rows] == expected_orders()
    finally:
        conn.close()
    with pytest.raises(psycopg2.OperationalError) as e:
        pg_conn(env, "alice", "wrong", sslmode=sslmode)
    assert 'password authentication failed for user "alice"' in str(e.value)
    with pytest.raises(psycopg2.OperationalError):
        pg_conn(env, "alice", None, sslmode=sslmode)


def test_reading_a_topic_needs_kafka_read(env):
    rc, out, err = psql(env, "bob", BOB_PW, orders_sql())
    assert rc == 1, (out, err)
    assert "ERROR:  42501:" in err and ORDERS in err and "KafkaRead" in err, err
    conn = pg_conn(env, "alice", ALICE_PW)
    try:
        secret = Q.topic_table(SECRET)
        for sql in ("SELECT * FROM %s" % secret,
                    "SELECT count(*) FROM %s" % secret,
                    "SELECT (SELECT max(value) FROM %s)" % secret,
                    "SELECT o.offset FROM %s o JOIN %s s ON o.offset = s.offset" % (Q.topic_table(ORDERS), secret),
                    "WITH c AS (SELECT * FROM %s) SELECT count(*) FROM c" % secret):
            e = Q.pg_error(conn, sql)
            assert e.pgcode == "42501", (sql, e.pgerror)
            assert SECRET in e.pgerror and "KafkaRead" in e.pgerror, e.pgerror
        # Only the topics alice may describe are listed.
        topics = [r[0] for r in Q.pg_rows(conn, "SELECT topic FROM system.topics ORDER BY topic")]
        assert topics == [ORDERS]
    finally:
        conn.close()


def test_topic_tables_list_only_what_the_user_may_see(env):
    """kafka_topics holds a table per topic the user may describe or read, so the catalog's
    listings (pg_class, information_schema, duckdb_tables()) name no other topic; a topic it
    may not see, existing or not, answers the same permission error."""
    # The catalog PostgreSQL tools read, and DuckDB's own listing.
    listings = ("SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = 'kafka_topics' ORDER BY 1",
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'kafka_topics' ORDER BY 1",
                "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'kafka_topics' ORDER BY 1")
    for user, password, want in (("alice", ALICE_PW, [ORDERS]), ("admin", ADMIN_PW, sorted([ORDERS, SECRET])),
                                 ("bob", BOB_PW, [])):
        conn = pg_conn(env, user, password)
        try:
            for sql in listings:
                assert [r[0] for r in Q.pg_rows(conn, sql)] == want, (user, sql)
        finally:
            conn.close()
    conn = pg_conn(env, "alice", ALICE_PW)
    try:
        errors = {}
        for topic in (SECRET, "ledger-no-such-topic"):
            e = Q.pg_error(conn, "SELECT * FROM %s" % Q.topic_table(topic))
            assert e.pgcode == "42501", (topic, e.pgerror)
            errors[topic] = e.pgerror.replace(topic, "T")
        assert errors[SECRET] == errors["ledger-no-such-topic"], errors
        # A topic she may see but that does not exist is just missing.
        e = Q.pg_error(conn, "SELECT * FROM %s" % Q.topic_table("sqlsec-no-such-topic"))
        assert e.pgcode == "42P01", e.pgerror
    finally:
        conn.close()


# --------------------------------------------------------------------------
# HTTPS
# --------------------------------------------------------------------------


def https_sql(env, sql, user=None, password=None, scheme="https", ca=True):
    """POST /v1/sql; (status, parsed JSON body)."""
    headers = {"Content-Type": "application/sql"}
    if user is not None:
        token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        headers["Authorization"] = "Basic " + token
    req = urllib.request.Request("%s://%s/v1/sql" % (scheme, env.https), data=sql.encode(), method="POST",
                                 headers=headers)
    ctx = ssl.create_default_context(cafile=str(env.pki.ca_cert)) if ca else None
    try:
        with urllib.request.urlopen(req, timeout=CALL_TIMEOUT, context=ctx) as resp:
            return resp.status, resp.read(), resp.headers
    except urllib.error.HTTPError as e:
        try:
            return e.code, e.read(), e.headers
        finally:
            e.close()


def test_https_sql_with_basic_auth(env):
    status, body, _ = https_sql(env, orders_sql(), "alice", ALICE_PW)
    assert status == 200, body
    doc = json.loads(body)
    assert [tuple(r) for r in doc["rows"]] == expected_orders()
    status, body, headers = https_sql(env, "SELECT 1", "alice", "wrong")
    assert status == 401, body
    assert json.loads(body)["error"]["kind"] == "unauthorized"
    assert headers.get("WWW-Authenticate") == 'Basic realm="sluice"'
    status, body, _ = https_sql(env, "SELECT 1")
    assert status == 401, body
    status, body, _ = https_sql(env, orders_sql(), "bob", BOB_PW)
    assert status == 403, body
    assert json.loads(body)["error"]["sqlstate"] == "42501"


def test_plain_http_is_refused(env):
    # The listener speaks TLS only: a plain request gets no HTTP answer at all.
    with pytest.raises((urllib.error.URLError, http.client.HTTPException, OSError)):
        https_sql(env, "SELECT 1", "alice", ALICE_PW, scheme="http", ca=False)


def sluice_sql(env, args, password):
    return S.sluice(["sql", "--format", "csv"] + args, env={"SLUICE_PASSWORD": password} if password else {})


def test_sluice_sql_over_https(env):
    server = "https://" + env.https
    rc, out, err = sluice_sql(env, ["--server", server, "--auth", "alice", "--tls-ca", str(env.pki.ca_cert),
                                    orders_sql()], ALICE_PW)
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert lines[1:] == ["%d,%s,\"%s\"" % (o, k, v.replace('"', '""')) for o, k, v in expected_orders()], out
    rc, out, err = sluice_sql(env, ["--server", server, "--auth", "alice", "--tls-ca", str(env.pki.ca_cert),
                                    "SELECT 1"], "wrong")
    assert rc == 1 and "HTTP 401" in err, err
    # The broker's certificate does not verify against the system's CAs.
    rc, out, err = sluice_sql(env, ["--server", server, "--auth", "alice", "SELECT 1"], ALICE_PW)
    assert rc == 2, err
    # A password never goes over plain HTTP.
    rc, out, err = sluice_sql(env, ["--server", "http://" + env.https, "--auth", "alice", "SELECT 1"], ALICE_PW)
    assert rc == 2 and "https://" in err, err


def test_expansion_routes_need_cluster_rights(env):
    common = ["--server", "https://" + env.https, "--tls-ca", str(env.pki.ca_cert)]
    rc, out, err = S.sluice(["expansion", "list", "--json", "--auth", "alice"] + common,
                            env={"SLUICE_PASSWORD": ALICE_PW})
    assert rc == 0, err
    rc, out, err = S.sluice(["expansion", "list", "--auth", "bob"] + common, env={"SLUICE_PASSWORD": BOB_PW})
    assert rc == 1 and "KafkaDescribe" in err, err


def test_expansion_create_needs_read_on_its_topic(env, tmp_path):
    """Rights on the cluster manage expansions, but the target table holds the topic's
    records: creating one from a topic the user may not read is refused (403) and
    creates nothing; from a readable topic it runs and fills the table."""
    common = ["--server", "https://" + env.https, "--tls-ca", str(env.pki.ca_cert), "--auth", "carol"]
    pw = {"SLUICE_PASSWORD": CAROL_PW}
    schema = tmp_path / "n.json"
    schema.write_text(json.dumps({"fields": [{"name": "n", "type": "int64"}]}))
    rc, out, err = S.sluice(["expansion", "create", "--topic", SECRET, "--target", "main.leaked",
                             "--schema", str(schema)] + common, env=pw)
    assert rc == 1 and "KafkaRead" in err and SECRET in err, (rc, out, err)
    rc, out, err = S.sluice(["expansion", "list", "--json"] + common, env=pw)
    assert rc == 0, err
    assert [x["target"] for x in json.loads(out)["expansions"]] == [], out

    rc, out, err = S.sluice(["expansion", "create", "--topic", ORDERS, "--target", "main.orders_n",
                             "--schema", str(schema), "--backfill", "--wait"] + common, env=pw)
    assert rc == 0, (rc, out, err)
    try:
        def rows():
            status, body, _ = https_sql(env, "SELECT n FROM orders_n ORDER BY n", "admin", ADMIN_PW)
            assert status == 200, body
            got = [r[0] for r in json.loads(body)["rows"]]
            assert got == list(range(len(PAIRS))), got
            return True
        H.wait_until("the expansion of %s to fill main.orders_n" % ORDERS, rows)
        # The table holds the topic's records: reading it needs KafkaRead on the topic.
        conn = pg_conn(env, "alice", ALICE_PW)
        try:
            assert [r[0] for r in Q.pg_rows(conn, "SELECT n FROM orders_n ORDER BY n")] == list(range(len(PAIRS)))
        finally:
            conn.close()
        rc, out, err = psql(env, "bob", BOB_PW, "SELECT n FROM orders_n")
        assert rc == 1 and "ERROR:  42501:" in err and ORDERS in err and "KafkaRead" in err, (rc, out, err)
    finally:
        rc, out, err = S.sluice(["expansion", "drop", "main.orders_n", "--drop-target"] + common, env=pw)
        assert rc == 0, err


def https_get(env, path, user=None, password=None):
    """GET over HTTPS; (status, body text)."""
    headers = {}
    if user is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
    req = urllib.request.Request("https://%s%s" % (env.https, path), headers=headers)
    ctx = ssl.create_default_context(cafile=str(env.pki.ca_cert))
    try:
        with urllib.request.urlopen(req, timeout=CALL_TIMEOUT, context=ctx) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        try:
            return e.code, e.read().decode()
        finally:
            e.close()


def http_failures(metrics_text):
    prefix = 'sluice_authentication_failures_total{listener="http",mechanism="basic"} '
    return sum(int(line[len(prefix):]) for line in metrics_text.splitlines() if line.startswith(prefix))


def test_metrics_need_a_login_and_health_probes_do_not(env):
    # Orchestrators probe without credentials.
    assert https_get(env, "/healthz") == (200, "ok\n")
    assert https_get(env, "/readyz") == (200, "ready\n")
    # /metrics as the SQL endpoints: a login, and KafkaDescribe on the cluster.
    status, body = https_get(env, "/metrics")
    assert status == 401, body
    status, body = https_get(env, "/metrics", "bob", BOB_PW)
    assert status == 403 and "KafkaDescribe" in body, body
    status, before = https_get(env, "/metrics", "alice", ALICE_PW)
    assert status == 200, before
    assert 'kafka_topic_partitions{topic="%s"} 1\n' % ORDERS in before
    assert https_get(env, "/metrics", "alice", "wrong")[0] == 401
    status, after = https_get(env, "/metrics", "alice", ALICE_PW)
    assert status == 200
    assert http_failures(after) == http_failures(before) + 1
