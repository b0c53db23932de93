"""Expansions: each JSON event of a topic becomes a typed row of an SQL table (the target),
in the same commit as the event, so an acknowledged produce is at once queryable.

Covered: a Debezium CDC stream end to end (CLI create, confluent-kafka producer, row by
row against the delivery reports, latest state per id); every field type and the
counting rules (missing, excess, type errors, parse errors, tombstones, copy_source,
source=key) with kafka-python; backfill (alone, and next to a live-only expansion);
the HTTP API's and CLI's errors and the guards (DeleteTopics refused, SQL writes
refused); acks=1 and CreatePartitions; SIGTERM restarts; kill -9 during a produce
stream, three times (with an expansion backfilled between two crashes); compaction and
retention leave target rows alone.

Helpers: expansion_helpers.py (API, CLI, waits); the kill -9 test's producer is
crash_producer.py --values json."""

import base64
import json
import time
from pathlib import Path

import psycopg2
import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from kafka import KafkaProducer

import expansion_helpers as X
import sluice_helpers as H
import sql_helpers as S

HERE = Path(__file__).resolve().parent

BOOKKEEPING_HEAD = [("_partition", "INTEGER"), ("_offset", "INTEGER"), ("_timestamp_broker", "INTEGER")]
BOOKKEEPING_TAIL = [("_missing_fields", "INTEGER"), ("_excess_fields", "INTEGER"), ("_type_errors", "INTEGER"),
                    ("_parse_error", "INTEGER")]


@pytest.fixture(scope="module")
def b(module_broker_factory):
    broker = module_broker_factory(extra_args=S.SQL_ARGS)
    assert broker.pg and broker.http, broker.stdout_lines
    return broker


def producer(bootstrap, **extra):
    conf = {"linger.ms": 2}
    conf.update(extra)
    return Producer(H.producer_conf(bootstrap, **conf))


def produce_and_flush(p, topic, events, timeout=60.0):
    """events: [(key, value)] (partition by key); returns [(partition, offset)] in order, all delivered."""
    recs = [dict(key=k, value=v) for k, v in events]
    return [(d.partition, d.offset) for d in H.produce_all(p, topic, recs, timeout=timeout)]


def rows_by_pos(conn, sql, args=None):
    """{(partition, offset): rest of the row} of a query whose first two columns are the position."""
    out = {}
    for r in S.pg_rows(conn, sql, args):
        pos = (r[0], r[1])
        assert pos not in out, "duplicate row at %r" % (pos,)
        out[pos] = tuple(r[2:])
    return out


def assert_rows_equal(expected, got, what, max_report=12):
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing and not extra, "%s: %d rows missing (first %r), %d unexpected (first %r)" % (
        what, len(missing), missing[:5], len(extra), extra[:5])
    bad = ["%r:\n      expected %r\n      got      %r" % (pos, expected[pos], got[pos])
           for pos in sorted(expected) if expected[pos] != got[pos]]
    assert not bad, "%s: %d rows differ:\n  %s" % (what, len(bad), "\n  ".join(bad[:max_report]))


def count_where(conn, sql):
    return S.pg_rows(conn, sql)[0][0]


def assert_distinct_positions(conn, table):
    n, distinct = S.pg_rows(conn, "SELECT count(*), count(DISTINCT _partition || ':' || _offset) FROM %s" % table)[0]
    assert n == distinct, "%s: %d rows but %d distinct (_partition, _offset)" % (table, n, distinct)
    return n


def assert_broker_times(conn, table, topic):
    """_timestamp_broker of every row is its event's append time (the topic table's timestamp_broker)."""
    total, same = S.pg_rows(conn, "SELECT count(*), sum(x._timestamp_broker = k.timestamp_broker) FROM %s x "
                                  "JOIN %s k ON k.partition = x._partition AND k.offset = x._offset"
                            % (table, S.topic_table(topic)))[0]
    assert total == count_where(conn, "SELECT count(*) FROM %s" % table) and same == total, (table, total, same)


# --------------------------------------------------------------------------
# 1. Debezium CDC end to end
# --------------------------------------------------------------------------

DBZ_ROW = [{"name": "id", "type": "int64"}, {"name": "name", "type": "string"},
           {"name": "price", "type": "float64"}, {"name": "active", "type": "bool"}]
DBZ_FIELDS = [{"name": "before", "type": "struct", "fields": DBZ_ROW},
              {"name": "after", "type": "struct", "fields": DBZ_ROW},
              {"name": "op", "type": "string"}, {"name": "ts_ms", "type": "timestamp_ms"}]
DBZ_COLUMNS = ("before__id, before__name, before__price, before__active, after__id, after__name, after__price, "
               "after__active, op, ts_ms, _missing_fields, _excess_fields, _type_errors, _parse_error")


class Debezium:
    """Builds Debezium (PostgreSQL connector, JSON converter without schemas) envelopes and
    the row each should become."""

    def __init__(self):
        self.lsn = 24023128
        self.tx = 555
        self.ts = 1714564800000
        self.n = 0

    def event(self, op, before, after):
        self.n += 1
        self.lsn += 1000
        self.ts += 7
        if self.n % 3 == 0:
            self.tx += 1
        source = {"version": "2.5.0.Final", "connector": "postgresql", "name": "dbserver1", "ts_ms": self.ts - 3,
                  "snapshot": "true" if op == "r" else "false", "db": "inventory",
                  "sequence": '["%d","%d"]' % (self.lsn - 1000, self.lsn), "schema": "public", "table": "products",
                  "txId": self.tx, "lsn": self.lsn, "xmin": None}
        env = {"before": before, "after": after, "source": source, "op": op, "ts_ms": self.ts}
        excess = 1
        # Transaction metadata in one of three forms: absent, null, or an object.
        if self.n % 3 == 1:
            env["transaction"] = {"id": "%d:%d" % (self.tx, self.lsn), "total_order": self.n,
                                  "data_collection_order": self.n}
            excess = 2
        elif self.n % 3 == 2:
            env["transaction"] = None
            excess = 2
        # Debezium's key: the primary key as JSON.
        key = json.dumps({"id": (after or before)["id"]}).encode()
        value = json.dumps(env).encode()

        def cols(r):
            return (None,) * 4 if r is None else (r["id"], r["name"], r["price"], r["active"])

        row = cols(before) + cols(after) + (op, self.ts, 0, excess, 0, 0)
        return key, value, row

    @staticmethod
    def tombstone(key):
        return key, None, (None,) * 10 + (0, 0, 0, 0)


