"""Expansion targets (issue 21): the optional _key column (a tombstone's row says which key it
deleted), and "which events have no row" answered without a scan of the target per event.
(`sluice expansion list` showing a target's rows after a restart, for targets an older
broker left: test_expansions_duck's upgrade test.)

kafka-python produces (keys as bytes, tombstones as value None); psycopg2 and HTTP read."""

import json
import time

import pytest
from confluent_kafka import Producer
from kafka import KafkaProducer

import expansion_helpers as X
import sluice_helpers as H
import sql_helpers as S

FIELDS = [{"name": "n", "type": "int64"}]


@pytest.fixture(scope="module")
def b(module_broker_factory):
    broker = module_broker_factory(extra_args=S.SQL_ARGS)
    assert broker.pg and broker.http, broker.stdout_lines
    return broker


def kafka_python_send(bootstrap, topic, records):
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0, api_version_auto_timeout_ms=10000)
    try:
        for k, v in records:
            p.send(topic, key=k, value=v, partition=0).get(timeout=30)
    finally:
        p.close(timeout=10)


def test_key_column_as_text_and_as_bytes(b, pg, topic_name):
    H.create_topic(b.bootstrap, topic_name, 1)
    text = X.create(b.http, topic_name, "keys.text", {"fields": FIELDS, "key": {"type": "string"}})
    raw = X.create(b.http, topic_name, "keys.raw", {"fields": FIELDS, "key": {"type": "binary"}})
    plain = X.create(b.http, topic_name, "keys.plain", FIELDS)
    assert (plain["rows"], plain["rows_written"]) == (0, 0), plain
    assert text["columns"][-1] == {"name": "_key", "type": "TEXT"}, text["columns"]
    assert raw["columns"][-1] == {"name": "_key", "type": "BLOB"}, raw["columns"]
    assert "_key" not in [c["name"] for c in plain["columns"]]
    # The schema as stored says how to ask for the key.
    schema = text["schema"] if isinstance(text["schema"], dict) else json.loads(text["schema"])
    assert schema["key"] == {"type": "string"}, schema
    kafka_python_send(b.bootstrap, topic_name, [
        (b"user-1", b'{"n": 1}'),
        (b"user-2", b'{"n": 2}'),
        (b"user-1", None),  # a tombstone: which key did it delete?
        (b"\xff\xfe", b'{"n": 4}'),  # a key that is not text
        (None, b'{"n": 5}'),  # no key
    ])
    for t in ("keys.text", "keys.raw", "keys.plain"):
        X.wait_caught_up(b.http, t)
    got = S.pg_rows(pg, "SELECT _offset, n, _key, _type_errors FROM keys.text ORDER BY _offset")
    assert got == [(0, 1, "user-1", 0), (1, 2, "user-2", 0), (2, None, "user-1", 0), (3, 4, None, 1),
                   (4, 5, None, 0)], got
    got = [(o, S.as_bytes(k)) for o, k in S.pg_rows(pg, "SELECT _offset, _key FROM keys.raw ORDER BY _offset")]
    assert got == [(0, b"user-1"), (1, b"user-2"), (2, b"user-1"), (3, b"\xff\xfe"), (4, None)], got
    # The latest state per key, tombstones included, from the target alone.
    got = S.http_rows(b.http, "SELECT _key, n FROM keys.text t WHERE _offset = (SELECT max(_offset) FROM "
                              "keys.text u WHERE u._key = t._key) ORDER BY _key")
    assert got == [["user-1", None], ["user-2", 2]], got


def test_key_type_errors_are_refused(b, topic_name):
    H.create_topic(b.bootstrap, topic_name, 1)
    err = X.create_refused(b.http, X.create_body(topic_name, "keys.bad", {"fields": FIELDS, "key": {"type": "int"}}),
                           400)
    assert "key" in err["message"] and "binary" in err["message"], err
    err = X.create_refused(b.http, X.create_body(topic_name, "keys.bad2", [{"name": "_key", "type": "string"}]), 400)
    assert "_key" in err["message"], err


def fill_topic(bootstrap, topic, n):
    p = Producer(H.producer_conf(bootstrap, **{"linger.ms": 20, "batch.num.messages": 10000}))
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=b'{"n": %d}' % i, partition=0)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(120) == 0


def test_not_exists_against_a_target_is_one_anti_join(b, pg, topic_name):
    """The question of the issue: which events have no row? Over 100,000 events it ran into
    the 30 s statement timeout when the target was scanned once per event."""
    H.create_topic(b.bootstrap, topic_name, 1)
    X.create(b.http, topic_name, "idx.t", FIELDS)
    fill_topic(b.bootstrap, topic_name, 100_000)
    X.wait_caught_up(b.http, "idx.t", timeout=120)
    assert S.pg_rows(pg, 'SELECT (SELECT count(*) FROM idx.t), (SELECT count(*) FROM kafka_topics."%s")'
                     % topic_name) == [(100_000, 100_000)]
    sql = ('SELECT count(*) FROM kafka_topics."%s" t WHERE NOT EXISTS '
           '(SELECT 1 FROM idx.t c WHERE c._offset = t."offset")' % topic_name)
    start = time.monotonic()
    assert S.pg_rows(pg, sql) == [(0,)]
    took = time.monotonic() - start
    assert took < 10, "NOT EXISTS over 100,000 rows took %.1f s" % took
    print("NOT EXISTS over 100,000 rows: %.3f s" % took)
    # DuckDB's columnar targets have no index (docs/expansions.md, Storage): it answers with
    # one hash anti-join, never a nested loop that would scan the target once per event.
    plan = " | ".join(str(r[-1]) for r in S.pg_rows(pg, "EXPLAIN " + sql))
    assert "HASH_JOIN" in plan and "ANTI" in plan, plan
    for per_row in ("NESTED_LOOP_JOIN", "BLOCKWISE_NL_JOIN", "CROSS_PRODUCT", "PIECEWISE_MERGE_JOIN"):
        assert per_row not in plan, plan
