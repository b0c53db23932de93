"""GET /metrics, /healthz and /readyz on the HTTP listener (issue 38; docs/operations.md).

The scrape is read with Prometheus' own parser (prometheus_client from PyPI, in
tests/integration/.venv: prometheus_parse.py), so a format error fails here as it would
in Prometheus. Checked: every family documented is present with its type; values move
with the load by exactly what was done (records produced, committed offsets, lag falling
to 0 once the consumer commits, requests per API, SQL statements); the per-partition
bound (--metrics-max-partition-series) keeps the per-topic families and says what it
left out; the health endpoints answer; an expansion's rows, errors and lag.
"""

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

import expansion_helpers as E
import sluice_helpers as H
import sql_helpers as Q

HERE = Path(__file__).resolve().parent
CALL_TIMEOUT = 30.0

# name -> type, as the TYPE lines give them.
FAMILIES = {
    "kafka_brokers": "gauge",
    "kafka_topic_partitions": "gauge",
    "kafka_topic_partition_current_offset": "gauge",
    "kafka_topic_partition_oldest_offset": "gauge",
    "kafka_consumergroup_current_offset": "gauge",
    "kafka_consumergroup_current_offset_sum": "gauge",
    "kafka_consumergroup_lag": "gauge",
    "kafka_consumergroup_lag_sum": "gauge",
    "kafka_consumergroup_members": "gauge",
    "sluice_kafka_requests_total": "counter",
    "sluice_kafka_request_duration_seconds": "histogram",
    "sluice_kafka_connections": "gauge",
    "sluice_kafka_in_flight_request_bytes": "gauge",
    "sluice_kafka_in_flight_request_bytes_max": "gauge",
    "sluice_kafka_in_flight_stops_total": "counter",
    "sluice_topic_produced_bytes_total": "counter",
    "sluice_topic_produced_records_total": "counter",
    "sluice_topic_fetched_bytes_total": "counter",
    "sluice_topic_disk_bytes": "gauge",
    "sluice_fsync_duration_seconds": "histogram",
    "sluice_journal_syncs_total": "counter",
    "sluice_journal_bytes_total": "counter",
    "sluice_flush_passes_total": "counter",
    "sluice_authentication_failures_total": "counter",
    "sluice_groups": "gauge",
    "sluice_sql_queries_total": "counter",
    "sluice_sql_query_duration_seconds": "histogram",
    "sluice_expansion_rows_written_total": "counter",
    "sluice_expansion_lag": "gauge",
    "sluice_expansion_failed": "gauge",
    "sluice_expansion_parse_errors_total": "counter",
    "sluice_expansion_type_errors_total": "counter",
    "sluice_retention_runs_total": "counter",
    "sluice_retention_segments_deleted_total": "counter",
    "sluice_retention_bytes_deleted_total": "counter",
    "sluice_cleaner_runs_total": "counter",
    "sluice_cleaner_partitions_cleaned_total": "counter",
    "sluice_cleaner_records_removed_total": "counter",
    "sluice_cleaner_bytes_reclaimed_total": "counter",
    "sluice_cleaner_partition_failures_total": "counter",
    "sluice_metrics_partitions_omitted": "gauge",
}


def venv_python():
    venv = Path(os.environ.get("SLUICE_PYPI_VENV") or HERE / ".venv")
    python = venv / "bin" / "python"
    if not os.access(python, os.X_OK):
        pytest.fail("no PyPI virtual environment at %s: run `make test-deps`" % venv, pytrace=False)
    return python


def get(addr, path):
    """(status, body text) of GET http://addr/path."""
    try:
        with urllib.request.urlopen("http://%s%s" % (addr, path), timeout=CALL_TIMEOUT) as r:
            return r.status, r.read().decode(), r.headers.get("Content-Type")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers.get("Content-Type")


def scrape(addr):
    """The families of GET /metrics, as Prometheus' parser reads them."""
    status, text, ctype = get(addr, "/metrics")
    assert status == 200, text
    assert ctype.startswith("text/plain; version=0.0.4"), ctype
    p = subprocess.run([str(venv_python()), str(HERE / "prometheus_parse.py")], input=text.encode(),
                       capture_output=True, timeout=CALL_TIMEOUT)
    assert p.returncode == 0, "Prometheus' parser refused the scrape: %s" % p.stderr.decode()[-2000:]
    return json.loads(p.stdout)


def value(fams, family, sample=None, **labels):
    """The value of the one sample of `family` (named `sample`, default the family's name)
    whose labels include `labels`; 0 when none (a counter not yet counted)."""
    name = sample or family
    got = [v for n, ls, v in fams[family]["samples"]
           if n == name and all(ls.get(k) == str(x) for k, x in labels.items())]
    assert len(got) <= 1, "%s%r matches %d samples" % (name, labels, len(got))
    return got[0] if got else 0


