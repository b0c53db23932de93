"""Topics as SQL tables through every front end: psql, psycopg2, HTTP and `sluice sql`.

One broker and one dataset for the module: 100,000 JSON records with keys and two
headers (one of them not UTF-8) produced with confluent-kafka (acks=all) to a
4-partition topic; the delivery reports are the truth every endpoint is compared with.
"""

import base64
import csv
import io
import json
import random

import pytest
from confluent_kafka import Producer

import sluice_helpers as H
import sql_helpers as S

pytestmark = pytest.mark.slow

N = 100_000
PARTITIONS = 4
OPS = ("c", "u", "d")
SAMPLES = 50
COLUMNS = ["partition", "offset", "timestamp_producer", "timestamp_broker", "key", "value", "headers"]
COLUMN_TYPES = ["INTEGER", "INTEGER", "INTEGER", "INTEGER", "BLOB", "BLOB", "TEXT"]


def op_for(i):
    # 50% c, 30% u, 20% d
    r = i % 10
    return "c" if r < 5 else "u" if r < 8 else "d"


def value_for(i):
    doc = {"id": i, "op": op_for(i), "user": "użytkownik-%d" % (i % 1000), "amount": (i * 37 % 100000) / 100.0}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def headers_for(i):
    # The second header value is not UTF-8 (0xff): it comes back as {"base64": ...}.
    return [("trace", b"t-%d" % i), ("bin", bytes([i % 251, 0xFF, 0xFE]))]


def headers_json_for(i):
    return [{"key": "trace", "value": "t-%d" % i},
            {"key": "bin", "value": {"base64": base64.b64encode(bytes([i % 251, 0xFF, 0xFE])).decode()}}]


class Dataset:
    pass


@pytest.fixture(scope="module")
def ds(module_broker_factory):
    b = module_broker_factory(extra_args=S.SQL_ARGS)
    assert b.pg and b.http, "broker did not report its pg/http listeners: %r" % b.stdout_lines
    topic = H.unique_topic("sql-clients")
    H.create_topic(b.bootstrap, topic, PARTITIONS)
    records = [dict(key=b"k%d" % i, value=value_for(i), headers=headers_for(i)) for i in range(N)]
    producer = Producer(H.producer_conf(b.bootstrap, **{"linger.ms": 20, "batch.num.messages": 10000}))
    t_before = H.now_ms()
    dr = H.produce_all(producer, topic, records, timeout=120.0)
    t_after = H.now_ms()
    d = Dataset()
    d.broker, d.topic, d.table = b, topic, S.topic_table(topic)
    d.t_before, d.t_after = t_before, t_after
    d.by_pos = {}
    for i, rep in enumerate(dr):
        ts_type, ts = rep.timestamp
        assert ts_type == 1 and ts > 0, "delivery report timestamp %r" % (rep.timestamp,)  # CreateTime
        d.by_pos[(rep.partition, rep.offset)] = (i, ts)
    assert len(d.by_pos) == N
    H.assert_contiguous(d.by_pos.keys(), "delivery reports")
    d.per_partition = H.counts_by_partition(d.by_pos.keys())
    assert sorted(d.per_partition) == list(range(PARTITIONS)), d.per_partition
    d.op_counts = {op: sum(1 for i in range(N) if op_for(i) == op) for op in OPS}
    rnd = random.Random(20240501)
    positions = sorted(d.by_pos)
    # The first and last record of every partition, and random ones.
    edge = [(p, 0) for p in range(PARTITIONS)] + [(p, d.per_partition[p] - 1) for p in range(PARTITIONS)]
    d.sample = sorted(set(edge) | set(rnd.sample(positions, SAMPLES - len(edge))))
    d.sample_sql = ("SELECT partition, \"offset\", timestamp_producer, timestamp_broker, key, value, headers FROM %s "
                    "WHERE (partition, \"offset\") IN (VALUES %s) ORDER BY partition, \"offset\""
                    % (d.table, ", ".join("(%d, %d)" % po for po in d.sample)))
    return d


def expected_row(ds, pos):
    i, ts = ds.by_pos[pos]
    return dict(partition=pos[0], offset=pos[1], timestamp_producer=ts, key=b"k%d" % i, value=value_for(i),
                headers=headers_json_for(i))