def test_debezium_cdc_end_to_end(b, pg, topic_name, tmp_path):
    """Debezium envelopes (inserts, updates, deletes + tombstones, snapshot reads) produced with
    acks=all are rows of the target right after each flush, one per event, typed and counted."""
    H.create_topic(b.bootstrap, topic_name, 3)
    schema_file = X.write_schema(tmp_path / "debezium.json", DBZ_FIELDS)
    rc, out, err = X.sluice(["expansion", "create", "--server", b.http, "--topic", topic_name,
                             "--target", "cdc.products", "--schema", schema_file, "--flatten"])
    assert rc == 0, (rc, out, err)
    assert "cdc.products" in out, out
    for col, typ in [("before__id", "INTEGER"), ("after__price", "REAL"), ("after__active", "BOOLEAN"),
                     ("op", "TEXT"), ("ts_ms", "INTEGER")]:
        assert any(ln.split() == [col, typ] for ln in out.splitlines()), "no line %r in:\n%s" % ((col, typ), out)
    doc = X.get(b.http, "cdc.products")
    assert doc["state"] == "running" and doc["flatten"] is True and doc["source"] == "value", doc
    assert [(c["name"], c["type"]) for c in doc["columns"]] == BOOKKEEPING_HEAD + [
        ("before__id", "INTEGER"), ("before__name", "TEXT"), ("before__price", "REAL"), ("before__active", "BOOLEAN"),
        ("after__id", "INTEGER"), ("after__name", "TEXT"), ("after__price", "REAL"), ("after__active", "BOOLEAN"),
        ("op", "TEXT"), ("ts_ms", "INTEGER")] + BOOKKEEPING_TAIL

    dbz = Debezium()
    p = producer(b.bootstrap)
    expected = {}
    state = {}

    def check(what):
        got = rows_by_pos(pg, "SELECT _partition, _offset, %s FROM cdc.products" % DBZ_COLUMNS)
        assert_rows_equal(expected, got, what)

    def flush_round(events, what):
        positions = produce_and_flush(p, topic_name, [(k, v) for k, v, _ in events])
        for (k, v, row), pos in zip(events, positions):
            assert pos not in expected
            expected[pos] = row
        check(what)  # no sleep: acknowledged means expanded
        return positions

    # Round 1: 60 inserts.
    evs = []
    for i in range(1, 61):
        r = {"id": i, "name": "product %d \u00e9\"q\"" % i, "price": round(1.25 * i, 2), "active": i % 2 == 0}
        state[i] = r
        evs.append(dbz.event("c", None, r))
    pos1 = flush_round(evs, "after the inserts")
    assert len({p_ for p_, _ in pos1}) == 3, "keys did not spread over the 3 partitions: %r" % sorted(set(pos1))

    # Round 2: updates (some ids twice within the round).
    evs = []
    for i in list(range(1, 61, 2)) + list(range(1, 20, 3)):
        old = state[i]
        new = dict(old, price=round(old["price"] * 1.1 + 0.01, 2), active=not old["active"],
                   name=old["name"] + " v2")
        state[i] = new
        evs.append(dbz.event("u", old, new))
    flush_round(evs, "after the updates")

    # Round 3: deletes, each followed by its tombstone.
    evs = []
    for i in range(5, 61, 5):
        key, value, row = dbz.event("d", state.pop(i), None)
        evs.append((key, value, row))
        evs.append(Debezium.tombstone(key))
    flush_round(evs, "after the deletes and tombstones")

    # Round 4, one event at a time, each checked right after its acknowledgement: a snapshot
    # read, a re-insert of a deleted id, an update, a delete and its tombstone.
    state[100] = {"id": 100, "name": "snap", "price": 0.5, "active": True}
    state[5] = {"id": 5, "name": "back", "price": 5.0, "active": False}
    one_by_one = [dbz.event("r", None, state[100]), dbz.event("c", None, state[5])]
    new7 = dict(state[7], price=99.99)
    one_by_one.append(dbz.event("u", state[7], new7))
    state[7] = new7
    one_by_one.append(dbz.event("d", state.pop(8), None))
    one_by_one.append(Debezium.tombstone(one_by_one[-1][0]))
    p1 = producer(b.bootstrap, **{"linger.ms": 0})
    for key, value, row in one_by_one:
        d = H.produce_one(p1, topic_name, key, value)
        assert d.err is None, d
        expected[(d.partition, d.offset)] = row
        got = S.pg_rows(pg, "SELECT %s FROM cdc.products WHERE _partition = %%s AND _offset = %%s" % DBZ_COLUMNS,
                        (d.partition, d.offset))
        assert got == [row], "event at %r right after its ack: %r" % ((d.partition, d.offset), got)
    check("after the one-by-one events")

    # Nothing else is in the table, one row per event, broker times from the log.
    n_events = len(expected)
    assert assert_distinct_positions(pg, "cdc.products") == n_events
    assert_broker_times(pg, "cdc.products", topic_name)
    # The same rows over HTTP: BOOLEAN reads as 1/0 there.
    http_rows = S.http_rows(b.http, "SELECT _partition, _offset, before__active, after__active, op FROM cdc.products "
                                    "ORDER BY _partition, _offset")
    assert [tuple(r[:2]) for r in http_rows] == sorted(expected)
    for r in http_rows:
        e = expected[(r[0], r[1])]
        assert (r[2], r[3], r[4]) == (None if e[3] is None else int(e[3]), None if e[7] is None else int(e[7]), e[8])

    # Latest state per id, from the typed history.
    latest = S.pg_rows(pg, """
        SELECT id, name, price, active FROM (
          SELECT coalesce(after__id, before__id) AS id, op, after__name AS name, after__price AS price,
                 after__active AS active,
                 row_number() OVER (PARTITION BY coalesce(after__id, before__id) ORDER BY _offset DESC) AS rn
          FROM cdc.products WHERE _parse_error = 0 AND op IS NOT NULL)
        WHERE rn = 1 AND op <> 'd' ORDER BY id""")
    assert latest == [(i, r["name"], r["price"], r["active"]) for i, r in sorted(state.items())]
    by_op = dict(S.pg_rows(pg, "SELECT coalesce(op, 'tombstone'), count(*) FROM cdc.products GROUP BY 1"))
    want_ops = {}
    for row in expected.values():
        op = row[8] or "tombstone"
        want_ops[op] = want_ops.get(op, 0) + 1
    assert by_op == want_ops and want_ops["tombstone"] == want_ops["d"] == 13, by_op
    assert X.get(b.http, "cdc.products")["rows_written"] == n_events


# --------------------------------------------------------------------------
# 2. Every type and every counting rule
# --------------------------------------------------------------------------

TYPE_FIELDS = [
    {"name": "i", "type": "int64"}, {"name": "f", "type": "float64"}, {"name": "s", "type": "string"},
    {"name": "b", "type": "bool"}, {"name": "t", "type": "timestamp_ms"}, {"name": "bin", "type": "binary"},
    {"name": "j", "type": "json", "doc": "kept as JSON text"},
    {"name": "st", "type": "struct", "fields": [
        {"name": "x", "type": "int64"},
        {"name": "inner", "type": "struct", "fields": [{"name": "y", "type": "string"}]}]},
]
FLAT_COLS = ["i", "f", "s", "b", "t", "bin", "j", "st__x", "st__inner__y"]
KEY_FIELDS = [{"name": "id", "type": "int64"}, {"name": "region", "type": "string"}]
ALL_BYTES = bytes(range(256))
T_250 = 1714564800250  # 2024-05-01T12:00:00.250Z


class JText:
    """An expected json-type column: the minified JSON text of `obj` (non-ASCII characters
    either as they are or as \\u escapes)."""

    def __init__(self, obj):
        self.obj = obj

    def resolve(self, got):
        forms = {json.dumps(self.obj, separators=(",", ":"), ensure_ascii=a) for a in (False, True)}
        return got if got in forms else min(forms)


def b64(data):
    return base64.b64encode(data).decode()


def full_event(**over):
    e = {"i": 42, "f": 2.5, "s": "h\u00e9llo \"w\" \\ \U0001F600", "b": True, "t": T_250, "bin": b64(ALL_BYTES),
         "j": {"a": [1, {"b": None}], "c": "x \"y\"", "d": 1.5}, "st": {"x": 7, "inner": {"y": "deep"}}}
    e.update(over)
    return e


FULL_FLAT = {"i": 42, "f": 2.5, "s": "h\u00e9llo \"w\" \\ \U0001F600", "b": True, "t": T_250, "bin": ALL_BYTES,
             "j": JText({"a": [1, {"b": None}], "c": "x \"y\"", "d": 1.5}), "st__x": 7, "st__inner__y": "deep"}


