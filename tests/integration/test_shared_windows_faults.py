"""Shared mode's windows in flight when the object store fails (docs/shared-mode.md#windows-in-flight):
one broker of scripts/cluster with --shared-windows-in-flight 3, its object store (s3proxy)
behind a fault proxy that holds every data object's PUT 0.3 s (as a remote store answers
later, so three windows are in flight at once) and answers one chosen window's PUTs with
503 SlowDown until the broker's retry deadline gives up on it.

An idempotent producer (InitProducerId, then Produce v3 requests, acks=all, pipelined on
one connection as Kafka clients send them, one batch each, 40 ms apart so that they land
in consecutive windows) sends six batches of one partition: the first one's window fails
(KAFKA_STORAGE_ERROR), and the five behind it, some already uploaded, are cancelled with
the same retriable error rather than committed after a gap (OUT_OF_ORDER_SEQUENCE_NUMBER)
or ahead of it. Sent again in order, all six are committed and the windows after recover.
Read back by librdkafka's consumer: every record once, at contiguous offsets, in the order
produced. The broker's /metrics count the failed window and the cancelled appends.
"""

import os
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import idempotence_helpers as I
import kproto as K
import s3_helpers as S3
from cluster_helpers import (broker_metrics, cluster_cmd, consume_all, kafka, running_cluster, state,
                             wait_topic_known)

TOPIC = "windows"
RETRY_DEADLINE_MS = 1000  # a failing PUT gives up after about three 0.3 s attempts


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("windows"), "--brokers", 1, "--fast-s3")


@pytest.fixture(scope="module")
def proxy(cluster):
    proxy = S3.FaultProxy(state(cluster)["services"]["s3"]["port"])
    env = dict(os.environ, SLUICE_S3_RETRY_DEADLINE_MS=str(RETRY_DEADLINE_MS))
    try:
        cluster_cmd("stop", cluster, 0)
        cluster_cmd("start", cluster, 0, "--", "--s3-endpoint", proxy.endpoint,
                    "--shared-windows-in-flight", "3", "--produce-window-ms", "5", env=env)
        yield proxy
    finally:
        proxy.close()


def window_seq(path):
    """The window number in a produce object's key (`.../data/BROKER/UNIX_MS-SEQ-RANDOM`)."""
    parts = path.rsplit("/", 1)[-1].split("-")
    return int(parts[1]) if "/data/" in path and len(parts) == 3 and parts[1].isdigit() else None


def series(metrics, name):
    return metrics.get(name, 0.0)


KAFKA_STORAGE_ERROR = 56


def send_produce(conn, pid, seq, values):
    batch = I.batch(pid, 0, seq, values, int(time.time() * 1000))
    body = (K.nullable_string(None) + K.i16(-1) + K.i32(30000) + K.i32(1) + K.string(TOPIC)
            + K.i32(1) + K.i32(0) + K.kbytes(batch))
    return conn.send_request(K.PRODUCE, 3, body)


def produce_answer(conn, corr):
    r = conn.recv_response(corr, timeout=30)
    topics = r.array(lambda x: (x.string(), x.array(
        lambda y: dict(partition=y.i32(), error=y.i16(), base_offset=y.i64(), log_append_time=y.i64()))))
    return topics[0][1][0]


def test_a_failed_window_cancels_the_appends_behind_it(cluster, proxy):
    admin = AdminClient({"bootstrap.servers": kafka(cluster, 0)})
    admin.create_topics([NewTopic(TOPIC, 1, 1)], operation_timeout=30)[TOPIC].result(timeout=30)
    wait_topic_known(cluster, TOPIC)
    proxy.slow_match, proxy.slow_delay = "/data/", 0.3
    batches = [[("v-%d-%d" % (b, i)).encode() for i in range(5)] for b in range(7)]
    with K.Conn(kafka(cluster, 0), timeout=30) as conn:
        pid = I.init_producer_id_v1(conn)["producer_id"]
        # The first batch, through a window that commits: its number tells the next one's.
        assert produce_answer(conn, send_produce(conn, pid, 0, batches[0])) == {
            "partition": 0, "error": 0, "base_offset": 0, "log_append_time": -1}
        last = max(s for s in (window_seq(p) for m, p in list(proxy.slowed) if m == "PUT") if s is not None)
        before = broker_metrics(cluster, 0)
        proxy.fail_match = "-%d-" % (last + 1)
        # Six batches pipelined into consecutive windows (a window closes 5 ms after its
        # first append; three are in flight, each PUT held 0.3 s, the first refused).
        corrs = []
        for b in range(1, 7):
            corrs.append(send_produce(conn, pid, 5 * b, batches[b]))
            time.sleep(0.04)
        answers = [produce_answer(conn, c) for c in corrs]
        middle = broker_metrics(cluster, 0)
        # The failed window's batch and every batch behind it: the retriable error, nothing
        # committed out of order.
        assert [a["error"] for a in answers] == [KAFKA_STORAGE_ERROR] * 6, answers
        # Sent again (after the failure was known: not cancelled), in order: committed.
        corrs = [send_produce(conn, pid, 5 * b, batches[b]) for b in range(1, 7)]
        again = [produce_answer(conn, c) for c in corrs]
        assert [(a["error"], a["base_offset"]) for a in again] == [(0, 5 * b) for b in range(1, 7)], again
    proxy.slow_match = proxy.fail_match = None
    after = broker_metrics(cluster, 0)

    def delta(m, name):
        return series(m, name) - series(before, name)
    refused = [p for m, p in proxy.slowed if m == "PUT" and window_seq(p) == last + 1]
    print("window %d: %d PUTs refused; windows failed %d, committed %d, appends cancelled %d" % (
        last + 1, len(refused), delta(middle, 'sluice_shared_windows_total{outcome="failed"}'),
        delta(middle, 'sluice_shared_windows_total{outcome="committed"}'),
        delta(middle, "sluice_shared_window_appends_cancelled_total")))
    assert len(refused) >= 2  # tried again, then given up at the retry deadline
    assert delta(after, 'sluice_shared_windows_total{outcome="failed"}') == 1
    # The five behind it were cancelled in the windows they waited in (uploaded, or still
    # gathering while three were in flight: those that waited for room share one).
    assert delta(middle, "sluice_shared_window_appends_cancelled_total") == 5
    assert 1 <= delta(middle, 'sluice_shared_windows_total{outcome="committed"}') <= 5
    # The six sent again, committed by the windows after (recovered).
    assert delta(after, 'sluice_shared_windows_total{outcome="committed"}') > delta(
        middle, 'sluice_shared_windows_total{outcome="committed"}')
    assert series(after, "sluice_shared_windows_in_flight") == 0
    assert delta(after, "sluice_shared_window_seconds_count") == (
        delta(after, 'sluice_shared_windows_total{outcome="failed"}')
        + delta(after, 'sluice_shared_windows_total{outcome="committed"}'))

    # Every record once, at contiguous offsets, in the order produced.
    want = [v.decode() for b in batches for v in b]
    seen, dups = consume_all(kafka(cluster, 0), TOPIC, 1, len(want), timeout=60)
    assert not dups, dups[:5]
    assert sorted(seen, key=lambda v: seen[v][1]) == want
    assert sorted(off for _, off in seen.values()) == list(range(len(want)))
