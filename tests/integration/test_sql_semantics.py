"""What SQL over topics means: read-your-writes (also under a running producer), how records and
their edge cases read on each front end, latest value per key, time-range pushdown, topic
tables that come and go with their topics, system tables, users' own tables."""

import csv
import io
import json
import random
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource

import sluice_helpers as H
import sql_helpers as S

# A broker-level topic default, to see system.configs report its source as "broker".
TOPIC_DEFAULT = ("retention.bytes", "1000000000")


@pytest.fixture(scope="module")
def b(module_broker_factory):
    broker = module_broker_factory(extra_args=S.SQL_ARGS + ["--topic-default", "%s=%s" % TOPIC_DEFAULT])
    assert broker.pg and broker.http, broker.stdout_lines
    return broker


def fast_producer(bootstrap, **extra):
    conf = {"linger.ms": 0}
    conf.update(extra)
    return Producer(H.producer_conf(bootstrap, **conf))


# --------------------------------------------------------------------------
# Read-your-writes
# --------------------------------------------------------------------------


def test_read_your_writes(b, pg, topic_name):
    """Each acknowledged record is visible to the very next query, on both wire protocols."""
    H.create_topic(b.bootstrap, topic_name, 2)
    table = S.topic_table(topic_name)
    producer = fast_producer(b.bootstrap)
    offsets = {0: 0, 1: 0}
    for i in range(50):
        p = i % 2
        value = json.dumps({"seq": i, "nonce": uuid.uuid4().hex}).encode()
        d = H.produce_one(producer, topic_name, b"k%d" % i, value, partition=p)
        assert d.err is None, d
        assert (d.partition, d.offset) == (p, offsets[p]), d
        offsets[p] += 1
        sql = ("SELECT (SELECT count(*) FROM {t}), (SELECT count(*) FROM {t} WHERE partition = {p}), "
               "(SELECT value FROM {t} WHERE partition = {p} AND \"offset\" = {o})").format(t=table, p=p, o=d.offset)
        got = S.pg_rows(pg, sql)
        assert len(got) == 1, got
        assert (got[0][0], got[0][1], S.as_bytes(got[0][2])) == (i + 1, offsets[p], value), (
            "psycopg2 after record %d at (%d,%d): %r" % (i, p, d.offset, got))
        # Over HTTP with the partition and offset as parameters ($1, $2).
        rows = S.http_rows(b.http, "SELECT (SELECT count(*) FROM {t}), (SELECT count(*) FROM {t} WHERE partition = $1), "
                           "(SELECT value FROM {t} WHERE partition = $1 AND \"offset\" = $2)".format(t=table),
                           params=(p, d.offset))
        assert rows == [[i + 1, offsets[p], value.decode()]], "HTTP after record %d at (%d,%d): %r" % (
            i, p, d.offset, rows)


def test_one_statement_sees_one_cut_while_producing(b, pg, topic_name):
    """While a producer keeps writing, every statement sees each partition at one point (its scans
    agree with each other) and at least every record acknowledged before it started."""
    H.create_topic(b.bootstrap, topic_name, 2)
    table = S.topic_table(topic_name)
    acked = {0: 0, 1: 0}
    stop = threading.Event()
    errors = []

    def produce():
        producer = fast_producer(b.bootstrap, **{"linger.ms": 1})

        def cb(err, msg):
            if err is not None:
                errors.append(err)
            else:
                acked[msg.partition()] = max(acked[msg.partition()], msg.offset() + 1)
        i = 0
        while not stop.is_set() and i < 20000:
            producer.produce(topic_name, value=b'{"i": %d}' % i, partition=i % 2, on_delivery=cb)
            i += 1
            if i % 50 == 0:
                producer.poll(0.01)
        producer.flush(30)

    t = threading.Thread(target=produce, daemon=True)
    t.start()
    try:
        seen_last = 0
        deadline = time.monotonic() + 3.0
        n_queries = 0
        while time.monotonic() < deadline:
            floor = dict(acked)
            row = S.pg_rows(pg, """
                SELECT (SELECT count(*) FROM {t} WHERE partition = 0),
                       (SELECT coalesce(max("offset") + 1, 0) FROM {t} WHERE partition = 0),
                       (SELECT count(*) FROM {t} x JOIN {t} y ON y.partition = 0 AND y.offset = x.offset
                        WHERE x.partition = 0),
                       (SELECT count(*) FROM {t} WHERE partition = 1)""".format(t=table))[0]
            n_queries += 1
            assert row[0] == row[1] == row[2], "scans of partition 0 in one statement disagree: %r" % (row,)
            assert row[0] >= floor[0] and row[3] >= floor[1], (
                "a statement missed acknowledged records: saw %r, acknowledged before it %r" % (row, floor))
            assert row[0] >= seen_last, "partition 0 went back from %d to %d records" % (seen_last, row[0])
            seen_last = row[0]
        assert n_queries >= 5 and seen_last > 0, (n_queries, seen_last)
    finally:
        stop.set()
        t.join(timeout=40)
    assert not errors, errors[:5]
    assert S.pg_rows(pg, "SELECT partition, count(*) FROM %s GROUP BY 1 ORDER BY 1" % table) == [
        (0, acked[0]), (1, acked[1])]