def type_cases():
    """(name, key, value bytes or None, expected flattened columns (absent: NULL),
    expected `st` text without flatten, (missing, excess, type_errors, parse_error))."""
    nulls = {}
    cases = [
        ("all types", full_event(), FULL_FLAT, '{"x":7,"inner":{"y":"deep"}}', (0, 0, 0, 0)),
        ("RFC 3339 UTC, bool false, integral float", full_event(t="2024-05-01T12:00:00.250Z", b=False, f=3, i=5.0),
         dict(FULL_FLAT, b=False, f=3.0, i=5), '{"x":7,"inner":{"y":"deep"}}', (0, 0, 0, 0)),
        ("RFC 3339 with an offset", full_event(t="2024-05-01T14:00:00.250+02:00"), FULL_FLAT,
         '{"x":7,"inner":{"y":"deep"}}', (0, 0, 0, 0)),
        ("int64 and float64 extremes", full_event(i=-(2 ** 63), f=1e308, t=0, s="", bin="", j=[]),
         dict(FULL_FLAT, i=-(2 ** 63), f=1e308, t=0, s="", bin=b"", j="[]"), '{"x":7,"inner":{"y":"deep"}}',
         (0, 0, 0, 0)),
        ("json type holds scalars", full_event(i=2 ** 63 - 1, j="text \u00e9", f=-0.5),
         dict(FULL_FLAT, i=2 ** 63 - 1, j=JText("text \u00e9"), f=-0.5), '{"x":7,"inner":{"y":"deep"}}', (0, 0, 0, 0)),
        ("every field null: present, not missing", {k: None for k in full_event()}, nulls, None, (0, 0, 0, 0)),
        ("every field missing", {}, nulls, None, (8, 0, 0, 0)),
        ("struct fields missing: an absent struct counts 1", full_event(st={}),
         dict(FULL_FLAT, st__x=None, st__inner__y=None), "{}", (2, 0, 0, 0)),
        ("nested struct present, its field missing", full_event(st={"x": 1, "inner": {}}),
         dict(FULL_FLAT, st__x=1, st__inner__y=None), '{"x":1,"inner":{}}', (1, 0, 0, 0)),
        ("nested null struct is present", full_event(st={"x": 1, "inner": None}),
         dict(FULL_FLAT, st__x=1, st__inner__y=None), '{"x":1,"inner":null}', (0, 0, 0, 0)),
        ("excess keys at every level", dict(full_event(st={"x": 1, "inner": {"y": "a", "e1": 1, "e2": [1]},
                                                           "more": None}),
                                            zz=1, extra={"a": {"b": 1}}),
         dict(FULL_FLAT, st__x=1, st__inner__y="a"), '{"x":1,"inner":{"y":"a","e1":1,"e2":[1]},"more":null}',
         (0, 5, 0, 0)),
        ("excess keys inside a json field are its content", full_event(j={"any": {"thing": 1}}),
         dict(FULL_FLAT, j='{"any":{"thing":1}}'), '{"x":7,"inner":{"y":"deep"}}', (0, 0, 0, 0)),
        ("wrong JSON types", {"i": "5", "f": "1.5", "s": 12, "b": 1, "t": "yesterday", "bin": "!!not base64!!",
                              "st": {"x": 1.5, "inner": "str"}},
         nulls, '{"x":1.5,"inner":"str"}', (1, 0, 8, 0)),
        ("more wrong types", {"i": 1.5, "f": True, "s": {"a": 1}, "b": "true", "t": 1.5, "bin": 5, "j": 1,
                              "st": [1, 2]},
         {"j": "1"}, None, (0, 0, 7, 0)),
        ("int64 out of range", full_event(i=2 ** 63), dict(FULL_FLAT, i=None), '{"x":7,"inner":{"y":"deep"}}',
         (0, 0, 1, 0)),
        ("a 100,000-character string", full_event(s="\u00e9" + "x" * 100000),
         dict(FULL_FLAT, s="\u00e9" + "x" * 100000), '{"x":7,"inner":{"y":"deep"}}', (0, 0, 0, 0)),
    ]
    out = []
    for i, (name, obj, flat, st_text, counters) in enumerate(cases):
        key = json.dumps({"id": i, "region": "eu-%d" % i}).encode()
        out.append((name, key, json.dumps(obj, ensure_ascii=(i % 2 == 0)).encode(), flat, st_text, counters))
    raw = [
        ("invalid JSON", b'{"i": 1,'),
        ("empty value", b""),
        ("JSON array", b"[1,2]"),
        ("JSON string", b'"str"'),
        ("JSON number", b"42"),
        ("JSON null", b"null"),
        ("not UTF-8", b"\xff\xfe{\x00"),
    ]
    for name, value in raw:
        out.append((name, b'{"id": -1, "region": "raw", "x": 1}', value, nulls, None, (0, 0, 0, 1)))
    out.append(("tombstone", b'{"id": 99}', None, nulls, None, (0, 0, 0, 0)))
    return out


def key_expectation(key):
    """(id, region, counters) of a source=key expansion, for a key as bytes or None."""
    if key is None:
        return (None, None, (0, 0, 0, 0))
    try:
        obj = json.loads(key)
    except ValueError:
        return (None, None, (0, 0, 0, 1))
    if not isinstance(obj, dict):
        return (None, None, (0, 0, 0, 1))
    missing = sum(1 for f in ("id", "region") if f not in obj)
    excess = sum(1 for k in obj if k not in ("id", "region"))
    return (obj.get("id"), obj.get("region"), (missing, excess, 0, 0))


def test_types_and_counting_rules(b, pg, topic_name):
    """Every field type, missing/excess/type-error counting at every struct level, JSON null vs
    missing, parse errors, tombstones, copy_source, struct as JSON text, source=key."""
    H.create_topic(b.bootstrap, topic_name, 1)
    flat = X.create(b.http, topic_name, "types.flat", TYPE_FIELDS, flatten=True, copy_source=True)
    # The schema may also be given as its JSON text.
    nested = X.create(b.http, topic_name, "types.nested", json.dumps({"fields": TYPE_FIELDS}))
    keyed = X.create(b.http, topic_name, "types.keyed", {"fields": KEY_FIELDS}, source="key", copy_source=True)
    assert (flat["flatten"], flat["copy_source"]) == (True, True)
    assert (nested["flatten"], nested["copy_source"]) == (False, False)
    assert keyed["source"] == "key"
    flat_types = [("i", "INTEGER"), ("f", "REAL"), ("s", "TEXT"), ("b", "BOOLEAN"), ("t", "INTEGER"), ("bin", "BLOB"),
                  ("j", "TEXT")]
    assert [(c["name"], c["type"]) for c in flat["columns"]] == BOOKKEEPING_HEAD + flat_types + [
        ("st__x", "INTEGER"), ("st__inner__y", "TEXT")] + BOOKKEEPING_TAIL + [("_source", "TEXT")]
    assert [(c["name"], c["type"]) for c in nested["columns"]] == BOOKKEEPING_HEAD + flat_types + [
        ("st", "TEXT")] + BOOKKEEPING_TAIL
    assert [(c["name"], c["type"]) for c in keyed["columns"]] == BOOKKEEPING_HEAD + [
        ("id", "INTEGER"), ("region", "TEXT")] + BOOKKEEPING_TAIL + [("_source", "TEXT")]
    # The tables SQL sees have those columns, in that order.
    for target, api_doc in (("types.flat", flat), ("types.nested", nested), ("types.keyed", keyed)):
        cols = S.http_query(b.http, "SELECT * FROM %s" % target)["columns"]
        assert [c["name"] for c in cols] == [c["name"] for c in api_doc["columns"]], (target, cols)

    cases = type_cases()
    # Keys for the source=key expansion: valid, with excess, missing a field, invalid, none.
    keys = [c[1] for c in cases]
    keys[1] = b'{"id": 1, "region": "eu", "shard": 3}'
    keys[2] = b'{"id": 2}'
    keys[3] = b"id-3 (not JSON)"
    keys[4] = None
    keys[5] = b'["not", "an", "object"]'

    kp = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all", linger_ms=5, retries=0,
                       max_in_flight_requests_per_connection=1, request_timeout_ms=30000, client_id="sluice-it-exp")
    try:
        futures = [kp.send(topic_name, key=k, value=c[2], partition=0) for k, c in zip(keys, cases)]
        kp.flush(timeout=30)
        metas = [f.get(timeout=30) for f in futures]
    finally:
        kp.close(timeout=10)
    offsets = [m.offset for m in metas]
    assert offsets == list(range(len(cases))), offsets

    # hex() of a NULL is '' in SQLite: CASE keeps NULLs NULL (PostgreSQL's spelling; SQLite's iif() is
    # not DuckDB's).
    flat_sql = ("SELECT _offset, i, f, s, b, t, CASE WHEN bin IS NULL THEN NULL ELSE hex(bin) END, j, st__x, "
                "st__inner__y, _missing_fields, _excess_fields, _type_errors, _parse_error, "
                "CASE WHEN _source IS NULL THEN NULL ELSE hex(_source) END, typeof(_source) FROM types.flat "
                "ORDER BY _offset")
    got_flat = S.pg_rows(pg, flat_sql)
    got_nested = S.pg_rows(pg, "SELECT _offset, i, f, s, b, t, CASE WHEN bin IS NULL THEN NULL ELSE hex(bin) END, "
                               "j, st, _missing_fields, _excess_fields, _type_errors, _parse_error FROM types.nested "
                               "ORDER BY _offset")
    got_keyed = S.pg_rows(pg, "SELECT _offset, id, region, _missing_fields, _excess_fields, _type_errors, "
                              "_parse_error, CASE WHEN _source IS NULL THEN NULL ELSE hex(_source) END "
                              "FROM types.keyed ORDER BY _offset")
    assert [r[0] for r in got_flat] == [r[0] for r in got_nested] == [r[0] for r in got_keyed] == offsets
    problems = []
    for off, (name, _, value, fl, st_text, counters), key, rf, rn, rk in zip(offsets, cases, keys, got_flat,
                                                                             got_nested, got_keyed):
        vals = [fl.get(c) for c in FLAT_COLS]
        vals[5] = None if vals[5] is None else vals[5].hex().upper()
        if isinstance(vals[6], JText):
            vals[6] = vals[6].resolve(rf[7])
        src_hex = None if value is None else value.hex().upper()
        # The source is the event's bytes; typeof() is the column's type (as pg_typeof() in
        # PostgreSQL), BLOB for _source (docs/expansions.md, Storage).
        src_type = "BLOB"
        want_flat = (off, *vals, *counters, src_hex, src_type)
        if tuple(rf) != want_flat:
            problems.append("flat %s:\n    expected %r\n    got      %r" % (name, want_flat, tuple(rf)))
        want_nested = (off, *vals[:7], st_text, *counters)
        if tuple(rn) != want_nested:
            problems.append("nested %s:\n    expected %r\n    got      %r" % (name, want_nested, tuple(rn)))
        kid, kregion, kcounters = key_expectation(key)
        want_key = (off, kid, kregion, *kcounters, None if key is None else key.hex().upper())
        if tuple(rk) != want_key:
            problems.append("key %s (%r):\n    expected %r\n    got      %r" % (name, key, want_key, tuple(rk)))
    assert not problems, "%d rows differ:\n  %s" % (len(problems), "\n  ".join(problems))

    # The columns' types (typeof() gives the column's type): binary is a BLOB holding the
    # decoded bytes, _source a BLOB holding the event's bytes, which convert_from()
    # (PostgreSQL's) reads as text.
    got = S.pg_rows(pg, "SELECT typeof(b), b = 1, b = 0, typeof(bin), typeof(t), typeof(f), typeof(j), "
                        "convert_from(_source, 'UTF8') FROM types.flat WHERE _offset IN (0, 1) ORDER BY _offset")
    classes = ("BOOLEAN", "BLOB", "BIGINT", "DOUBLE", "VARCHAR")
    assert got == [(classes[0], True, False, *classes[1:], cases[0][2].decode()),
                   (classes[0], False, True, *classes[1:], cases[1][2].decode())], got
    (blob,), = S.pg_rows(pg, "SELECT bin FROM types.flat WHERE _offset = 0")
    assert S.as_bytes(blob) == ALL_BYTES
    assert S.http_rows(b.http, "SELECT b, st__x FROM types.flat WHERE _offset <= 1 ORDER BY _offset") == [
        [1, 7], [0, 7]]
    for t in ("types.flat", "types.nested", "types.keyed"):
        assert_broker_times(pg, t, topic_name)
        assert X.get(b.http, t)["rows_written"] == len(cases)


