"""Trino 476 (Maven Central's io.trino:trino-server, `scripts/fetch-trino`) with its
PostgreSQL connector pointed at Sluice's PostgreSQL listener, configured as for any
PostgreSQL database: the schemas and a topic's columns as Trino maps them, the query of
the imitated product's Kafka Connect guide ("latest change per key, tombstones skipped")
over a Debezium-style change topic, and an expansion target's typed columns. One broker,
the catalog `sluice` of one Trino (it takes tens of seconds to start)."""

import json
import time

import pytest
from confluent_kafka import Producer

import expansion_helpers as X
import sluice_helpers as H
import sql_helpers as S
from trino_helpers import Trino

TOPIC = "cdc.public.customers"
CATALOG = "sluice"


@pytest.fixture(scope="module")
def broker(module_broker_factory):
    b = module_broker_factory(extra_args=S.SQL_ARGS)
    assert b.pg and b.http, b.stdout_lines
    return b


@pytest.fixture(scope="module")
def trino(broker, tmp_path_factory):
    t = Trino(tmp_path_factory.mktemp("trino"), {CATALOG: broker.pg}).start()
    yield t
    t.stop()


def row(id_, email):
    return {"id": id_, "email": email, "balance": "%d.50" % id_}


# (key id, op, before, after); None as op: the tombstone after a delete.
CHANGES = [
    (1, "c", None, row(1, "a@x")),
    (2, "c", None, row(2, "b@x")),
    (1, "u", row(1, "a@x"), row(1, "a2@x")),
    (3, "c", None, row(3, "c@x")),
    (2, "d", row(2, "b@x"), None),
    (2, None, None, None),
]


def fill(b):
    """The change topic and a flattened expansion created before the first event, filled
    one event at a time so that each has its own broker timestamp."""
    H.create_topic(b.bootstrap, TOPIC, 1)
    fields = [{"name": "op", "type": "string"}, {"name": "ts_ms", "type": "int64"}] + [
        {"name": side, "type": "struct", "fields": [
            {"name": "id", "type": "int64"}, {"name": "email", "type": "string"},
            {"name": "balance", "type": "string"}]} for side in ("before", "after")]
    X.create(b.http, TOPIC, "cdc.customers_changes", fields, flatten=True)
    p = Producer(H.producer_conf(b.bootstrap))
    for n, (id_, op, before, after) in enumerate(CHANGES):
        key = json.dumps({"id": id_}).encode()
        value = None if op is None else json.dumps(
            {"before": before, "after": after, "op": op, "ts_ms": 1_764_000_000_000 + n,
             "source": {"table": "customers"}}).encode()
        H.produce_one(p, TOPIC, key, value, partition=0)
        time.sleep(0.005)
    X.wait_caught_up(b.http, "cdc.customers_changes")


@pytest.fixture(scope="module")
def filled(broker):
    fill(broker)


@pytest.fixture
def changes(trino, filled):
    """(the broker's Trino catalog, the topic)."""
    return CATALOG, TOPIC


def test_schemas_tables_and_column_types(trino, changes):
    cat, topic = changes
    _, schemas = trino.query("SHOW SCHEMAS FROM %s" % cat)
    assert {"kafka_topics", "system", "cdc"} <= {r[0] for r in schemas}, schemas
    _, tables = trino.query("SHOW TABLES FROM %s.kafka_topics" % cat)
    assert [topic] in tables, tables
    _, cols = trino.query('DESCRIBE %s.kafka_topics."%s"' % (cat, topic))
    # The types of docs/sql-pg.md: the partition is an integer (PostgreSQL's int4). The
    # hidden columns (key_text, value_text) are not listed, as they are not in SELECT *.
    assert [(c[0], c[1]) for c in cols] == [
        ("partition", "integer"), ("offset", "bigint"),
        ("timestamp_producer", "bigint"), ("timestamp_broker", "bigint"), ("key", "varbinary"),
        ("value", "varbinary"), ("headers", "varchar")], cols
    names, rows = trino.query('SELECT count(*), count(value), max("offset") FROM %s.kafka_topics."%s"' % (cat, topic))
    assert rows == [[6, 5, 5]], (names, rows)


