"""Produce requests pipelined on one connection to a shared-mode broker (docs/operations.md,
"Limits"; docs/shared-mode.md#windows-in-flight): one broker of scripts/cluster with a
300 ms produce window, so that what one window holds is plain to see.

librdkafka sends one Produce request per partition and keeps many in flight on one
connection; each waits for its window's commit. The broker reads them all (up to
--max-in-flight-requests-per-connection) into the open window, answers them in request
order, and each partition's offsets follow its requests' order, whichever partitions
the requests in between wrote to. With a low limit the broker stops reading at it, and
the requests behind wait for the next windows.
"""

import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import idempotence_helpers as I
import kproto as K
from cluster_helpers import (broker_metrics, cluster_cmd, consume_all, kafka, running_cluster,
                             wait_topic_known)

WINDOW_MS = 300
COMMITTED = 'sluice_shared_windows_total{outcome="committed"}'


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("pipelining"), "--brokers", 1, "--fast-s3")


def restart(cluster, *flags):
    cluster_cmd("stop", cluster, 0)
    cluster_cmd("start", cluster, 0, "--", "--produce-window-ms", WINDOW_MS, *flags)


def create(cluster, topic, partitions):
    admin = AdminClient({"bootstrap.servers": kafka(cluster, 0)})
    admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=30)[topic].result(timeout=30)
    wait_topic_known(cluster, topic)


def send_produce(conn, topic, partition, batch):
    body = (K.nullable_string(None) + K.i16(-1) + K.i32(30000) + K.i32(1) + K.string(topic)
            + K.i32(1) + K.i32(partition) + K.kbytes(batch))
    return conn.send_request(K.PRODUCE, 3, body)


def produce_answer(conn, corr, topic):
    """The answer to request `corr`, which must be the next one on the connection."""
    r = conn.recv_response(corr, timeout=60)
    topics = r.array(lambda x: (x.string(), x.array(
        lambda y: dict(partition=y.i32(), error=y.i16(), base_offset=y.i64(), log_append_time=y.i64()))))
    assert len(topics) == 1 and topics[0][0] == topic and len(topics[0][1]) == 1, topics
    return topics[0][1][0]


def pipeline(cluster, conn, topic, sends):
    """Sends every (partition, batch) before reading any answer; returns the answers, read
    in request order (recv_response checks each correlation id), and the committed windows
    they took."""
    before = broker_metrics(cluster, 0).get(COMMITTED, 0.0)
    corrs = [send_produce(conn, topic, p, b) for p, b in sends]
    answers = [produce_answer(conn, c, topic) for c in corrs]
    return answers, broker_metrics(cluster, 0).get(COMMITTED, 0.0) - before


def values(i, n=2):
    return [("r-%d-%d" % (i, k)).encode() for k in range(n)]


def test_hundreds_of_requests_in_one_window_answered_in_order(cluster):
    restart(cluster)
    topic = "pipelined"
    create(cluster, topic, 3)
    now = int(time.time() * 1000)
    with K.Conn(kafka(cluster, 0), timeout=60) as conn:
        pid = I.init_producer_id_v1(conn)["producer_id"]
        # 600 requests of two records, more than the 256 a connection had in flight before:
        # partitions 0 and 1 plain batches, partition 2 an idempotent producer's, its
        # sequences in request order.
        sends = []
        for i in range(600):
            p = i % 3
            if p == 2:
                sends.append((p, I.batch(pid, 0, 2 * (i // 3), values(i), now)))
            else:
                sends.append((p, K.encode_batch([(now, b"k", v, []) for v in values(i)])))
        answers, windows = pipeline(cluster, conn, topic, sends)
    assert [a["partition"] for a in answers] == [p for p, _ in sends]
    assert all(a["error"] == 0 for a in answers), [a for a in answers if a["error"]][:3]
    # Each partition's offsets in request order, contiguous.
    for p in range(3):
        assert [a["base_offset"] for a in answers if a["partition"] == p] == list(range(0, 400, 2)), p
    # All read at once: the first window (300 ms) holds most of them, not one limit's worth.
    print("600 pipelined requests: %d windows" % windows)
    assert 1 <= windows <= 2, windows
    seen, dups = consume_all(kafka(cluster, 0), topic, 3, 1200)
    assert not dups, dups[:5]
    for i in range(600):
        for k, v in enumerate(values(i)):
            assert seen.get(v.decode()) == (i % 3, 2 * (i // 3) + k), (i, k)


def test_a_connection_stops_being_read_at_its_limit(cluster):
    restart(cluster, "--max-in-flight-requests-per-connection", 16)
    topic = "limited"
    create(cluster, topic, 2)
    now = int(time.time() * 1000)
    with K.Conn(kafka(cluster, 0), timeout=60) as conn:
        sends = [(i % 2, K.encode_batch([(now, b"k", v, []) for v in values(i)])) for i in range(64)]
        answers, windows = pipeline(cluster, conn, topic, sends)
    assert [(a["partition"], a["error"]) for a in answers] == [(p, 0) for p, _ in sends]
    for p in range(2):
        assert [a["base_offset"] for a in answers if a["partition"] == p] == list(range(0, 64, 2)), p
    # 16 requests read, then none until those are answered: a window each, at least.
    print("64 pipelined requests, 16 in flight: %d windows" % windows)
    assert windows >= 4, windows


def test_a_connection_stops_being_read_at_its_bytes_limit(cluster):
    restart(cluster, "--max-in-flight-bytes-per-connection", 1 << 20)
    topic = "limited-bytes"
    create(cluster, topic, 1)
    now = int(time.time() * 1000)
    # Twelve requests of 300 KB: the fourth takes the connection past 1 MiB in flight, and
    # the broker reads no more until those are answered (below half of it).
    big = [bytes([65 + i]) * 300_000 for i in range(12)]
    with K.Conn(kafka(cluster, 0), timeout=60) as conn:
        sends = [(0, K.encode_batch([(now, b"k", v, [])])) for v in big]
        answers, windows = pipeline(cluster, conn, topic, sends)
    assert [(a["error"], a["base_offset"]) for a in answers] == [(0, i) for i in range(12)]
    print("12 pipelined requests of 300 KB, 1 MiB in flight: %d windows" % windows)
    assert windows >= 3, windows