def test_acks_1_and_new_partitions(b, pg, topic_name):
    """acks=1 answers come after the row is written too; partitions added to an expanded topic
    (CreatePartitions) are expanded like the first ones."""
    from confluent_kafka.admin import NewPartitions
    H.create_topic(b.bootstrap, topic_name, 2)
    X.create(b.http, topic_name, "more.events", X.EVENT_FIELDS)
    p1 = producer(b.bootstrap, **{"acks": "1", "linger.ms": 0})
    for seq in range(20):
        d = H.produce_one(p1, topic_name, X.event_key(seq), X.event_value(seq), partition=seq % 2)
        assert d.err is None, d
        got = S.pg_rows(pg, "SELECT seq FROM more.events WHERE _partition = %s AND _offset = %s",
                        (d.partition, d.offset))
        assert got == [(seq,)], (seq, d, got)
    adm = H.admin_client(b.bootstrap)
    fs = adm.create_partitions([NewPartitions(topic_name, 4)])
    fs[topic_name].result(timeout=30)
    H.wait_topic(b.bootstrap, topic_name, 4)
    p = producer(b.bootstrap, **{"linger.ms": 0})
    for part in range(4):
        seq = 100 + part
        d = H.produce_one(p, topic_name, X.event_key(seq), X.event_value(seq), partition=part)
        assert d.err is None and d.partition == part, d
        assert S.pg_rows(pg, "SELECT seq FROM more.events WHERE _partition = %s AND _offset = %s",
                         (part, d.offset)) == [(seq,)], (part, d)
    X.assert_same_positions(X.positions(pg, "more.events"), X.topic_positions(pg, topic_name), "after CreatePartitions")
    assert X.get(b.http, "more.events")["lag"] == 0


def test_float_precision(b, pg, topic_name):
    """A float64 needing all 17 significant digits, and a large int64, are stored exactly."""
    H.create_topic(b.bootstrap, topic_name, 1)
    X.create(b.http, topic_name, "types.precise", [{"name": "f", "type": "float64"}, {"name": "i", "type": "int64"}])
    p = producer(b.bootstrap)
    pos = produce_and_flush(p, topic_name, [(None, b'{"f": 0.30000000000000004, "i": 9007199254740993}'),
                                            (None, b'{"f": 5e-324, "i": -9007199254740993}')])
    assert pos == [(0, 0), (0, 1)]
    # 0.1 + 0.2 of double precision values (in PostgreSQL's dialect, DuckDB's too, `0.1 + 0.2` is
    # the exact numeric 0.3, which no double is: spelled for both engines).
    assert S.pg_rows(pg, "SELECT f = CAST(0.1 AS DOUBLE PRECISION) + CAST(0.2 AS DOUBLE PRECISION), "
                         "i = 9007199254740993, i - 9007199254740992 FROM types.precise "
                         "WHERE _offset = 0") == [(True, True, 1)]
    assert S.pg_rows(pg, "SELECT f > 0, f < 1e-323, i + 9007199254740992 FROM types.precise WHERE _offset = 1") == [
        (True, True, -1)]


# --------------------------------------------------------------------------
# 3. Backfill
# --------------------------------------------------------------------------


