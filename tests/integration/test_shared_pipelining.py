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

import threading
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


IN_FLIGHT = "sluice_kafka_in_flight_request_bytes"


def test_requests_in_flight_are_bounded_across_connections(cluster):
    """--max-in-flight-bytes: four connections pipeline produce requests of 300 KB, 9 MB
    each, whose answers wait for a 300 ms window, against a bound of 4 MiB for all of
    them. The broker stops reading them near the bound (WARN line, stops counted) and reads
    on as windows commit: every request is answered without an error, in order, every
    acknowledged record is in the topic, the bytes held never passed the bound plus one
    request per connection, and a fifth connection producing small records one at a time
    is answered all along."""
    bound = 4 << 20
    log = cluster / "broker-0.log"
    restart(cluster, "--max-in-flight-bytes", bound)
    log_from = log.stat().st_size
    topic, small_topic = "bounded", "bounded-small"
    greedy, requests, size = 4, 30, 300_000
    create(cluster, topic, greedy)
    create(cluster, small_topic, 1)
    now = int(time.time() * 1000)

    def value(g, i):
        return (b"g%d-r%d-" % (g, i)).ljust(size, b"x")

    answers, failures = {}, []

    def pipeline_one(g):
        try:
            with K.Conn(kafka(cluster, 0), timeout=120) as conn:
                # Every request sent before any answer is read: the sends block while the
                # broker does not read.
                corrs = [send_produce(conn, topic, g, K.encode_batch([(now, b"k", value(g, i), [])]))
                         for i in range(requests)]
                answers[g] = [produce_answer(conn, c, topic) for c in corrs]
        except Exception as e:  # reported by the main thread
            failures.append((g, repr(e)))

    threads = [threading.Thread(target=pipeline_one, args=(g,)) for g in range(greedy)]
    started = time.monotonic()
    for t in threads:
        t.start()
    small, latencies, held = [], [], []
    with K.Conn(kafka(cluster, 0), timeout=60) as conn:
        while any(t.is_alive() for t in threads):
            v = b"small-%d" % len(small)
            t0 = time.monotonic()
            a = produce_answer(conn, send_produce(conn, small_topic, 0, K.encode_batch([(now, b"s", v, [])])),
                               small_topic)
            latencies.append(time.monotonic() - t0)
            small.append((v, a))
            held.append(broker_metrics(cluster, 0).get(IN_FLIGHT, -1.0))
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    assert not failures, failures
    m = broker_metrics(cluster, 0)
    print("4 x %d requests of 300 KB, bound 4 MiB: %.1f s; held at most %d bytes, %d stops; "
          "small client: %d answers, slowest %.2f s; samples %r"
          % (requests, elapsed, m[IN_FLIGHT + "_max"], m["sluice_kafka_in_flight_stops_total"],
             len(small), max(latencies), held))

    for g in range(greedy):
        assert [(a["partition"], a["error"], a["base_offset"]) for a in answers[g]] == \
            [(g, 0, i) for i in range(requests)], g
    # What was held: the bound plus one request per connection (the four, the small one),
    # at most; and the bound was reached (more than half of it, where connections over
    # their share stop), not just approached.
    request = size + 1024
    assert m[IN_FLIGHT + "_max"] <= bound + greedy * request + 1024, m[IN_FLIGHT + "_max"]
    assert m[IN_FLIGHT + "_max"] > bound / 2, m[IN_FLIGHT + "_max"]
    assert m["sluice_kafka_in_flight_stops_total"] > 0
    assert all(0 <= h <= bound + greedy * request + 1024 for h in held), held
    assert m[IN_FLIGHT] == 0  # every answer out, nothing left counted
    # The small client was answered meanwhile, a window or two per request.
    assert len(small) >= 3, small
    assert all(a["error"] == 0 for _, a in small), small
    assert [a["base_offset"] for _, a in small] == list(range(len(small)))
    assert max(latencies) < 10, latencies
    # The WARN line, at most once per 10 s.
    warns = log.read_bytes()[log_from:].decode(errors="replace").count("in-flight request bound reached")
    assert 1 <= warns <= 1 + int(elapsed // 10), warns

    seen, dups = consume_all(kafka(cluster, 0), topic, greedy, greedy * requests)
    assert not dups
    for g in range(greedy):
        for i in range(requests):
            assert seen.get(value(g, i).decode()) == (g, i), (g, i)
    seen, dups = consume_all(kafka(cluster, 0), small_topic, 1, len(small))
    assert not dups
    assert {v.decode(): (0, a["base_offset"]) for v, a in small} == seen
