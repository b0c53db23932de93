"""Round trip and admin operations through kafka-python 2.0.2 (pure-Python client).

kafka-python picks request versions from the broker's ApiVersions answer
(Produce v7, Fetch v4, ListOffsets v1, Metadata v1/v5, CreateTopics and
DeleteTopics v3 against Sluice's advertised ranges) and verifies record batch
CRCs on fetch (check_crcs=True).
"""

import time

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError

import sluice_helpers as H


def admin(bootstrap):
    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="sluice-it-admin", request_timeout_ms=15000)


def consumer(bootstrap):
    return KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                         client_id="sluice-it-consumer", auto_offset_reset="none", check_crcs=True,
                         fetch_max_wait_ms=100, request_timeout_ms=30000)


def wait_partitions(c, topic, n, timeout=20.0):
    deadline = time.monotonic() + timeout
    parts = None
    while time.monotonic() < deadline:
        parts = c.partitions_for_topic(topic)
        if parts and len(parts) == n:
            return parts
        time.sleep(0.2)
    raise AssertionError("kafka-python metadata never showed %d partitions for %s (last %r)" % (n, topic, parts))


def test_kafka_python_roundtrip(broker, topic_name):
    n, parts = 5000, 3
    adm = admin(broker.bootstrap)
    try:
        resp = adm.create_topics([NewTopic(topic_name, num_partitions=parts, replication_factor=1)],
                                 timeout_ms=10000)
        errs = [(t[0], t[1]) for t in resp.topic_errors]
        assert errs == [(topic_name, 0)], resp
        # Known to every broker (of a cluster, too) before the producer, which does not retry.
        H.wait_topic(broker.bootstrap, topic_name, parts)
        assert topic_name in adm.list_topics()
        described = adm.describe_topics([topic_name])
        assert len(described) == 1 and described[0]["topic"] == topic_name and described[0]["error_code"] == 0
        assert sorted(p["partition"] for p in described[0]["partitions"]) == list(range(parts))

        # Creating it again is refused with TOPIC_ALREADY_EXISTS (36).
        with pytest.raises(TopicAlreadyExistsError):
            adm.create_topics([NewTopic(topic_name, num_partitions=parts, replication_factor=1)])
    finally:
        adm.close()

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5,
                             compression_type=None, retries=0, client_id="sluice-it-producer",
                             max_in_flight_requests_per_connection=1, request_timeout_ms=30000)
    base = H.now_ms() - 60_000
    records = []
    futures = []
    try:
        for i in range(n):
            r = dict(key=H.key_for(i, b"kp"), value=H.value_for(i, b"kp"), headers=H.headers_for(i, b"kp"),
                     timestamp=base + i)
            records.append(r)
            futures.append(producer.send(topic_name, key=r["key"], value=r["value"], headers=r["headers"],
                                         timestamp_ms=r["timestamp"]))
        producer.flush(timeout=60)
        metas = [f.get(timeout=30) for f in futures]
    finally:
        producer.close(timeout=10)

    expected = {}
    for r, m in zip(records, metas):
        assert m.topic == topic_name
        assert m.timestamp == r["timestamp"]
        pos = (m.partition, m.offset)
        assert pos not in expected, "two records acknowledged at %r" % (pos,)
        expected[pos] = r
    assert len(expected) == n
    H.assert_contiguous(expected, "acknowledged offsets")
    counts = H.counts_by_partition(expected)
    assert sorted(counts) == list(range(parts)), counts

    c = consumer(broker.bootstrap)
    try:
        assert wait_partitions(c, topic_name, parts) == set(range(parts))
        tps = [TopicPartition(topic_name, p) for p in range(parts)]
        c.assign(tps)
        c.seek_to_beginning()
        got = []
        deadline = time.monotonic() + 60
        while len(got) < n and time.monotonic() < deadline:
            for tp, msgs in c.poll(timeout_ms=500, max_records=5000).items():
                for m in msgs:
                    assert m.topic == topic_name
                    got.append(dict(partition=m.partition, offset=m.offset, key=m.key, value=m.value,
                                    headers=list(m.headers), timestamp=m.timestamp,
                                    # kafka-python: 0 = CreateTime, 1 = LogAppendTime
                                    timestamp_type={0: TIMESTAMP_CREATE_TIME, 1: TIMESTAMP_LOG_APPEND_TIME}.get(
                                        m.timestamp_type, m.timestamp_type)))
        assert len(got) == n, "consumed %d of %d records within 60s" % (len(got), n)
        # Nothing beyond what was produced.
        extra = c.poll(timeout_ms=500)
        assert not any(extra.values()), "unexpected extra records: %r" % extra
        H.assert_records_match(expected, got)

        assert c.beginning_offsets(tps) == {tp: 0 for tp in tps}
        assert c.end_offsets(tps) == {tp: counts[tp.partition] for tp in tps}
        # ListOffsets by timestamp (v1): first record at or after the time.
        for tp in tps:
            recs = sorted((o, r["timestamp"]) for (p, o), r in expected.items() if p == tp.partition)
            o_mid, ts_mid = recs[len(recs) // 2]
            res = c.offsets_for_times({tp: ts_mid})
            assert res[tp] is not None and res[tp].offset == o_mid and res[tp].timestamp == ts_mid, res
            res = c.offsets_for_times({tp: recs[-1][1] + 1})
            assert res[tp] is None, "timestamp after the last record should find nothing: %r" % res
    finally:
        c.close()


def test_kafka_python_delete_topic(broker, topic_name):
    adm = admin(broker.bootstrap)
    try:
        resp = adm.create_topics([NewTopic(topic_name, num_partitions=2, replication_factor=1)], timeout_ms=10000)
        assert [(t[0], t[1]) for t in resp.topic_errors] == [(topic_name, 0)]
        H.wait_topic(broker.bootstrap, topic_name, 2)

        resp = adm.delete_topics([topic_name], timeout_ms=10000)
        assert [(t[0], t[1]) for t in resp.topic_error_codes] == [(topic_name, 0)], resp

        deadline = time.monotonic() + 15
        while topic_name in adm.list_topics() or H.topic_listed_anywhere(broker.bootstrap, topic_name):
            assert time.monotonic() < deadline, "deleted topic still listed after 15s"
            time.sleep(0.2)

        # Deleting it again: UNKNOWN_TOPIC_OR_PARTITION.
        with pytest.raises(UnknownTopicOrPartitionError):
            adm.delete_topics([topic_name], timeout_ms=10000)

        # The name can be reused, and the new topic starts empty.
        resp = adm.create_topics([NewTopic(topic_name, num_partitions=1, replication_factor=1)], timeout_ms=10000)
        assert [(t[0], t[1]) for t in resp.topic_errors] == [(topic_name, 0)]
    finally:
        adm.close()
    H.wait_topic(broker.bootstrap, topic_name, 1)
    c = consumer(broker.bootstrap)
    try:
        tp = TopicPartition(topic_name, 0)
        assert c.end_offsets([tp]) == {tp: 0}
    finally:
        c.close()