def test_backfill(b, pg, topic_name):
    """With backfill the events already in the topic are expanded in the background, exactly
    once, while new events are expanded at once; without it only later events are."""
    n_pre, n_post, parts = 20000, 1000, 4
    H.create_topic(b.bootstrap, topic_name, parts)
    p = producer(b.bootstrap, **{"linger.ms": 5})
    pre = produce_and_flush(p, topic_name, [(b"k%d" % i, b'{"n": %d, "tag": "pre"}' % i) for i in range(n_pre)])
    assert len(set(pre)) == n_pre

    fields = [{"name": "n", "type": "int64"}, {"name": "tag", "type": "string"}]
    a = X.create(b.http, topic_name, "bf.every", fields, backfill=True)
    live = X.create(b.http, topic_name, "bf.live", fields)
    assert a["backfill"]["total"] == n_pre, a
    assert a["state"] in ("backfilling", "running"), a
    assert live["state"] == "running" and live["backfill"] == {"total": 0, "done": 0}, live

    post = produce_and_flush(p, topic_name, [(b"k%d" % i, b'{"n": %d, "tag": "post"}' % i)
                                             for i in range(n_pre, n_pre + n_post)])
    # Acknowledged means expanded, for both, even while the backfill runs.
    assert sorted(X.positions(pg, "bf.live")) == sorted(post)
    assert set(X.positions(pg, "bf.every", "tag = 'post'")) == set(post)

    doc, seen = X.wait_state(b.http, "bf.every", lambda d: d["state"] != "backfilling", "the end of the backfill",
                             timeout=60)
    assert doc["state"] == "running" and doc["error"] is None, doc
    assert doc["backfill"] == {"total": n_pre, "done": n_pre}, doc
    dones = [d["backfill"]["done"] for d in seen]
    assert dones == sorted(dones) and all(0 <= d <= n_pre for d in dones), dones
    assert all(d["backfill"]["total"] == n_pre for d in seen), [d["backfill"] for d in seen]
    print("backfill progress seen: %r" % dones[:20])

    assert assert_distinct_positions(pg, "bf.every") == n_pre + n_post
    X.assert_same_positions(X.positions(pg, "bf.every"), X.topic_positions(pg, topic_name), "backfilled target")
    # ->> in parentheses: DuckDB binds `a = b ->> 'p'` as `(a = b) ->> 'p'` (PostgreSQL and SQLite
    # as `a = (b ->> 'p')`); its text is cast to compare with a number, as PostgreSQL needs.
    matching = count_where(pg, "SELECT count(*) FROM bf.every x JOIN %s k ON k.partition = x._partition AND "
                               "k.offset = x._offset WHERE x.n = CAST(k.value ->> '$.n' AS BIGINT) "
                               "AND x.tag = (k.value ->> '$.tag') "
                               "AND x._missing_fields + x._excess_fields + x._type_errors + x._parse_error = 0"
                           % S.topic_table(topic_name))
    assert matching == n_pre + n_post
    assert S.pg_rows(pg, "SELECT tag, count(*), min(n), max(n) FROM bf.every GROUP BY tag ORDER BY tag") == [
        ("post", n_post, n_pre, n_pre + n_post - 1), ("pre", n_pre, 0, n_pre - 1)]
    assert sorted(X.positions(pg, "bf.live")) == sorted(post)
    assert X.get(b.http, "bf.live")["rows_written"] == n_post

    # Dropped with its table kept, then created again over that table: a backfill writes
    # each event's row once (the rows it covers are replaced, not doubled); without
    # backfill the rows already there stay as they are.
    X.drop(b.http, "bf.every")
    X.drop(b.http, "bf.live")
    again = X.create(b.http, topic_name, "bf.every", fields, backfill=True)
    assert again["backfill"]["total"] == n_pre + n_post, again
    X.create(b.http, topic_name, "bf.live", fields)
    doc, _ = X.wait_state(b.http, "bf.every", lambda d: d["state"] != "backfilling", "the end of the second backfill",
                          timeout=60)
    assert doc["state"] == "running" and doc["rows"] == n_pre + n_post, doc
    assert assert_distinct_positions(pg, "bf.every") == n_pre + n_post
    X.assert_same_positions(X.positions(pg, "bf.every"), X.topic_positions(pg, topic_name), "backfilled again")
    assert sorted(X.positions(pg, "bf.live")) == sorted(post)


# --------------------------------------------------------------------------
# 4. Admin: API and CLI errors, guards
# --------------------------------------------------------------------------

ADM_FIELDS = [{"name": "id", "type": "int64"}, {"name": "quantity", "type": "int64"},
              {"name": "label", "type": "string"}]