def total(fams, family, **labels):
    return sum(v for n, ls, v in fams[family]["samples"]
               if n == family and all(ls.get(k) == str(x) for k, x in labels.items()))


@pytest.fixture(scope="module")
def broker(module_broker_factory):
    return module_broker_factory(extra_args=["--http", "127.0.0.1:0"])


def test_health_endpoints(broker):
    status, body, _ = get(broker.http, "/healthz")
    assert (status, body) == (200, "ok\n")
    status, body, _ = get(broker.http, "/readyz")
    assert (status, body) == (200, "ready\n")


def test_every_family_present_with_its_type(broker):
    fams = scrape(broker.http)
    missing = sorted(set(FAMILIES) - set(fams))
    assert not missing, "families missing from /metrics: %s" % missing
    wrong = {n: fams[n]["type"] for n, t in FAMILIES.items() if fams[n]["type"] != t}
    assert not wrong, "families of the wrong type: %s" % wrong
    assert value(fams, "kafka_brokers") == 1
    # Counters of every supported API from the first scrape, and one connection gauge
    # per Kafka listener.
    apis = {ls["api"] for n, ls, v in fams["sluice_kafka_requests_total"]["samples"]}
    assert {"Produce", "Fetch", "Metadata", "OffsetCommit", "JoinGroup"} <= apis
    assert [ls["protocol"] for n, ls, v in fams["sluice_kafka_connections"]["samples"]] == ["PLAINTEXT"]


def test_values_move_with_the_load(broker):
    topic = H.unique_topic("metrics")
    group = "metrics-group-" + topic
    H.create_topic(broker.bootstrap, topic, 3)
    before = scrape(broker.http)
    assert value(before, "kafka_topic_partitions", topic=topic) == 3
    assert total(before, "kafka_topic_partition_current_offset", topic=topic) == 0

    n = 500
    producer = Producer(H.producer_conf(broker.bootstrap))
    records = [dict(key=H.key_for(i), value=H.value_for(i)) for i in range(n)]
    H.produce_all(producer, topic, records)
    during = scrape(broker.http)
    # The producer's connection is open while it lives.
    assert total(during, "sluice_kafka_connections") >= 1
    producer.flush(5)
    del producer

    after = scrape(broker.http)
    produced = "sluice_topic_produced_records_total"
    assert value(after, produced, topic=topic) - value(before, produced, topic=topic) == n
    assert value(after, "sluice_topic_produced_bytes_total", topic=topic) > n * 10
    assert total(after, "kafka_topic_partition_current_offset", topic=topic) == n
    assert total(after, "kafka_topic_partition_oldest_offset", topic=topic) == 0
    assert value(after, "sluice_topic_disk_bytes", topic=topic) > n * 10
    req = "sluice_kafka_requests_total"
    assert value(after, req, api="Produce", error="NONE") > value(before, req, api="Produce", error="NONE")
    assert value(after, req, api="Metadata", error="NONE") > value(before, req, api="Metadata", error="NONE")
    dur = "sluice_kafka_request_duration_seconds"
    produce_count = value(after, dur, dur + "_count", api="Produce")
    assert produce_count - value(before, dur, dur + "_count", api="Produce") == \
        value(after, req, api="Produce", error="NONE") - value(before, req, api="Produce", error="NONE")
    assert value(after, dur, dur + "_bucket", api="Produce", le="+Inf") == produce_count
    assert value(after, dur, dur + "_sum", api="Produce") > 0
    # acks=all: the appends were fsynced (journal or segment).
    fsyncs = "sluice_fsync_duration_seconds"
    assert value(after, fsyncs, fsyncs + "_count") > value(before, fsyncs, fsyncs + "_count")
    assert value(after, "sluice_flush_passes_total") > value(before, "sluice_flush_passes_total")

    # A group consumes everything and commits: its offsets and lag.
    consumer = Consumer(H.consumer_conf(broker.bootstrap, **{
        "group.id": group, "auto.offset.reset": "earliest", "enable.partition.eof": False,
        "enable.auto.offset.store": True,
        "session.timeout.ms": 10000}))
    try:
        consumer.subscribe([topic])
        got = _consume_n(consumer, n)
        assert got == n
        consumer.commit(asynchronous=False)
        fams = scrape(broker.http)
        assert value(fams, "kafka_consumergroup_members", consumergroup=group) == 1
        assert value(fams, "sluice_groups", state="Stable") >= 1
        assert value(fams, "kafka_consumergroup_current_offset_sum", consumergroup=group, topic=topic) == n
        assert value(fams, "kafka_consumergroup_lag_sum", consumergroup=group, topic=topic) == 0
        offsets = {ls["partition"]: v for name, ls, v in fams["kafka_consumergroup_current_offset"]["samples"]
                   if ls["consumergroup"] == group and ls["topic"] == topic}
        current = {ls["partition"]: v for name, ls, v in fams["kafka_topic_partition_current_offset"]["samples"]
                   if ls["topic"] == topic}
        assert offsets == current
        assert value(fams, "sluice_topic_fetched_bytes_total", topic=topic) >= \
            value(after, "sluice_topic_produced_bytes_total", topic=topic)
        assert value(fams, req, api="OffsetCommit", error="NONE") > value(after, req, api="OffsetCommit", error="NONE")

        # 100 more: lag 100 until the consumer reads and commits them, then 0.
        producer = Producer(H.producer_conf(broker.bootstrap))
        H.produce_all(producer, topic, [dict(key=H.key_for(i), value=H.value_for(i)) for i in range(100)])
        del producer
        fams = scrape(broker.http)
        assert value(fams, "kafka_consumergroup_lag_sum", consumergroup=group, topic=topic) == 100
        assert total(fams, "kafka_consumergroup_lag", consumergroup=group, topic=topic) == 100
        assert value(fams, produced, topic=topic) - value(before, produced, topic=topic) == n + 100
        assert _consume_n(consumer, 100) == 100
        consumer.commit(asynchronous=False)
        fams = scrape(broker.http)
        assert value(fams, "kafka_consumergroup_lag_sum", consumergroup=group, topic=topic) == 0
        assert value(fams, "kafka_consumergroup_current_offset_sum", consumergroup=group, topic=topic) == n + 100
    finally:
        consumer.close()