def test_record_edge_cases_on_every_endpoint(b, pg, topic_name):
    """NULL and empty keys and values, bytes that are not UTF-8, headers with a null value,
    repeated and empty keys, explicit producer timestamps: as each front end documents them."""
    H.create_topic(b.bootstrap, topic_name, 1)
    recs = [
        dict(key=None, value=b"null key", timestamp=1000000000000),
        dict(key=b"", value=b"", headers=[]),
        dict(key=b"tomb", value=None),
        dict(key=b"\xff\x00bin", value=b"\x00\x01\xfe",
             headers=[("n", None), ("dup", b"1"), ("dup", b"2"), ("", b""), ("b", b"\xc3")]),
        dict(key="schlüssel".encode(), value='{"a": "ü", "b": "x,y\\"z"}'.encode(), headers=[("ü", "wert".encode())]),
    ]
    producer = fast_producer(b.bootstrap)
    dr = H.produce_all(producer, topic_name, recs)
    assert [d.offset for d in dr] == list(range(len(recs)))
    headers_json = [[], [], [], [{"key": "n", "value": None}, {"key": "dup", "value": "1"},
                                 {"key": "dup", "value": "2"}, {"key": "", "value": ""},
                                 {"key": "b", "value": {"base64": "ww=="}}],
                    [{"key": "ü", "value": "wert"}]]
    sql = "SELECT \"offset\", timestamp_producer, key, value, headers FROM %s ORDER BY \"offset\"" % S.topic_table(topic_name)

    rows = S.pg_rows(pg, sql)
    assert [(o, ts, S.as_bytes(k), S.as_bytes(v), json.loads(h)) for o, ts, k, v, h in rows] == [
        (i, d.timestamp[1], r["key"], r["value"], headers_json[i]) for i, (r, d) in enumerate(zip(recs, dr))]
    assert rows[0][1] == 1000000000000

    doc = S.http_query(b.http, sql)
    assert doc["rows"] == [
        [0, 1000000000000, None, "null key", "[]"],
        [1, dr[1].timestamp[1], "", "", "[]"],
        [2, dr[2].timestamp[1], "tomb", None, "[]"],
        [3, dr[3].timestamp[1], {"base64": "/wBiaW4="}, {"base64": "AAH+"}, doc["rows"][3][4]],
        [4, dr[4].timestamp[1], "schlüssel", recs[4]["value"].decode(), doc["rows"][4][4]],
    ]
    assert [json.loads(r[4]) for r in doc["rows"]] == headers_json

    # CSV: NULL is an empty field, an empty string a quoted one; bytes that are not UTF-8 as base64.
    csv_rows = [
        ["0", "1000000000000", "", "null key", "[]"],
        ["1", str(dr[1].timestamp[1]), '""', '""', "[]"],
        ["2", str(dr[2].timestamp[1]), "tomb", "", "[]"],
        ["3", str(dr[3].timestamp[1]), "/wBiaW4=", "AAH+"],
        ["4", str(dr[4].timestamp[1]), "schlüssel"],
    ]
    r = S.http_sql(b.http, sql, format="csv")
    assert r.status == 200
    lines = r.text.split("\r\n")
    assert lines[0] == "offset,timestamp_producer,key,value,headers"
    for want, line in zip(csv_rows, lines[1:]):
        assert line.startswith(",".join(want)), (want, line)
    parsed = list(csv.reader(io.StringIO(r.text, newline="")))
    assert parsed[5][3] == recs[4]["value"].decode() and json.loads(parsed[4][4]) == headers_json[3]
    rc, out, err = S.cli(b.http, sql)
    assert rc == 0 and out == r.text, (rc, err, out[:300])

    # psql: NULL prints as nothing, an empty bytea as \x.
    lines = S.psql_lines(b.pg, "SELECT \"offset\", key, value FROM %s ORDER BY \"offset\"" % S.topic_table(topic_name))
    assert lines == ["0,,%s" % S.bytea_text(b"null key"), "1,\\x,\\x", "2,%s," % S.bytea_text(b"tomb"),
                     "3,\\xff0062696e,\\x0001fe", "4,%s,%s" % (S.bytea_text(recs[4]["key"]),
                                                            S.bytea_text(recs[4]["value"]))]