def check_sampled_rows(ds, got, endpoint):
    """got: list of dicts with the columns decoded to Python values (key/value bytes, headers parsed)."""
    assert [(r["partition"], r["offset"]) for r in got] == ds.sample, (
        "%s: sampled rows come back at other positions: %r" % (endpoint, [(r["partition"], r["offset"]) for r in got]))
    bad = []
    for r in got:
        e = expected_row(ds, (r["partition"], r["offset"]))
        for col in ("timestamp_producer", "key", "value", "headers"):
            if r[col] != e[col]:
                bad.append("%s (%d,%d) %s: expected %r, got %r" % (endpoint, r["partition"], r["offset"], col,
                                                                    e[col], r[col]))
        tb = r["timestamp_broker"]
        if not (isinstance(tb, int) and ds.t_before - 1000 <= tb <= ds.t_after + 1000):
            bad.append("%s (%d,%d) timestamp_broker %r outside the produce window [%d, %d]"
                       % (endpoint, r["partition"], r["offset"], tb, ds.t_before, ds.t_after))
    assert not bad, "\n".join(bad[:20])


COUNT_SQL = "SELECT count(*) FROM %s"
PER_PARTITION_SQL = "SELECT partition, count(*) FROM %s GROUP BY partition ORDER BY partition"
OPS_SQL = "SELECT value ->> '$.op' AS op, count(*) AS n FROM %s GROUP BY 1 ORDER BY 1"


def test_psql(ds):
    addr = ds.broker.pg
    assert S.psql_lines(addr, COUNT_SQL % ds.table) == [str(N)]
    assert S.psql_lines(addr, PER_PARTITION_SQL % ds.table) == [
        "%d,%d" % (p, n) for p, n in sorted(ds.per_partition.items())]
    assert S.psql_lines(addr, OPS_SQL % ds.table) == ["%s,%d" % (op, ds.op_counts[op]) for op in sorted(OPS)]
    got = []
    for line in S.psql_lines(addr, ds.sample_sql):
        p, o, tp, tb, key, value, headers = line.split(",", 6)
        got.append(dict(partition=int(p), offset=int(o), timestamp_producer=int(tp), timestamp_broker=int(tb),
                        key=S.parse_bytea_text(key), value=S.parse_bytea_text(value), headers=json.loads(headers)))
    check_sampled_rows(ds, got, "psql")


def test_psycopg2(ds):
    conn = S.pg_connect(ds.broker.pg)
    try:
        with conn.cursor() as cur:
            cur.execute(COUNT_SQL % ds.table)
            assert cur.fetchall() == [(N,)]
            cur.execute(PER_PARTITION_SQL % ds.table)
            assert cur.fetchall() == sorted(ds.per_partition.items())
            cur.execute(OPS_SQL % ds.table)
            assert [d.name for d in cur.description] == ["op", "n"]
            assert cur.fetchall() == [(op, ds.op_counts[op]) for op in sorted(OPS)]
            # A parameter in a pushed-down predicate, and a JSON field summed. ->> gives text in
            # PostgreSQL's dialect (DuckDB's, PostgreSQL's): cast it to sum it (docs/sql.md).
            cur.execute("SELECT count(*), sum(CAST(value ->> '$.amount' AS DOUBLE PRECISION)) FROM " + ds.table + " WHERE partition = %s", (2,))
            n, total = cur.fetchone()
            expected_ids = [i for (p, _), (i, _) in ds.by_pos.items() if p == 2]
            assert n == len(expected_ids) == ds.per_partition[2]
            assert total == pytest.approx(sum((i * 37 % 100000) / 100.0 for i in expected_ids), rel=1e-9)

            cur.execute(ds.sample_sql)
            assert [d.name for d in cur.description] == COLUMNS
            got = []
            for p, o, tp, tb, key, value, headers in cur.fetchall():
                got.append(dict(partition=p, offset=o, timestamp_producer=tp, timestamp_broker=tb,
                                key=S.as_bytes(key), value=S.as_bytes(value), headers=json.loads(headers)))
            check_sampled_rows(ds, got, "psycopg2")
    finally:
        conn.close()


