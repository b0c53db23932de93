"""Clear answers where clients used to get silence (issue 33): producing to a topic that
does not exist (auto-creation off) is logged once per topic and minute with the way out;
a transactional producer fails at once with the reason, in librdkafka as in the raw
protocol, and is logged once per client and minute; psql and psycopg2 see boolean
expressions as PostgreSQL's booleans. One broker (with the SQL listeners) for the module.
"""

import re
import socket
import struct
import time

import pytest
from confluent_kafka import Producer

import idempotence_helpers as I
import kproto as K
import sluice_helpers as H
import sql_helpers as S


@pytest.fixture(scope="module")
def b(module_broker_factory):
    return module_broker_factory(extra_args=S.SQL_ARGS)


def log_lines(broker, pattern):
    return [ln for ln in H.tail(broker.stderr_paths[-1], 10_000_000).splitlines() if re.search(pattern, ln)]


def test_producing_to_a_missing_topic_is_logged_once_with_the_way_out(b):
    missing = H.unique_topic("never-created")
    p = Producer(H.producer_conf(b.bootstrap, **{"message.timeout.ms": 4000, "topic.metadata.refresh.interval.ms": 200}))
    d = H.produce_one(p, missing, b"k", b"v")
    # librdkafka asked for the topic's metadata again and again until its timeout.
    assert d.err is not None, d
    lines = log_lines(b, r"topic '%s'" % re.escape(missing))
    assert len(lines) == 1, lines
    assert " INFO " in lines[0] or lines[0].startswith("INFO"), lines[0]
    assert "does not exist" in lines[0] and "sluice topic create %s" % missing in lines[0], lines[0]
    assert "--auto-create-topics" in lines[0], lines[0]
    # Another topic gets its own line; a raw Produce to it counts as the same topic.
    other = H.unique_topic("never-created-2")
    with K.Conn(b.bootstrap) as conn:
        for _ in range(3):
            K.metadata_v1(conn, [other])
    assert len(log_lines(b, r"INFO topics: .*topic '%s'" % re.escape(other))) == 1


def test_raw_find_coordinator_and_init_producer_id_serve_transactions(b):
    with K.Conn(b.bootstrap) as conn:
        for version in (1, 3, 4):
            (c,) = K.find_coordinator(conn, version, ["raw-tx"], key_type=1)
            assert (c["error"], c["port"]) == (0, b.port), (version, c)
        t = I.init_producer_id_flexible(conn, 5, transactional_id="raw-tx")
        assert t["error"] == 0 and t["producer_id"] >= 0 and t["epoch"] == 0, t
        # The same transactional id again: the same producer id, the next epoch.
        again = I.init_producer_id_flexible(conn, 5, transactional_id="raw-tx")
        assert (again["error"], again["producer_id"], again["epoch"]) == (0, t["producer_id"], 1), again
        # Groups and idempotent producers are unaffected.
        (g,) = K.find_coordinator(conn, 4, ["some-group"])
        assert g["error"] == 0 and g["port"] == b.port, g
        assert I.init_producer_id_flexible(conn, 5)["error"] == 0


BOOLEANS = [
    ("now() IS NOT NULL", "t", True),
    ("1 = 2", "f", False),
    ("NOT (1 = 2)", "t", True),
    ("1 < 2 AND 2 < 3", "t", True),
    ("1 > 2 OR false", "f", False),
    ("true", "t", True),
    ("3 IN (1, 2)", "f", False),
    ("'abc' LIKE 'a%'", "t", True),
    ("2 BETWEEN 1 AND 3", "t", True),
    ("EXISTS (SELECT 1)", "t", True),
    ("'1'::boolean", "t", True),
    ("NULL IS NULL AS flag", "t", True),
    # PostgreSQL's types: a scalar subquery's comparison is a boolean (docs/sql.md, Engines).
    ("(SELECT 1 = 1)", "t", True),
]
# ->> gives text.
NOT_BOOLEANS = [("1 + 1", "2", 2), ("(1 = 1)::int", "1", 1), ("CASE WHEN 1 = 1 THEN 'y' END", "y", "y"),
                ("'{\"a\": 1}' ->> '$.a'", "1", "1")]