def test_log_append_time_topic(b, pg, topic_name):
    """On a LogAppendTime topic, timestamp_producer is the broker's time, whatever the producer set."""
    H.create_topic(b.bootstrap, topic_name, 1, config={"message.timestamp.type": "LogAppendTime"})
    producer = fast_producer(b.bootstrap)
    before = H.now_ms()
    dr = H.produce_all(producer, topic_name, [dict(key=b"k", value=b"v%d" % i, timestamp=1000000000000)
                                              for i in range(3)])
    after = H.now_ms()
    rows = S.pg_rows(pg, "SELECT \"offset\", timestamp_producer, timestamp_broker FROM %s ORDER BY \"offset\""
                     % S.topic_table(topic_name))
    assert [r[0] for r in rows] == [0, 1, 2]
    for (o, tp, tb), d in zip(rows, dr):
        assert before - 5 <= tp <= after + 5 and before - 5 <= tb <= after + 5, (before, rows, after)
        assert d.timestamp == (2, tp), (d.timestamp, tp)  # the broker's time, as the producer was told


# --------------------------------------------------------------------------
# Latest value per key (CDC)
# --------------------------------------------------------------------------

LATEST_SQL = """
SELECT CAST(key AS TEXT) AS key, CAST(value AS TEXT) AS value FROM (
  SELECT key, value,
         row_number() OVER (PARTITION BY key ORDER BY timestamp_broker DESC, "offset" DESC) AS rn
  FROM {t})
WHERE rn = 1 AND value IS NOT NULL
ORDER BY key"""


def test_latest_value_per_key(b, pg, topic_name):
    H.create_topic(b.bootstrap, topic_name, 3)
    rnd = random.Random(7)
    keys = ["cust-%02d" % k for k in range(40)]
    events = []  # (key, value or None)
    version = {}

    def upsert(k):
        version[k] = version.get(k, 0) + 1
        doc = {"op": "u" if version[k] > 1 else "c", "after": {"id": k, "version": version[k],
                                                                "balance": rnd.randint(0, 10000)}}
        events.append((k, json.dumps(doc, separators=(",", ":"))))

    for k in keys:
        upsert(k)
    for _ in range(600):
        k = rnd.choice(keys)
        if rnd.random() < 0.1:
            events.append((k, None))  # tombstone
        else:
            upsert(k)
    for k in keys[:5]:  # deleted for good
        upsert(k)
        events.append((k, None))
    for k in keys[5:10]:  # deleted, then created again
        events.append((k, None))
        upsert(k)
    latest = {}
    for k, v in events:
        latest[k] = v
    expected = sorted((k, v) for k, v in latest.items() if v is not None)
    assert 25 <= len(expected) <= 35 and all(k not in dict(expected) for k in keys[:5])

    producer = fast_producer(b.bootstrap, **{"linger.ms": 5})
    # Several produce rounds, so that the broker's append times differ between batches.
    chunk = len(events) // 4 + 1
    for start in range(0, len(events), chunk):
        recs = [dict(key=k.encode(), value=v.encode() if v is not None else None)
                for k, v in events[start:start + chunk]]
        H.produce_all(producer, topic_name, recs)
        time.sleep(0.05)

    sql = LATEST_SQL.format(t=S.topic_table(topic_name))
    assert S.pg_rows(pg, sql) == expected
    assert S.http_rows(b.http, sql) == [[k, v] for k, v in expected]
    head, rows = S.cli_csv(b.http, sql)
    assert head == ["key", "value"] and rows == [[k, v] for k, v in expected]
    # Tombstones are rows with a NULL value.
    n_tomb = sum(1 for _, v in events if v is None)
    assert S.pg_rows(pg, "SELECT count(*), count(value) FROM %s" % S.topic_table(topic_name)) == [
        (len(events), len(events) - n_tomb)]