def test_http(ds):
    addr = ds.broker.http
    assert S.http_rows(addr, COUNT_SQL % ds.table) == [[N]]
    assert S.http_rows(addr, PER_PARTITION_SQL % ds.table) == [[p, n] for p, n in sorted(ds.per_partition.items())]
    assert S.http_rows(addr, OPS_SQL % ds.table) == [[op, ds.op_counts[op]] for op in sorted(OPS)]
    doc = S.http_query(addr, ds.sample_sql)
    assert [c["name"] for c in doc["columns"]] == COLUMNS, doc["columns"]
    assert [c["type"] for c in doc["columns"]] == COLUMN_TYPES, doc["columns"]
    assert doc.get("row_count") == len(ds.sample), {k: v for k, v in doc.items() if k != "rows"}
    got = []
    for p, o, tp, tb, key, value, headers in doc["rows"]:
        # Keys and values are valid UTF-8 here: plain strings.
        assert isinstance(key, str) and isinstance(value, str), (key, value)
        got.append(dict(partition=p, offset=o, timestamp_producer=tp, timestamp_broker=tb,
                        key=S.json_blob(key), value=S.json_blob(value), headers=json.loads(headers)))
    check_sampled_rows(ds, got, "http")

    # The same rows as NDJSON (one object per row) and CSV.
    r = S.http_sql(addr, ds.sample_sql, format="ndjson")
    assert r.status == 200 and r.content_type.startswith("application/x-ndjson"), r
    nd = [json.loads(ln) for ln in r.text.splitlines() if ln.strip()]
    assert [[o[c] for c in COLUMNS] for o in nd] == doc["rows"]
    r = S.http_sql(addr, ds.sample_sql, format="csv")
    assert r.status == 200 and r.content_type.startswith("text/csv"), r
    rows = list(csv.reader(io.StringIO(r.text, newline="")))
    assert rows[0] == COLUMNS
    assert rows[1:] == [[str(v) for v in row] for row in doc["rows"]]


def test_cli(ds):
    addr = ds.broker.http
    head, rows = S.cli_csv(addr, COUNT_SQL % ds.table)
    # PostgreSQL names the column `count`, as DuckDB does.
    assert head == ["count"] and rows == [[str(N)]]
    head, rows = S.cli_csv(addr, PER_PARTITION_SQL % ds.table)
    assert rows == [[str(p), str(n)] for p, n in sorted(ds.per_partition.items())]
    head, rows = S.cli_csv(addr, OPS_SQL % ds.table)
    assert head == ["op", "n"] and rows == [[op, str(ds.op_counts[op])] for op in sorted(OPS)]
    head, rows = S.cli_csv(addr, ds.sample_sql)
    assert head == COLUMNS
    got = []
    for p, o, tp, tb, key, value, headers in rows:
        got.append(dict(partition=int(p), offset=int(o), timestamp_producer=int(tp), timestamp_broker=int(tb),
                        key=key.encode("utf-8"), value=value.encode("utf-8"), headers=json.loads(headers)))
    check_sampled_rows(ds, got, "cli")
    # --format json gives the HTTP document's rows.
    rc, out, err = S.cli(addr, ds.sample_sql, "--format", "json")
    assert rc == 0, err
    assert json.loads(out)["rows"] == S.http_rows(ds.broker.http, ds.sample_sql)


def test_every_position_and_broker_time(ds):
    """Every (partition, offset, timestamp_producer) against the delivery reports; timestamp_broker
    within the produce window and non-decreasing by offset within each partition."""
    conn = S.pg_connect(ds.broker.pg)
    try:
        rows = S.pg_rows(conn, "SELECT partition, \"offset\", timestamp_producer, timestamp_broker FROM %s" % ds.table)
        assert len(rows) == N
        # Rows come in partition order, then offset order.
        assert [(p, o) for p, o, _, _ in rows] == sorted(ds.by_pos)
        wrong_ts = [(p, o, tp) for p, o, tp, _ in rows if tp != ds.by_pos[(p, o)][1]]
        assert not wrong_ts, "timestamp_producer differs from the delivery report at %r" % wrong_ts[:10]
        outside = [(p, o, tb) for p, o, _, tb in rows if not ds.t_before - 1000 <= tb <= ds.t_after + 1000]
        assert not outside, "timestamp_broker outside [%d, %d]: %r" % (ds.t_before, ds.t_after, outside[:10])
        decreasing = [(p, o) for (p, o, _, tb), (p0, _, _, tb0) in zip(rows[1:], rows) if p == p0 and tb < tb0]
        assert not decreasing, "timestamp_broker decreases at %r" % decreasing[:10]
        # The same, asked in SQL with a window function.
        assert S.pg_rows(conn, """
            SELECT count(*) FROM (
              SELECT timestamp_broker - lag(timestamp_broker) OVER (PARTITION BY partition ORDER BY "offset") AS d
              FROM %s) WHERE d < 0""" % ds.table) == [(0,)]
        assert S.pg_rows(conn, "SELECT min(timestamp_broker), max(timestamp_broker) FROM %s" % ds.table) == [
            (min(r[3] for r in rows), max(r[3] for r in rows))]
        # Producing took a while; the broker's times spread over it (not one constant).
        assert len(set(r[3] for r in rows)) > 1
    finally:
        conn.close()
    ds.broker.assert_alive()