def test_admin_errors_and_guards(b, pg, topic_name, tmp_path):
    H.create_topic(b.bootstrap, topic_name, 2)
    other = H.unique_topic("adm-other")
    H.create_topic(b.bootstrap, other, 1)
    body = X.create_body(topic_name, "adm.orders", {"fields": ADM_FIELDS})
    X.create(b.http, topic_name, "adm.orders", ADM_FIELDS)

    # 409: the target is taken (whatever the topic, whatever the case of the name).
    err = X.create_refused(b.http, body, 409)
    assert "adm.orders" in err["message"], err
    X.create_refused(b.http, X.create_body(other, "ADM.Orders", ADM_FIELDS), 409)
    # 404: no such topic.
    err = X.create_refused(b.http, X.create_body("no-such-topic-x", "adm.none", ADM_FIELDS), 404)
    assert "no-such-topic-x" in err["message"], err
    # 400: bad schemas, the message naming the field.
    bad_schemas = [
        ([{"name": "qty_bad", "type": "int65"}], "qty_bad"),
        ([{"name": "id", "type": "int64"}, {"name": "dup_field", "type": "string"},
          {"name": "dup_field", "type": "int64"}], "dup_field"),
        ([{"name": "outer", "type": "struct", "fields": [{"name": "inner_bad", "type": "decimal"}]}], "inner_bad"),
        ([{"name": "nofields_struct", "type": "struct"}], "nofields_struct"),
        ([{"name": "scalar_with_fields", "type": "string", "fields": [{"name": "a", "type": "int64"}]}],
         "scalar_with_fields"),
        ([{"name": "_offset", "type": "int64"}], "_offset"),
        ([{"name": "a", "type": "struct", "fields": [{"name": "b", "type": "int64"}]},
          {"name": "a__b", "type": "int64"}], "a__b"),
    ]
    for fields, name in bad_schemas:
        err = X.create_refused(b.http, X.create_body(topic_name, "adm.bad", fields, flatten=True), 400)
        assert name in err["message"], (fields, err)
    for bad_body in ({"topic": topic_name, "target": "adm.bad", "schema": {"fields": []}},
                     {"topic": topic_name, "target": "adm.bad", "schema": "{not json"},
                     {"topic": topic_name, "target": "adm.bad", "schema": {"fields": ADM_FIELDS}, "source": "header"},
                     {"topic": topic_name, "target": "kafka_topics.bad", "schema": {"fields": ADM_FIELDS}},
                     {"topic": topic_name, "target": "system.bad", "schema": {"fields": ADM_FIELDS}},
                     {"topic": topic_name, "target": "adm.", "schema": {"fields": ADM_FIELDS}},
                     {"topic": topic_name, "schema": {"fields": ADM_FIELDS}}):
        X.create_refused(b.http, bad_body, 400)
    status, doc = X.api(b.http, "POST", "/v1/expansions", b"not json at all")
    assert status == 400 and doc["error"]["kind"] == "invalid", (status, doc)
    assert "adm.bad" not in X.list_all(b.http)
    # Nothing was left behind by the refusals.
    assert S.http_error(b.http, "SELECT * FROM adm.bad")["sqlstate"] == "42P01"

    # An existing table of the wrong shape: refused, naming the column.
    with pg.cursor() as cur:
        cur.execute("CREATE SCHEMA IF NOT EXISTS admx")
        cur.execute("CREATE TABLE admx.wrong_type (_partition INTEGER, _offset INTEGER, _timestamp_broker INTEGER, "
                    "id INTEGER, quantity TEXT, label TEXT, _missing_fields INTEGER, _excess_fields INTEGER, "
                    "_type_errors INTEGER, _parse_error INTEGER)")
        cur.execute("CREATE TABLE admx.lacking (_partition INTEGER, _offset INTEGER, _timestamp_broker INTEGER, "
                    "id INTEGER, label TEXT, _missing_fields INTEGER, _excess_fields INTEGER, "
                    "_type_errors INTEGER, _parse_error INTEGER)")
        cur.execute("CREATE TABLE admx.strict_extra (_partition INTEGER, _offset INTEGER, _timestamp_broker INTEGER, "
                    "id INTEGER, quantity INTEGER, label TEXT, _missing_fields INTEGER, _excess_fields INTEGER, "
                    "_type_errors INTEGER, _parse_error INTEGER, must_fill TEXT NOT NULL)")
        # Compatible: other spellings of the types, an extra column with a default, rows already there.
        cur.execute("CREATE TABLE admx.fits (_partition BIGINT NOT NULL, _offset BIGINT NOT NULL, "
                    "_timestamp_broker BIGINT, id BIGINT, quantity INT, label VARCHAR(40), "
                    "_missing_fields INTEGER, _excess_fields INTEGER, _type_errors INTEGER, _parse_error INTEGER, "
                    "note TEXT DEFAULT 'none')")
        cur.execute("INSERT INTO admx.fits (_partition, _offset, id, label) VALUES (-1, -1, 0, 'mine')")
    for table, column in (("wrong_type", "quantity"), ("lacking", "quantity"), ("strict_extra", "must_fill")):
        err = X.create_refused(b.http, X.create_body(topic_name, "admx." + table, ADM_FIELDS), 400)
        assert column in err["message"], (table, err)
        assert "admx." + table not in X.list_all(b.http)
    fits = X.create(b.http, topic_name, "admx.fits", ADM_FIELDS)
    assert fits["state"] == "running", fits

    # Events reach both targets.
    p = producer(b.bootstrap)
    pos = produce_and_flush(p, topic_name, [(b"o%d" % i, json.dumps({"id": i, "quantity": i * 10, "label": "l%d" % i})
                                             .encode()) for i in range(40)])
    assert sorted(X.positions(pg, "adm.orders")) == sorted(pos)
    assert S.pg_rows(pg, "SELECT count(*), sum(quantity), min(note), max(note) FROM admx.fits WHERE _offset >= 0") == [
        (40, 7800, "none", "none")]
    assert S.pg_rows(pg, "SELECT label FROM admx.fits WHERE _offset = -1") == [("mine",)]

    # rows_written in the API and the CLI's list.
    listed = X.list_all(b.http)
    assert listed["adm.orders"]["rows_written"] == 40 and listed["adm.orders"]["lag"] == 0, listed["adm.orders"]
    rc, out, err = X.sluice(["expansion", "list", "--server", b.http])
    assert rc == 0, (rc, out, err)
    line = next((ln for ln in out.splitlines() if ln.split()[:1] == ["adm.orders"]), None)
    assert line is not None, out
    assert line.split()[1:5] == [topic_name, "value", "running", "40"], line
    rc, out, err = X.sluice(["expansion", "list", "--server", b.http, "--json"])
    assert rc == 0, (rc, out, err)
    by_target = {e["target"]: e for e in json.loads(out)["expansions"]}
    assert by_target["adm.orders"]["rows_written"] == 40 and by_target["admx.fits"]["rows_written"] == 40

    # SQL writes into a target: refused, 42501, on both front ends; the table is unchanged.
    writes = [
        "INSERT INTO adm.orders (_partition, _offset, _timestamp_broker, _missing_fields, _excess_fields, "
        "_type_errors, _parse_error) VALUES (9, 9, 0, 0, 0, 0, 0)",
        "UPDATE adm.orders SET quantity = 0",
        "DELETE FROM adm.orders",
        'DELETE FROM "adm"."orders" WHERE id = 1',
        "delete from ADM.ORDERS",
        "DROP TABLE adm.orders",
        "DROP TABLE IF EXISTS adm.orders",
        "ALTER TABLE adm.orders ADD COLUMN extra TEXT",
        "ALTER TABLE adm.orders RENAME TO orders2",
        "DROP SCHEMA adm",
        "DROP SCHEMA adm CASCADE",
        "DROP SCHEMA admx CASCADE",
    ]
    for sql in writes:
        e = S.pg_error(pg, sql)
        assert e.pgcode == "42501", (sql, e.pgcode, str(e))
        herr = S.http_error(b.http, sql)
        assert herr["sqlstate"] == "42501", (sql, herr)
    with pg.cursor() as cur:  # in a transaction too
        cur.execute("BEGIN")
        with pytest.raises(psycopg2.Error) as ei:
            cur.execute("UPDATE admx.fits SET label = 'x'")
        assert ei.value.pgcode == "42501", ei.value
        cur.execute("ROLLBACK")
    assert S.pg_rows(pg, "SELECT count(*), sum(quantity) FROM adm.orders") == [(40, 7800)]
    rc, out, err = X.sluice(["sql", "--server", b.http, "DELETE FROM adm.orders"])
    assert rc == 1 and "42501" in err, (rc, out, err)

    # Deleting the topic is refused while expansions read it.
    adm = H.admin_client(b.bootstrap)
    fs = adm.delete_topics([topic_name], operation_timeout=10, request_timeout=15)
    with pytest.raises(KafkaException) as ei:
        fs[topic_name].result(timeout=30)
    assert ei.value.args[0].code() == KafkaError.POLICY_VIOLATION, ei.value.args[0]
    # DeleteTopics v5 carries the message, which names the expansions.
    code, message = X.delete_topics_v5(b.bootstrap, [topic_name])[topic_name]
    assert code == 44 and "adm.orders" in message and "admx.fits" in message, (code, message)
    rc, out, err = X.sluice(["topic", "delete", topic_name, "--bootstrap", b.bootstrap])
    assert rc != 0 and err.strip(), (rc, out, err)
    assert topic_name in H.list_topic_names(b.bootstrap)
    assert count_where(pg, "SELECT count(*) FROM %s" % S.topic_table(topic_name)) == 40

    # Drop with the CLI: the table stays and becomes the user's.
    rc, out, err = X.sluice(["expansion", "drop", "adm.orders", "--server", b.http])
    assert rc == 0, (rc, out, err)
    assert "adm.orders" not in X.list_all(b.http)
    status, doc = X.api(b.http, "GET", "/v1/expansions/adm.orders")
    assert status == 404 and doc["error"]["kind"] == "not_found", (status, doc)
    assert S.pg_rows(pg, "SELECT count(*), sum(quantity) FROM adm.orders") == [(40, 7800)]
    with pg.cursor() as cur:
        cur.execute("DELETE FROM adm.orders WHERE id < 10")
        assert cur.rowcount == 10
    # Still refused: one expansion is left on the topic.
    fs = adm.delete_topics([topic_name], operation_timeout=10, request_timeout=15)
    with pytest.raises(KafkaException) as ei:
        fs[topic_name].result(timeout=30)
    assert ei.value.args[0].code() == KafkaError.POLICY_VIOLATION
    code, message = X.delete_topics_v5(b.bootstrap, [topic_name])[topic_name]
    assert code == 44 and "admx.fits" in message and "adm.orders" not in message, (code, message)
    # Drop with --drop-target: the table goes too.
    rc, out, err = X.sluice(["expansion", "drop", "admx.fits", "--drop-target", "--server", b.http])
    assert rc == 0, (rc, out, err)
    assert S.pg_error(pg, "SELECT * FROM admx.fits").pgcode == "42P01"
    # Dropping again: not found (HTTP 404, CLI exit 1).
    status, doc = X.api(b.http, "DELETE", "/v1/expansions/admx.fits")
    assert status == 404, (status, doc)
    rc, out, err = X.sluice(["expansion", "drop", "admx.fits", "--server", b.http])
    assert rc == 1 and "admx.fits" in err, (rc, out, err)
    # Now the topic can go; the kept table stays with its rows.
    rc, out, err = X.sluice(["topic", "delete", topic_name, "--bootstrap", b.bootstrap])
    assert rc == 0, (rc, out, err)
    S.wait_until("topic gone", lambda: topic_name not in H.list_topic_names(b.bootstrap))
    assert S.pg_rows(pg, "SELECT count(*) FROM adm.orders") == [(30,)]
    # The kept table can be the target of a new expansion (it is compatible with itself).
    again = X.create(b.http, other, "adm.orders", ADM_FIELDS)
    assert again["state"] == "running"
    d = H.produce_one(producer(b.bootstrap), other, b"x", b'{"id": 1000, "quantity": 1, "label": "again"}')
    assert d.err is None
    assert S.pg_rows(pg, "SELECT _offset, id, label FROM adm.orders WHERE id >= 1000") == [(d.offset, 1000, "again")]
    X.drop(b.http, "adm.orders", drop_target=True)

    # A target without a schema goes to main.
    status, doc = X.api(b.http, "POST", "/v1/expansions", X.create_body(other, "plain_orders", ADM_FIELDS))
    assert status == 201 and doc["target"] == "main.plain_orders", (status, doc)
    d = H.produce_one(producer(b.bootstrap), other, b"y", b'{"id": 2000, "quantity": 2, "label": "plain"}')
    assert d.err is None
    assert S.pg_rows(pg, "SELECT _offset, id, label FROM plain_orders") == [(d.offset, 2000, "plain")]
    assert S.pg_rows(pg, "SELECT count(*) FROM main.plain_orders") == [(1,)]
    assert S.pg_error(pg, "DELETE FROM plain_orders").pgcode == "42501"
    X.drop(b.http, "main.plain_orders", drop_target=True)
    assert S.pg_error(pg, "SELECT * FROM plain_orders").pgcode == "42P01"

    # CLI: exit 1 with the broker's message when refused, 2 without a connection.
    schema_file = X.write_schema(tmp_path / "adm.json", ADM_FIELDS)
    rc, out, err = X.sluice(["expansion", "create", "--server", b.http, "--topic", "no-such-topic-y",
                             "--target", "adm.x", "--schema", schema_file])
    assert rc == 1 and "no-such-topic-y" in err, (rc, out, err)
    bad_file = X.write_schema(tmp_path / "bad.json", [{"name": "weird_one", "type": "uuid"}])
    rc, out, err = X.sluice(["expansion", "create", "--server", b.http, "--topic", other, "--target", "adm.x",
                             "--schema", bad_file])
    assert rc == 1 and "weird_one" in err, (rc, out, err)
    rc, out, err = X.sluice(["expansion", "list", "--server", "127.0.0.1:1"])
    assert rc == 2 and err.strip(), (rc, out, err)
    rc, out, err = X.sluice(["expansion", "create", "--server", "127.0.0.1:1", "--topic", other,
                             "--target", "adm.x", "--schema", schema_file])
    assert rc == 2 and err.strip(), (rc, out, err)