# --------------------------------------------------------------------------
# Time-range pushdown
# --------------------------------------------------------------------------


def last_scan(rows):
    assert len(rows) == 1 and len(rows[0]) == 1, rows
    doc = json.loads(rows[0][0])
    for k in ("partitions_scanned", "segments_read", "batches_read", "records_read", "bytes_read"):
        assert isinstance(doc.get(k), int), doc
    return doc


def test_time_range_reads_only_its_segments(b, pg, topic_name):
    """Records produced over ~6 s into 16 KiB segments; a query for the last second gets exactly
    its records and reads far fewer segments than a full scan."""
    H.create_topic(b.bootstrap, topic_name, 2, config={"segment.bytes": "16384"})
    table = S.topic_table(topic_name)
    # Batches well under the segment size (a batch larger than segment.bytes is refused).
    producer = fast_producer(b.bootstrap, **{"linger.ms": 2, "batch.size": 4000})
    rounds, per_round = 40, 50
    produced = {}  # (p, o) -> (value, t_start, t_end) of its produce round
    producer_ts = {}  # (p, o) -> CreateTime from the delivery report
    for r in range(rounds):
        recs = [dict(key=b"r%02d-%03d" % (r, j), value=b"%s|round=%02d|%s" % (b"x" * 180, r, b"%03d" % j),
                     partition=j % 2) for j in range(per_round)]
        t_start = H.now_ms()
        dr = H.produce_all(producer, topic_name, recs)
        t_end = H.now_ms()
        for rec, d in zip(recs, dr):
            produced[(d.partition, d.offset)] = (rec["value"], t_start, t_end)
            producer_ts[(d.partition, d.offset)] = d.timestamp[1]
        time.sleep(0.12)
    total = rounds * per_round
    assert len(produced) == total

    parts = S.pg_rows(pg, "SELECT partition, high_watermark, segments FROM system.partitions "
                          "WHERE topic = %s ORDER BY partition", (topic_name,))
    assert [(p, hw) for p, hw, _ in parts] == [(0, total // 2), (1, total // 2)], parts
    n_segments = sum(s for _, _, s in parts)
    assert n_segments >= 16, "expected many 16 KiB segments, got %r" % parts

    # A full scan: every record, and the scan reads (nearly) every segment.
    full = S.pg_rows(pg, "SELECT partition, \"offset\", timestamp_broker, value FROM %s" % table)
    full_scan = last_scan(S.pg_rows(pg, "SELECT sluice_last_scan()"))
    assert len(full) == total
    assert {(p, o): S.as_bytes(v) for p, o, _, v in full} == {po: v for po, (v, _, _) in produced.items()}
    assert full_scan["records_read"] == total and full_scan["partitions_scanned"] == 2, full_scan
    assert full_scan["segments_read"] >= n_segments - 2, (full_scan, parts)

    broker_time = {(p, o): tb for p, o, tb, _ in full}
    # timestamp_broker lies within the produce round of its record (same clock).
    off = [(po, tb, produced[po][1:]) for po, tb in broker_time.items()
           if not produced[po][1] - 5 <= tb <= produced[po][2] + 5]
    assert not off, "timestamp_broker outside its produce round: %r" % off[:10]

    cut = max(broker_time.values()) - 1000
    expected = sorted(po for po, tb in broker_time.items() if tb >= cut)
    # Independent of the broker's own times: rounds wholly after the cut are in, wholly before are out.
    for po, (_, t_start, t_end) in produced.items():
        if t_start > cut:
            assert po in expected, po
        if t_end < cut:
            assert po not in expected, po
    assert per_round <= len(expected) <= total // 3, (len(expected), total)

    got = S.pg_rows(pg, "SELECT partition, \"offset\", value FROM " + table + " WHERE timestamp_broker >= %s "
                        "ORDER BY partition, \"offset\"", (cut,))
    range_scan = last_scan(S.pg_rows(pg, "SELECT sluice_last_scan()"))
    assert [(p, o) for p, o, _ in got] == expected
    assert all(S.as_bytes(v) == produced[(p, o)][0] for p, o, v in got)
    assert range_scan["segments_read"] * 2 < full_scan["segments_read"], (range_scan, full_scan)
    assert range_scan["records_read"] < total // 2, range_scan

    # Over HTTP: both statements in one request body; the answer is the last one's.
    rows = S.http_rows(b.http, "SELECT count(*) FROM %s WHERE timestamp_broker >= %d; SELECT sluice_last_scan()"
                       % (table, cut))
    http_scan = last_scan(rows)
    assert http_scan["segments_read"] == range_scan["segments_read"], (http_scan, range_scan)
    assert http_scan["records_read"] == range_scan["records_read"], (http_scan, range_scan)
    assert S.http_rows(b.http, "SELECT count(*) FROM %s WHERE timestamp_broker >= %d" % (table, cut)) == [
        [len(expected)]]

    # A closed range in the middle: BETWEEN, both bounds used.
    lo, hi = cut - 3000, cut - 2000
    expected_mid = sorted(po for po, tb in broker_time.items() if lo <= tb <= hi)
    assert expected_mid
    got = S.pg_rows(pg, "SELECT partition, \"offset\" FROM " + table + " WHERE timestamp_broker BETWEEN %s AND %s "
                        "ORDER BY partition, \"offset\"", (lo, hi))
    mid_scan = last_scan(S.pg_rows(pg, "SELECT sluice_last_scan()"))
    assert [tuple(r) for r in got] == expected_mid
    assert mid_scan["segments_read"] * 2 < full_scan["segments_read"], (mid_scan, full_scan)

    # timestamp_producer >= t starts at the first record at or after t (time index).
    cut_p = max(producer_ts.values()) - 1000
    expected_p = sorted(po for po, ts in producer_ts.items() if ts >= cut_p)
    got = S.pg_rows(pg, "SELECT partition, \"offset\", timestamp_producer FROM " + table +
                    " WHERE timestamp_producer >= %s ORDER BY partition, \"offset\"", (cut_p,))
    p_scan = last_scan(S.pg_rows(pg, "SELECT sluice_last_scan()"))
    assert [(p, o) for p, o, _ in got] == expected_p
    assert all(ts == producer_ts[(p, o)] for p, o, ts in got)
    assert p_scan["segments_read"] * 2 < full_scan["segments_read"], (p_scan, full_scan)

    # An offset range reads from the batch holding its lower bound, up to its upper bound.
    got = S.pg_rows(pg, "SELECT \"offset\", value FROM " + table + " WHERE partition = 1 AND \"offset\" BETWEEN 500 AND 509")
    o_scan = last_scan(S.pg_rows(pg, "SELECT sluice_last_scan()"))
    assert [(o, S.as_bytes(v)) for o, v in got] == [(o, produced[(1, o)][0]) for o in range(500, 510)]
    assert o_scan["partitions_scanned"] == 1 and o_scan["segments_read"] <= 2, o_scan
    assert o_scan["records_read"] < 100, o_scan


# --------------------------------------------------------------------------
# Topics appear and disappear
# --------------------------------------------------------------------------


def test_topic_tables_appear_and_disappear(b, pg, topic_name):
    table = S.topic_table(topic_name)
    count_sql = "SELECT count(*) FROM %s" % table
    # Before the topic exists: unknown table (on a session opened before it is created).
    e = S.pg_error(pg, count_sql)
    assert e.pgcode == "42P01", (e.pgcode, str(e))

    H.create_topic(b.bootstrap, topic_name, 2)
    assert S.pg_rows(pg, count_sql) == [(0,)]
    assert S.http_rows(b.http, count_sql) == [[0]]
    assert S.pg_rows(pg, "SELECT partitions FROM system.topics WHERE topic = %s", (topic_name,)) == [(2,)]
    producer = fast_producer(b.bootstrap)
    for i in range(3):
        assert H.produce_one(producer, topic_name, b"k", b"v%d" % i, partition=i % 2).err is None
    assert S.pg_rows(pg, count_sql) == [(3,)]
    assert S.cli_csv(b.http, count_sql)[1] == [["3"]]

    adm = H.admin_client(b.bootstrap)
    fs = adm.delete_topics([topic_name], operation_timeout=10, request_timeout=15)
    assert fs[topic_name].result(timeout=30) is None
    e = S.pg_error(pg, count_sql)
    assert e.pgcode == "42P01", (e.pgcode, str(e))
    err = S.http_error(b.http, count_sql)
    assert (err["kind"], err["sqlstate"]) == ("undefined_table", "42P01"), err
    state, _ = S.cli_error(b.http, count_sql)
    assert state == "42P01"
    assert S.pg_rows(pg, "SELECT count(*) FROM system.topics WHERE topic = %s", (topic_name,)) == [(0,)]
    assert S.pg_rows(pg, "SELECT count(*) FROM system.partitions WHERE topic = %s", (topic_name,)) == [(0,)]

    # Created again under the same name: a new, empty table.
    H.create_topic(b.bootstrap, topic_name, 1)
    assert S.pg_rows(pg, count_sql) == [(0,)]
    assert S.http_rows(b.http, "SELECT partitions FROM system.topics WHERE topic = '%s'" % topic_name) == [[1]]


def test_topic_deleted_during_query(b, pg, topic_name):
    """A topic deleted while a query reads it: the query ends (an error or its full result), the
    broker serves on, and a new topic of the same name starts empty."""
    H.create_topic(b.bootstrap, topic_name, 2, config={"segment.bytes": "65536"})
    n = 3000
    producer = fast_producer(b.bootstrap, **{"linger.ms": 10, "batch.size": 30000})
    H.produce_all(producer, topic_name, [dict(key=b"k%d" % i, value=b"x" * 200) for i in range(n)])
    table = S.topic_table(topic_name)
    # Each step of a recursive CTE reads the topic again (3,000 scans of it); DuckDB would
    # decorrelate a correlated subquery into one join, done in milliseconds.
    slow_sql = ('WITH RECURSIVE r(i, s) AS (SELECT 0, CAST(0 AS BIGINT) UNION ALL SELECT i + 1, s + '
                '(SELECT count(*) FROM {t} b WHERE length(b.value) + b."offset" > r.i) FROM r WHERE i < {n}) '
                'SELECT max(s) AS sum FROM r'.format(t=table, n=n))
    box = {}

    def run():
        t0 = time.monotonic()
        box["r"] = S.http_sql(b.http, slow_sql, timeout_ms=15000, timeout=60)
        box["elapsed"] = time.monotonic() - t0

    t = threading.Thread(target=run, daemon=True)
    t.start()
    time.sleep(0.5)
    assert t.is_alive(), "the slow query finished too early to test anything: %r" % box
    adm = H.admin_client(b.bootstrap)
    fs = adm.delete_topics([topic_name], operation_timeout=10, request_timeout=15)
    assert fs[topic_name].result(timeout=30) is None
    t.join(timeout=40)
    assert not t.is_alive(), "the query on the deleted topic did not end"
    r = box["r"]
    if r.status == 200:  # it had every file open already
        rows = r.json()["rows"]
        assert len(rows) == 1 and isinstance(rows[0][0], int) and rows[0][0] > n, r
    else:
        assert r.status == 400 and r.json()["error"]["sqlstate"], r
    b.assert_alive()

    H.create_topic(b.bootstrap, topic_name, 2)
    assert S.pg_rows(pg, "SELECT count(*) FROM %s" % table) == [(0,)]
    for p in (0, 1):
        d = H.produce_one(producer, topic_name, b"k", b"new", partition=p)
        assert d.err is None and d.offset == 0, d
    assert S.http_rows(b.http, "SELECT partition, \"offset\", CAST(value AS TEXT) FROM %s" % table) == [
        [0, 0, "new"], [1, 0, "new"]]


# --------------------------------------------------------------------------
# System tables
# --------------------------------------------------------------------------


def test_system_partitions_high_watermark(b, pg, topic_name):
    H.create_topic(b.bootstrap, topic_name, 3)
    counts = {0: 5, 1: 0, 2: 12}
    producer = fast_producer(b.bootstrap, **{"linger.ms": 5})
    recs = [dict(key=b"k%d" % i, value=b"v%d" % i, partition=p) for p, n in counts.items() for i in range(n)]
    H.produce_all(producer, topic_name, recs)
    sql = ("SELECT partition, log_start_offset, high_watermark, log_end_offset, bytes > 0, segments >= 1 "
           "FROM system.partitions WHERE topic = %s ORDER BY partition")
    # An empty partition may have no segment file yet; one with records has at least one.
    expected = [(p, 0, n, n, n > 0, True) for p, n in sorted(counts.items())]
    got = S.pg_rows(pg, sql, (topic_name,))
    assert [(p, lso, hw, leo, bool(nb), bool(ns) or n == 0) for (p, lso, hw, leo, nb, ns), n in
            zip(got, [counts[r[0]] for r in got])] == expected
    rows = S.http_rows(b.http, sql.replace("%s", S.sql_str(topic_name)))
    assert [[p, lso, hw, leo] for p, lso, hw, leo, _, _ in rows] == [[p, 0, n, n] for p, n in sorted(counts.items())]
    # The high watermark equals what the topic table holds, partition by partition.
    assert S.pg_rows(pg, "SELECT p.partition, p.high_watermark, (SELECT count(*) FROM %s t WHERE t.partition = "
                         "p.partition) FROM system.partitions p WHERE p.topic = %%s ORDER BY 1"
                     % S.topic_table(topic_name), (topic_name,)) == [(p, n, n) for p, n in sorted(counts.items())]


def test_system_group_offsets_and_lag(b, pg, topic_name):
    H.create_topic(b.bootstrap, topic_name, 2)
    counts = {0: 10, 1: 4}
    producer = fast_producer(b.bootstrap, **{"linger.ms": 5})
    H.produce_all(producer, topic_name, [dict(key=None, value=b"v%d" % i, partition=p)
                                         for p, n in counts.items() for i in range(n)])
    group = "sql-group-" + uuid.uuid4().hex[:8]
    before = H.now_ms()
    c = Consumer(H.consumer_conf(b.bootstrap, **{"group.id": group}))
    try:
        res = c.commit(offsets=[TopicPartition(topic_name, 0, 7), TopicPartition(topic_name, 1, 4)],
                       asynchronous=False)
        assert sorted((tp.partition, tp.offset, tp.error) for tp in res) == [(0, 7, None), (1, 4, None)], res
    finally:
        c.close()
    after = H.now_ms()
    rows = S.pg_rows(pg, "SELECT topic, partition, committed_offset, high_watermark, lag, commit_timestamp "
                         "FROM system.group_offsets WHERE group_id = %s ORDER BY partition", (group,))
    assert [r[:5] for r in rows] == [(topic_name, 0, 7, 10, 3), (topic_name, 1, 4, 4, 0)], rows
    assert all(before - 1000 <= r[5] <= after + 1000 for r in rows), (before, after, rows)
    assert S.http_rows(b.http, "SELECT group_id, sum(lag) FROM system.group_offsets WHERE group_id = '%s' "
                               "GROUP BY group_id" % group) == [[group, 3]]
    assert S.pg_rows(pg, "SELECT count(*) FROM system.groups WHERE group_id = %s", (group,)) == [(1,)]
    # Lag follows new records.
    H.produce_all(producer, topic_name, [dict(key=None, value=b"more", partition=1)] * 5)
    assert S.pg_rows(pg, "SELECT high_watermark, lag FROM system.group_offsets WHERE group_id = %s AND partition = 1",
                     (group,)) == [(9, 5)]


def test_system_topics_and_configs(b, pg, topic_name):
    before = H.now_ms()
    H.create_topic(b.bootstrap, topic_name, 3, config={"retention.ms": "3600000", "cleanup.policy": "compact",
                                                        "max.message.bytes": "200000"})
    after = H.now_ms()
    rows = S.pg_rows(pg, "SELECT topic, topic_id, partitions, cleanup_policy, created_ms FROM system.topics "
                         "WHERE topic = %s", (topic_name,))
    assert len(rows) == 1, rows
    topic, topic_id, partitions, policy, created = rows[0]
    assert (topic, partitions, policy) == (topic_name, 3, "compact")
    assert isinstance(topic_id, str) and len(topic_id) >= 16, topic_id
    assert before - 1000 <= created <= after + 1000, (before, created, after)

    configs = {name: (value, source) for name, value, source in S.pg_rows(
        pg, "SELECT name, value, source FROM system.configs WHERE topic = %s", (topic_name,))}
    assert configs["retention.ms"] == ("3600000", "topic")
    assert configs["cleanup.policy"] == ("compact", "topic")
    assert configs["max.message.bytes"] == ("200000", "topic")
    assert configs["segment.bytes"] == ("1073741824", "default")
    assert configs[TOPIC_DEFAULT[0]] == (TOPIC_DEFAULT[1], "broker")
    http = S.http_rows(b.http, "SELECT name, value, source FROM system.configs WHERE topic = '%s' ORDER BY name"
                       % topic_name)
    assert {n: (v, s) for n, v, s in http} == configs
    # Altered configs show at once.
    adm = H.admin_client(b.bootstrap)
    res = ConfigResource("topic", topic_name, set_config={"retention.ms": "7200000", "cleanup.policy": "compact",
                                                          "max.message.bytes": "200000"})
    fs = adm.alter_configs([res], request_timeout=15)
    for f in fs.values():
        assert f.result(timeout=30) is None
    assert S.pg_rows(pg, "SELECT value, source FROM system.configs WHERE topic = %s AND name = 'retention.ms'",
                     (topic_name,)) == [("7200000", "topic")]


# --------------------------------------------------------------------------
# Users' tables
# --------------------------------------------------------------------------


def test_user_tables_persist_across_restart(broker_factory, topic_name):
    b = broker_factory(extra_args=S.SQL_ARGS)
    H.create_topic(b.bootstrap, topic_name, 2)
    ops = ["c", "u", "u", "d", "c", "u", "c", "c", "u", "d"] * 3
    producer = fast_producer(b.bootstrap, **{"linger.ms": 5})
    H.produce_all(producer, topic_name, [dict(key=b"k%d" % i, value=json.dumps({"op": op, "i": i}).encode())
                                         for i, op in enumerate(ops)])
    expected_counts = sorted((op, ops.count(op)) for op in set(ops))
    table = S.topic_table(topic_name)

    conn = S.pg_connect(b.pg)
    try:
        S.pg_rows(conn, "SELECT 1")
        with conn.cursor() as cur:
            cur.execute("CREATE SCHEMA analytics")
            cur.execute("CREATE TABLE analytics.op_counts (op TEXT PRIMARY KEY, n INTEGER NOT NULL)")
            cur.execute("INSERT INTO analytics.op_counts SELECT value ->> '$.op', count(*) FROM %s GROUP BY 1" % table)
            assert cur.rowcount == len(expected_counts)
            cur.execute("CREATE TABLE events_copy (p INTEGER, o INTEGER, k BLOB, v TEXT)")
            cur.execute("INSERT INTO events_copy SELECT partition, \"offset\", key, CAST(value AS TEXT) FROM %s" % table)
            assert cur.rowcount == len(ops)
        # A rolled-back transaction leaves nothing.
        conn.autocommit = False
        with conn.cursor() as cur:
            cur.execute("INSERT INTO analytics.op_counts VALUES ('x', 99)")
        conn.rollback()
        conn.autocommit = True
        # The primary key holds.
        e = S.pg_error(conn, "INSERT INTO analytics.op_counts VALUES ('c', 1)")
        assert e.pgcode == "23505", (e.pgcode, str(e))
        assert S.pg_rows(conn, "SELECT op, n FROM analytics.op_counts ORDER BY op") == expected_counts
    finally:
        conn.close()
    assert S.http_rows(b.http, "SELECT op, n FROM analytics.op_counts ORDER BY op") == [list(r) for r in expected_counts]
    # ->> gives text in PostgreSQL's dialect: cast to sum (docs/sql.md, Engines).
    copy_sql = "SELECT count(*), count(DISTINCT k), sum(CAST(v ->> '$.i' AS BIGINT)) FROM events_copy"
    assert S.http_rows(b.http, copy_sql) == [[len(ops), len(ops), sum(range(len(ops)))]]

    b.restart()
    assert b.pg and b.http
    conn = S.pg_connect(b.pg)
    try:
        assert S.pg_rows(conn, "SELECT op, n FROM analytics.op_counts ORDER BY op") == expected_counts
        # The copy still equals the topic, row for row.
        assert S.pg_rows(conn, "SELECT count(*) FROM events_copy c JOIN %s t ON t.partition = c.p AND t.offset = c.o "
                               "AND t.key = c.k AND CAST(t.value AS TEXT) = c.v" % table) == [(len(ops),)]
    finally:
        conn.close()
    assert S.http_rows(b.http, copy_sql) == [[len(ops), len(ops), sum(range(len(ops)))]]
    head, rows = S.cli_csv(b.http, "SELECT op, n FROM analytics.op_counts ORDER BY op")
    assert head == ["op", "n"] and rows == [[op, str(n)] for op, n in expected_counts]