def test_psql_prints_booleans_as_t_and_f(b):
    for expr, text, _ in BOOLEANS + NOT_BOOLEANS:
        assert S.psql_lines(b.pg, "SELECT %s" % expr) == [text], expr
    # Several columns, a table's columns beside, and a star before: positions hold.
    out = S.psql_lines(b.pg, "SELECT 1 = 1, 2, 'x' = 'y' FROM (SELECT 5 AS n) s")
    assert out == ["t,2,f"], out


def test_psycopg2_reads_booleans_as_true_and_false(b):
    conn = S.pg_connect(b.pg)
    try:
        cur = conn.cursor()
        for expr, _, want in BOOLEANS + NOT_BOOLEANS:
            cur.execute("SELECT %s" % expr.replace("%", "%%"))
            got = cur.fetchone()[0]
            assert got == want and type(got) is type(want), (expr, got, want)
            assert (cur.description[0].type_code == 16) == isinstance(want, bool), (expr, cur.description)
    finally:
        conn.close()


def pg_extended(addr, sql, params):
    """Parse, Bind (text parameters), Describe and Execute on a raw connection: the
    RowDescription's type OIDs and the rows' text values."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=20) as s:
        def send(kind, body):
            s.sendall(kind + struct.pack("!i", len(body) + 4) + body)

        def messages():
            buf = b""
            while True:
                while len(buf) < 5 or len(buf) < 1 + struct.unpack("!i", buf[1:5])[0]:
                    chunk = s.recv(65536)
                    assert chunk, "the connection closed"
                    buf += chunk
                n = struct.unpack("!i", buf[1:5])[0]
                yield buf[:1], buf[5:1 + n]
                buf = buf[1 + n:]

        startup = struct.pack("!i", 196608) + b"user\0test\0database\0sluice\0\0"
        s.sendall(struct.pack("!i", len(startup) + 4) + startup)
        msgs = messages()
        for kind, body in msgs:
            assert kind != b"E", body
            if kind == b"Z":
                break
        send(b"P", b"\0" + sql.encode() + b"\0" + struct.pack("!h", 0))
        bind = b"\0\0" + struct.pack("!hh", 0, len(params))
        for v in params:
            bind += struct.pack("!i", len(v)) + v.encode()
        send(b"B", bind + struct.pack("!h", 0))
        send(b"D", b"P\0")
        send(b"E", b"\0" + struct.pack("!i", 0))
        send(b"S", b"")
        oids, rows = None, []
        for kind, body in msgs:
            assert kind != b"E", body
            if kind == b"T":
                n = struct.unpack("!h", body[:2])[0]
                pos, oids = 2, []
                for _ in range(n):
                    pos = body.index(b"\0", pos) + 1
                    oids.append(struct.unpack("!i", body[pos + 6:pos + 10])[0])
                    pos += 18
            elif kind == b"D":
                n, pos, row = struct.unpack("!h", body[:2])[0], 2, []
                for _ in range(n):
                    ln = struct.unpack("!i", body[pos:pos + 4])[0]
                    row.append(None if ln < 0 else body[pos + 4:pos + 4 + ln].decode())
                    pos += 4 + max(ln, 0)
                rows.append(row)
            elif kind == b"Z":
                return oids, rows


def test_extended_protocol_announces_bool(b):
    oids, rows = pg_extended(b.pg, "SELECT $1::int > 3 AS big, $2::int, $1::int = 5", ["5", "7"])
    # $2::int is int4, as in PostgreSQL
    assert oids == [16, 23, 16] and rows == [["t", "7", "t"]], (oids, rows)