def test_the_guides_latest_change_per_key(trino, changes):
    cat, topic = changes
    sql = """
SELECT key_json, op, after_json, timestamp_broker FROM (
  SELECT from_utf8(key) AS key_json,
         json_extract_scalar(from_utf8(value), '$.op') AS op,
         json_format(json_extract(from_utf8(value), '$.after')) AS after_json,
         timestamp_broker,
         row_number() OVER (PARTITION BY key ORDER BY timestamp_broker DESC) AS rn
  FROM %s.kafka_topics."%s"
  WHERE value IS NOT NULL
) WHERE rn = 1 ORDER BY key_json""" % (cat, topic)
    cols, rows = trino.query(sql)
    assert cols == ["key_json", "op", "after_json", "timestamp_broker"], cols
    got = [(r[0], r[1], None if r[2] in (None, "null") else json.loads(r[2])) for r in rows]
    assert got == [('{"id": 1}', "u", row(1, "a2@x")), ('{"id": 2}', "d", None),
                   ('{"id": 3}', "c", row(3, "c@x"))], rows
    # The broker times Trino read are Sluice's, increasing with the offsets.
    _, times = trino.query('SELECT "offset", timestamp_broker FROM %s.kafka_topics."%s" ORDER BY 1' % (cat, topic))
    assert [t[0] for t in times] == list(range(6)) and [t[1] for t in times] == sorted(t[1] for t in times), times


def test_expansion_target_typed_columns(trino, changes):
    cat, topic = changes
    _, cols = trino.query("DESCRIBE %s.cdc.customers_changes" % cat)
    types = {c[0]: c[1] for c in cols}
    assert types["op"] == "varchar" and types["ts_ms"] == "bigint" and types["after__id"] == "bigint", types
    assert types["_offset"] == "bigint" and types["after__email"] == "varchar", types
    _, rows = trino.query("SELECT _offset, op, before__id, after__id, after__email FROM %s.cdc.customers_changes "
                          "ORDER BY _offset" % cat)
    assert rows == [[0, "c", None, 1, "a@x"], [1, "c", None, 2, "b@x"], [2, "u", 1, 1, "a2@x"],
                    [3, "c", None, 3, "c@x"], [4, "d", 2, None, None], [5, None, None, None, None]], rows
    # The target joined with its topic on the event's place, in Trino.
    _, joined = trino.query(
        'SELECT c.after__email, from_utf8(t.key) FROM %s.cdc.customers_changes c '
        'JOIN %s.kafka_topics."%s" t ON c._partition = t.partition AND c._offset = t."offset" '
        "WHERE c.op = 'u'" % (cat, cat, topic))
    assert joined == [["a2@x", '{"id": 1}']], joined


def test_comments_of_a_table(trino, broker):
    """COMMENT ON: Trino shows a column's comment in DESCRIBE and the table's in its
    metadata, read through JDBC's getColumns and getTables (pg_description)."""
    S.psql_ok(broker.pg, "CREATE TABLE notes(id BIGINT, body TEXT)",
              "COMMENT ON TABLE notes IS 'kept notes'", "COMMENT ON COLUMN notes.body IS 'the text'")
    _, cols = trino.query("DESCRIBE %s.main.notes" % CATALOG)
    assert [(c[0], c[1], c[3]) for c in cols] == [("id", "bigint", ""), ("body", "varchar", "the text")], cols
    _, rows = trino.query("SELECT comment FROM system.metadata.table_comments WHERE catalog_name = '%s' "
                          "AND schema_name = 'main' AND table_name = 'notes'" % CATALOG)
    assert rows == [["kept notes"]], rows