def _consume_n(consumer, n, timeout=30.0):
    """How many records the consumer reads, up to n, within the timeout."""
    got = 0
    deadline = time.monotonic() + timeout
    while got < n and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got += 1
    return got


def test_sql_statements_are_counted(broker):
    topic = H.unique_topic("metrics-sql")
    H.create_topic(broker.bootstrap, topic, 1)
    before = scrape(broker.http)
    rows = Q.http_rows(broker.http, "SELECT count(*) FROM %s" % Q.topic_table(topic))
    assert rows == [[0]]
    Q.http_error(broker.http, "SELECT * FROM no_such_table")
    after = scrape(broker.http)
    q = "sluice_sql_queries_total"
    assert value(after, q, outcome="done") - value(before, q, outcome="done") >= 1
    assert value(after, q, outcome="failed") - value(before, q, outcome="failed") >= 1
    d = "sluice_sql_query_duration_seconds"
    assert value(after, d, d + "_count") > value(before, d, d + "_count")


def test_per_partition_series_are_bounded(module_broker_factory):
    b = module_broker_factory(extra_args=["--http", "127.0.0.1:0", "--metrics-max-partition-series", "4"])
    small, large = "bound-a", "bound-b"
    H.create_topic(b.bootstrap, small, 3)
    H.create_topic(b.bootstrap, large, 5)
    fams = scrape(b.http)
    # Both keep their per-topic family; only the topic that fits has per-partition series.
    assert value(fams, "kafka_topic_partitions", topic=small) == 3
    assert value(fams, "kafka_topic_partitions", topic=large) == 5
    shown = {ls["topic"] for n, ls, v in fams["kafka_topic_partition_current_offset"]["samples"]}
    assert shown == {small}
    assert value(fams, "sluice_metrics_partitions_omitted") == 5


def test_expansion_families_follow_its_rows(broker):
    topic = H.unique_topic("metrics-exp")
    target = "main.metrics_exp_" + topic.replace("-", "_")
    H.create_topic(broker.bootstrap, topic, 1)
    E.create(broker.http, topic, target, [{"name": "n", "type": "int64"}])
    before = scrape(broker.http)
    producer = Producer(H.producer_conf(broker.bootstrap))
    # Two good events, one that is not JSON, one with a field of the wrong type.
    values = [b'{"n": 1}', b'{"n": 2}', b'not json', b'{"n": "three"}']
    H.produce_all(producer, topic, [dict(key=b"k", value=v) for v in values])
    del producer
    labels = dict(expansion=target, topic=topic)
    H.wait_until("the expansion wrote its 4 rows",
                 lambda: _check(value(scrape(broker.http), "sluice_expansion_rows_written_total", **labels) == 4))
    after = scrape(broker.http)
    assert value(after, "sluice_expansion_lag", **labels) == 0
    assert value(after, "sluice_expansion_failed", **labels) == 0
    for family, n in (("sluice_expansion_parse_errors_total", 1), ("sluice_expansion_type_errors_total", 1)):
        assert value(after, family) - value(before, family) == n, family


def _check(ok):
    """For wait_until: an AssertionError (retried) until ok."""
    assert ok
    return True