# --------------------------------------------------------------------------
# 5. Restarts (SIGTERM)
# --------------------------------------------------------------------------


def test_restart_keeps_expansions(broker_factory, topic_name):
    """After a clean stop and start, expansions are listed as before and, once caught up, rows
    continue: one per event, none twice, new events expanded as they are acknowledged."""
    b = broker_factory(extra_args=S.SQL_ARGS)
    H.create_topic(b.bootstrap, topic_name, 3)
    p = producer(b.bootstrap, **{"linger.ms": 5})
    before = produce_and_flush(p, topic_name, [(None, X.event_value(i)) for i in range(500)])
    a = X.create(b.http, topic_name, "rs.live", X.EVENT_FIELDS, flatten=True, copy_source=True)
    first = produce_and_flush(p, topic_name, [(X.event_key(i), X.event_value(i)) for i in range(500, 800)])
    b.stop()
    b.start()

    listed = X.list_all(b.http)
    assert set(listed) == {"rs.live"}, listed
    for k in ("topic", "source", "flatten", "copy_source", "created_ms", "columns", "schema"):
        assert listed["rs.live"][k] == a[k], (k, listed["rs.live"][k], a[k])
    conn = S.pg_connect(b.pg)
    try:
        p = producer(b.bootstrap, **{"linger.ms": 5})
        second = produce_and_flush(p, topic_name, [(X.event_key(i), X.event_value(i)) for i in range(800, 1100)])
        # Right after the restart these rows should be there at once
        # (test_expansion_runs_right_after_restart); here only that they come, once each.
        S.wait_until("rows of the events produced after the restart", lambda: sorted(
            X.positions(conn, "rs.live")) == sorted(first + second), timeout=30)
        X.wait_caught_up(b.http, "rs.live", timeout=10)
        assert assert_distinct_positions(conn, "rs.live") == 600
        X.assert_same_positions(X.positions(conn, "rs.live"), list(set(X.topic_positions(conn, topic_name)) -
                                                                   set(before)), "after a restart")
        assert count_where(conn, "SELECT count(*) FROM rs.live x JOIN %s k ON k.partition = x._partition AND "
                                 "k.offset = x._offset WHERE x.seq = CAST(k.value ->> '$.seq' AS BIGINT) AND "
                                 "convert_from(x._source, 'UTF8') = convert_from(k.value, 'UTF8')"
                                 % S.topic_table(topic_name)) == 600
        assert X.get(b.http, "rs.live")["rows_written"] == 300  # since this start
        # And the next events again at once.
        third = produce_and_flush(p, topic_name, [(X.event_key(i), X.event_value(i)) for i in range(1100, 1200)])
        assert sorted(X.positions(conn, "rs.live")) == sorted(first + second + third)
    finally:
        conn.close()


def test_expansion_runs_right_after_restart(broker_factory, topic_name):
    """The service catches up before the broker serves: right after a restart the expansion
    runs with no lag, and an acknowledged produce has its row at once."""
    b = broker_factory(extra_args=S.SQL_ARGS)
    H.create_topic(b.bootstrap, topic_name, 2)
    X.create(b.http, topic_name, "rs.now", X.EVENT_FIELDS)
    p = producer(b.bootstrap)
    first = produce_and_flush(p, topic_name, [(X.event_key(i), X.event_value(i)) for i in range(50)])
    b.stop()
    b.start()
    doc = X.get(b.http, "rs.now")
    assert (doc["state"], doc["error"], doc["lag"]) == ("running", None, 0), doc
    p = producer(b.bootstrap)
    second = produce_and_flush(p, topic_name, [(X.event_key(i), X.event_value(i)) for i in range(50, 100)])
    conn = S.pg_connect(b.pg)
    try:
        assert sorted(X.positions(conn, "rs.now")) == sorted(first + second)
    finally:
        conn.close()


def test_backfill_resumes_after_restart(broker_factory, topic_name):
    """A backfill cut short by a clean stop goes on after the start and ends with one row per
    event of the topic."""
    b = broker_factory(extra_args=S.SQL_ARGS)
    H.create_topic(b.bootstrap, topic_name, 3)
    p = producer(b.bootstrap, **{"linger.ms": 5})
    n_pre = 40000
    produce_and_flush(p, topic_name, [(None, X.event_value(i)) for i in range(n_pre)], timeout=120)
    X.create(b.http, topic_name, "rs.idle", X.EVENT_FIELDS)
    X.create(b.http, topic_name, "rs.backfill", X.EVENT_FIELDS, backfill=True)
    at_stop = X.get(b.http, "rs.backfill")
    b.stop()
    print("backfill at the stop: %r %r" % (at_stop["state"], at_stop["backfill"]))
    b.start()
    X.wait_state(b.http, "rs.backfill", lambda d: d["state"] != "failed", "not failed", timeout=20)
    doc, _ = X.wait_state(b.http, "rs.backfill", lambda d: d["state"] != "backfilling", "the end of the backfill",
                          timeout=60)
    time.sleep(0.5)  # for the idle expansion, nothing to do: it must be caught up by now
    idle = X.get(b.http, "rs.idle")
    conn = S.pg_connect(b.pg)
    try:
        rows, distinct = S.pg_rows(conn, "SELECT count(*), count(DISTINCT _partition || ':' || _offset) "
                                         "FROM rs.backfill")[0]
        problems = []
        if (doc["state"], doc["lag"], doc["backfill"]) != ("running", 0, {"total": n_pre, "done": n_pre}):
            problems.append("backfill after the restart: state %r, lag %r, backfill %r (want running, 0, %d/%d)"
                            % (doc["state"], doc["lag"], doc["backfill"], n_pre, n_pre))
        if (rows, distinct) != (n_pre, n_pre):
            problems.append("backfill target: %d rows, %d distinct positions (want %d)" % (rows, distinct, n_pre))
        if (idle["state"], idle["lag"]) != ("running", 0):
            problems.append("idle live-only expansion: state %r, lag %r (want running, 0)" % (idle["state"],
                                                                                            idle["lag"]))
        assert not problems, "\n".join(problems)
        X.assert_same_positions(X.positions(conn, "rs.backfill"), X.topic_positions(conn, topic_name),
                                "backfill across a restart")
    finally:
        conn.close()


# --------------------------------------------------------------------------
# 6. kill -9 while producing
# --------------------------------------------------------------------------


def verify_exactly_once(b, conn, topic, target, acked, what):
    X.wait_caught_up(b.http, target, timeout=60)
    n = assert_distinct_positions(conn, target)
    X.assert_same_positions(X.positions(conn, target), X.topic_positions(conn, topic), what)
    rows = {(r[0], r[1]): r[2] for r in S.pg_rows(conn, "SELECT _partition, _offset, seq FROM %s" % target)}
    lost = [(pos, seq) for pos, seq in acked.items() if rows.get(pos) != seq]
    assert not lost, "%s: %d acknowledged events missing or wrong in the target, first %r" % (
        what, len(lost), [(pos, seq, rows.get(pos)) for pos, seq in lost[:5]])
    # Every row is its event, fully expanded.
    good = count_where(conn, "SELECT count(*) FROM %s x JOIN %s k ON k.partition = x._partition AND "
                             "k.offset = x._offset WHERE x.seq = CAST(k.value ->> '$.seq' AS BIGINT) "
                             "AND x.name = (k.value ->> '$.name') "
                             "AND x.amount = CAST(k.value ->> '$.amount' AS DOUBLE PRECISION) "
                             "AND x.pad = (k.value ->> '$.pad') "
                             "AND x._missing_fields + x._excess_fields + x._type_errors + x._parse_error = 0"
                       % (target, S.topic_table(topic)))
    assert good == n, "%s: %d of %d rows do not match their events" % (what, n - good, n)
    return n


