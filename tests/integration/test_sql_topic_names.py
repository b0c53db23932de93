"""Topic names that SQL folds or reserves (issue 21, item 8): Kafka tells apart topics whose
names differ only in case, SQLite compares table names without case and reserves sqlite_*.
Every legal topic name must be a table of its own, reached by its exact quoted name, over
psql, HTTP and psycopg2, and no topic may stop SQL from serving the others."""

import json

import pytest
from confluent_kafka import Producer

import expansion_helpers as E
import sluice_helpers as H
import sql_helpers as S

# Kafka's rules: [a-zA-Z0-9._-], up to 249 characters.
LONG = "L" + "x" * 247 + "Z"
NAMES = ["CaseT", "caset", "sqlite_events", "SQLITE_master", LONG, "with.dot", "with-dash",
         "_underscore", "9digits_first", "0", "a.b-c_D.9"]


@pytest.fixture(scope="module")
def b(module_broker_factory):
    broker = module_broker_factory(extra_args=S.SQL_ARGS)
    producer = Producer(H.producer_conf(broker.bootstrap, **{"linger.ms": 0}))
    for i, name in enumerate(NAMES):
        H.create_topic(broker.bootstrap, name, 1 + i % 3)
        d = H.produce_one(producer, name, b"key-" + name.encode(), name.encode(), partition=0)
        assert d.err is None and d.offset == 0, (name, d)
    return broker


def own_value_query(name):
    return "SELECT CAST(value AS TEXT), count(*) OVER () FROM %s" % S.topic_table(name)


def test_select_1_works_with_every_name(b, pg):
    assert S.psql_lines(b.pg, "SELECT 1") == ["1"]
    assert S.http_rows(b.http, "SELECT 1") == [[1]]
    assert S.pg_rows(pg, "SELECT 1") == [(1,)]


@pytest.mark.parametrize("name", NAMES)
def test_each_topic_is_its_own_table_over_psql_http_and_psycopg2(b, pg, name):
    assert S.psql_lines(b.pg, own_value_query(name)) == ["%s,1" % name]
    assert S.http_rows(b.http, own_value_query(name)) == [[name, 1]]
    assert S.pg_rows(pg, own_value_query(name)) == [(name, 1)]


def test_names_differing_in_case_join_as_two_tables(b, pg):
    sql = ("SELECT CAST(u.value AS TEXT), CAST(l.value AS TEXT), CAST(u.key AS TEXT) "
           'FROM kafka_topics."CaseT" u JOIN kafka_topics."caset" l ON u.offset = l.offset')
    assert S.pg_rows(pg, sql) == [("CaseT", "caset", "key-CaseT")]
    # Bare (unquoted) spellings are exact too, as Kafka spells the topic.
    assert S.http_rows(b.http, "SELECT CAST(value AS TEXT) FROM kafka_topics.CaseT") == [["CaseT"]]
    assert S.http_rows(b.http, "SELECT CAST(value AS TEXT) FROM kafka_topics.sqlite_events") == [
        ["sqlite_events"]]
    # A spelling that is neither topic names no table (and the error says which).
    err = S.http_error(b.http, 'SELECT * FROM kafka_topics."CASET"')
    assert "CASET" in err["message"], err


def test_system_tables_list_every_topic_by_its_name(b, pg):
    got = [r[0] for r in S.pg_rows(pg, "SELECT topic FROM system.topics ORDER BY topic")]
    assert sorted(NAMES) == sorted(n for n in got if n in NAMES), got
    parts = dict(S.pg_rows(pg, "SELECT topic, count(*) FROM system.partitions GROUP BY topic"))
    for i, name in enumerate(NAMES):
        assert parts[name] == 1 + i % 3, (name, parts)
    # DuckDB names each topic's table by the topic's exact name (no escaping: its catalog
    # keeps case and reserves no prefix), reached above.


def test_expansions_on_such_topics(b, pg, tmp_path):
    schema = [{"name": "n", "type": "int64"}]
    for name, target in (("CaseT", "names.upper"), ("caset", "names.lower"), ("sqlite_events", "names.res")):
        E.create(b.http, name, target, schema)
    producer = Producer(H.producer_conf(b.bootstrap, **{"linger.ms": 0}))
    for n, name in enumerate(("CaseT", "caset", "sqlite_events")):
        d = H.produce_one(producer, name, b"k", json.dumps({"n": n}).encode(), partition=0)
        assert d.err is None, d
    for target in ("names.upper", "names.lower", "names.res"):
        E.wait_caught_up(b.http, target)
    got = S.pg_rows(pg, "SELECT (SELECT n FROM names.upper), (SELECT n FROM names.lower), "
                        "(SELECT n FROM names.res)")
    assert got == [(0, 1, 2)]
    # The targets' rows and their topics' records line up through the topic tables.
    got = S.pg_rows(pg, 'SELECT CAST(t.value AS TEXT) FROM kafka_topics."CaseT" t '
                        "JOIN names.upper u ON u._offset = t.offset")
    assert got == [('{"n": 0}',)]