def test_kill9_exactly_once(broker_factory, topic_name, procs, tmp_path):
    """kill -9 during a produce stream, at three moments: after the restart each target has one
    row per event of the log, none twice, every acknowledged event among them. The second
    expansion is created with a backfill just before the second stream (killed mid-backfill
    if the backfill is still running)."""
    b = broker_factory(extra_args=S.SQL_ARGS)
    parts = 4
    H.create_topic(b.bootstrap, topic_name, parts, config={"segment.bytes": "262144"})
    X.create(b.http, topic_name, "crash.events", X.EVENT_FIELDS)
    acked = {}
    for cycle, kill_after in enumerate((0.4, 1.2, 2.5)):
        if cycle == 1:
            bf = X.create(b.http, topic_name, "crash.backfilled", X.EVENT_FIELDS, backfill=True)
            print("backfill created over %d events" % bf["backfill"]["total"])
        pp = H.ProducerProc(b.bootstrap, topic_name, parts, cycle * 1_000_000,
                            tmp_path / ("producer-%d.log" % cycle), procs, seconds=30,
                            extra=["--values", "json", "--rate", "8000"])
        t0 = time.monotonic()
        while time.monotonic() - t0 < kill_after or pp.ack_count() < 100:
            assert time.monotonic() - t0 < 25, "producer got %d acks in 25s (stderr: %s)" % (
                pp.ack_count(), H.tail(pp.log_path))
            assert pp.proc.poll() is None, "producer exited early: %s" % H.tail(pp.log_path)
            time.sleep(0.02)
        if cycle == 1:
            print("crash.backfilled at the kill: %r" % (X.get(b.http, "crash.backfilled")["backfill"],))
        b.kill9()
        time.sleep(0.5)
        _, acks = pp.finish()
        assert len(acks) >= 100, len(acks)
        for p_, o, seq in acks:
            assert acked.setdefault((p_, o), seq) == seq, "two events acknowledged at %r" % ((p_, o),)
        b.start()
        # One more event per partition after the restart (they are part of the check); they also
        # move every partition, so that the lag settles whatever happens to the start-up
        # catch-up (see test_backfill_resumes_after_restart).
        p = producer(b.bootstrap, **{"linger.ms": 0})
        for part in range(parts):
            seq = 9_000_000 + cycle * 100 + part
            d = H.produce_one(p, topic_name, X.event_key(seq), X.event_value(seq), partition=part)
            assert d.err is None, d
            acked[(d.partition, d.offset)] = seq
        conn = S.pg_connect(b.pg)
        try:
            n = verify_exactly_once(b, conn, topic_name, "crash.events", acked, "cycle %d" % cycle)
            if cycle >= 1:
                verify_exactly_once(b, conn, topic_name, "crash.backfilled", acked, "backfill, cycle %d" % cycle)
        finally:
            conn.close()
        print("cycle %d: %d acknowledged, %d events in the log and the target" % (cycle, len(acks), n))

    # After the crashes new events are expanded at once.
    p = producer(b.bootstrap, **{"linger.ms": 0})
    d = H.produce_one(p, topic_name, X.event_key(7_000_000), X.event_value(7_000_000), partition=1)
    assert d.err is None, d
    conn = S.pg_connect(b.pg)
    try:
        for target in ("crash.events", "crash.backfilled"):
            assert S.pg_rows(conn, "SELECT seq FROM %s WHERE _partition = 1 AND _offset = %d" % (target, d.offset)) == [
                (7_000_000,)]
    finally:
        conn.close()


# --------------------------------------------------------------------------
# 7. Compaction and retention
# --------------------------------------------------------------------------


def test_compaction_and_retention_keep_target_rows(broker_factory, topic_name, tmp_path):
    b = broker_factory(extra_args=S.SQL_ARGS + ["--log-cleaner-backoff-ms", "200",
                                                "--log-retention-check-interval-ms", "300"])
    fields = [{"name": "k", "type": "string"}, {"name": "v", "type": "int64"}]
    # Compaction: segment.ms=1 rolls a segment per produce, so all but the last are cleanable.
    H.create_topic(b.bootstrap, topic_name, 1, {"cleanup.policy": "compact", "segment.ms": "1",
                                                "min.cleanable.dirty.ratio": "0.01"})
    X.create(b.http, topic_name, "kept.compacted", fields, copy_source=True)
    p = producer(b.bootstrap, **{"linger.ms": 0})
    want = {}
    for i in range(30):
        value = b'{"k": "k%d", "v": %d}' % (i % 5, i)
        d = H.produce_one(p, topic_name, b"k%d" % (i % 5), value, partition=0)
        assert d.err is None and d.offset == i, d
        want[i] = ("k%d" % (i % 5), i, value.decode())
        time.sleep(0.005)
    assert H.produce_one(p, topic_name, b"k0", None, partition=0).offset == 30
    want[30] = (None, None, None)
    time.sleep(0.005)
    assert H.produce_one(p, topic_name, b"tail", b'{"k": "tail", "v": 31}', partition=0).offset == 31
    want[31] = ("tail", 31, '{"k": "tail", "v": 31}')

    conn = S.pg_connect(b.pg)
    try:
        survivors = [26, 27, 28, 29, 30, 31]
        S.wait_until("compaction of %s" % topic_name,
                     lambda: [o for (o,) in S.pg_rows(conn, 'SELECT "offset" FROM %s ORDER BY "offset"'
                                                      % S.topic_table(topic_name))] == survivors, timeout=30)

        def target_rows(table):
            return {r[0]: tuple(r[1:]) for r in S.pg_rows(conn, "SELECT _offset, k, v, convert_from(_source, 'UTF8') "
                                                                 "FROM %s" % table)}

        assert target_rows("kept.compacted") == want
        # A backfill now sees only what compaction left (CLI, --wait).
        schema_file = X.write_schema(tmp_path / "kv.json", fields)
        rc, out, err = X.sluice(["expansion", "create", "--server", b.http, "--topic", topic_name, "--target",
                                 "kept.after_compaction", "--schema", schema_file, "--backfill", "--wait"])
        assert rc == 0, (rc, out, err)
        assert out.strip().splitlines()[-1].endswith("running"), out
        assert sorted(o for (o,) in S.pg_rows(conn, "SELECT _offset FROM kept.after_compaction")) == survivors

        # Retention: 1 KiB segments, 4 KiB kept.
        retained = H.unique_topic("retained")
        H.create_topic(b.bootstrap, retained, 1, {"segment.bytes": "1024", "retention.bytes": "4096"})
        X.create(b.http, retained, "kept.retained", fields)
        for i in range(80):
            d = H.produce_one(p, retained, b"r", json.dumps({"k": "r" + "x" * 150, "v": i}).encode(), partition=0)
            assert d.err is None and d.offset == i, d
        start = S.wait_until("retention of %s" % retained, lambda: S.pg_rows(
            conn, "SELECT log_start_offset FROM system.partitions WHERE topic = %s" % S.sql_str(retained))[0][0],
                             timeout=30)
        assert count_where(conn, "SELECT count(*) FROM %s" % S.topic_table(retained)) == 80 - start
        assert S.pg_rows(conn, "SELECT count(*), min(_offset), max(_offset), sum(v) FROM kept.retained") == [
            (80, 0, 79, sum(range(80)))]
    finally:
        conn.close()

    # And after a crash and restart.
    b.kill9()
    b.start()
    conn = S.pg_connect(b.pg)
    try:
        assert target_rows_after(conn, "kept.compacted") == 32
        assert target_rows_after(conn, "kept.retained") == 80
    finally:
        conn.close()


def target_rows_after(conn, table):
    return count_where(conn, "SELECT count(*) FROM %s" % table)
