"""Shared mode: a group's old coordinator cannot overwrite what its new one committed
(docs/shared-mode.md#fencing-group-writes). Three brokers of scripts/cluster over Debian's
PostgreSQL and s3proxy; broker 2 is killed first, so a group placed on broker 2 among all
three is coordinated by broker 0 until broker 2 starts again.

An OffsetCommit that broker 0 accepted waits in its offset writer (behind a commit held
by a row lock taken in the database by the test) while broker 2 starts and takes the
group over, and a real client commits through broker 2. When broker 0's write reaches the
database it is refused (NOT_COORDINATOR to its client), and the new coordinator's offset
stays, as a librdkafka consumer and the catalog read back.
"""

import time

import psycopg2
import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kproto as K
from cluster_helpers import catalog, cluster_cmd, kafka, running_cluster, state, wait_for, wait_topic_known

LEASE_MS = 3000
TOPIC = "fenced"


def fnv1a(s):
    h = 0xcbf29ce484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001b3) & (2**64 - 1)
    return h


def mix(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & (2**64 - 1)
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & (2**64 - 1)
    return z ^ (z >> 31)


def place(group, brokers):
    """The broker placement gives group among `brokers` (src/shared/placement.h: rendezvous
    hashing, FNV-1a 64 of "g/<group>" mixed with each id by SplitMix64's finalizer); the
    test checks it against FindCoordinator."""
    key = fnv1a("g/" + group)
    weight = lambda b: mix(key ^ mix((b + 0x9e3779b97f4a7c15) & (2**64 - 1)))
    return max(sorted(brokers), key=weight)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("cluster"), "--brokers", 3, "--lease-ms",
                               LEASE_MS, "--fast-s3")


def coordinator(conn, group):
    return K.find_coordinator(conn, 1, [group])[0]["node_id"]


def broker_ids(bootstrap):
    return sorted(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).brokers)


def waiting_on_lock(d):
    return catalog(d, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                      "AND query LIKE '%sluice_group_offsets%'")[0][0] > 0


def test_a_commit_queued_at_the_old_coordinator_is_refused(cluster):
    d = cluster
    groups = ["fence-%d" % i for i in range(200)]
    # Moves from broker 0 to broker 2 when 2 joins; the blocker stays on broker 0.
    group = next(g for g in groups if place(g, [0, 1]) == 0 and place(g, [0, 1, 2]) == 2)
    blocker = next(g for g in groups if place(g, [0, 1]) == 0 and place(g, [0, 1, 2]) == 0)
    admin = AdminClient({"bootstrap.servers": kafka(d, 0)})
    admin.create_topics([NewTopic(TOPIC, 1, 1)], operation_timeout=30)[TOPIC].result(timeout=30)
    wait_topic_known(d, TOPIC)
    cluster_cmd("kill", d, 2)
    wait_for(lambda: broker_ids(kafka(d, 0)) == [0, 1] and broker_ids(kafka(d, 1)) == [0, 1],
             timeout=30, what="broker 2's lease to pass")
    with K.Conn(kafka(d, 0)) as conn:
        # Placement as the brokers compute it.
        wait_for(lambda: coordinator(conn, group) == 0 and coordinator(conn, blocker) == 0,
                 timeout=10, what="both groups placed on broker 0")
        wait_for(lambda: K.offset_commit(conn, 2, group, {TOPIC: [(0, 10, None)]}) == {(TOPIC, 0): 0},
                 timeout=10, what="broker 0 to serve the group")
        assert K.offset_commit(conn, 2, blocker, {TOPIC: [(0, 1, None)]}) == {(TOPIC, 0): 0}

    # Hold the blocker's offset row: broker 0's next write waits in the database, and the
    # commits it accepts meanwhile wait in its offset writer.
    lock = psycopg2.connect(state(d)["postgres"])
    lock.cursor().execute("SELECT 1 FROM sluice_group_offsets WHERE group_id = %s FOR UPDATE",
                          (blocker,))
    held, queued = K.Conn(kafka(d, 0), timeout=60), K.Conn(kafka(d, 0), timeout=60)
    try:
        blocked = K.send_offset_commit(held, 2, blocker, {TOPIC: [(0, 2, None)]})
        wait_for(lambda: waiting_on_lock(d), timeout=10, what="broker 0's write to wait on the lock")
        stale = K.send_offset_commit(queued, 2, group, {TOPIC: [(0, 50, None)]})
        time.sleep(0.5)  # read by broker 0 and queued behind the blocked write

        # Broker 2 joins; the group is placed on it, which takes it over and serves it.
        cluster_cmd("start", d, 2)
        with K.Conn(kafka(d, 2)) as conn:
            wait_for(lambda: coordinator(conn, group) == 2, timeout=30, what="broker 2 to coordinate")
            wait_for(lambda: K.offset_fetch_one(conn, 5, group, {TOPIC: [0]})[0] == 0,
                     timeout=30, what="broker 2 to serve the group")
            assert K.offset_fetch_one(conn, 5, group, {TOPIC: [0]})[1][(TOPIC, 0)][0] == 10
        # A real client commits through the new coordinator.
        c = Consumer({"bootstrap.servers": kafka(d, 1), "group.id": group,
                      "enable.auto.commit": False})
        try:
            committed = c.commit(offsets=[TopicPartition(TOPIC, 0, 100)], asynchronous=False)
            assert [(tp.partition, tp.offset, tp.error) for tp in committed] == [(0, 100, None)]
        finally:
            c.close()
        assert catalog(d, "SELECT broker_id FROM sluice_group_coordinators WHERE group_id = %s",
                       (group,)) == [(2,)]
    finally:
        lock.rollback()
        lock.close()
    try:
        # The blocked write ends; the queued one reaches the database after the take.
        assert blocked.result(30) == {(TOPIC, 0): 0}
        assert stale.result(30) == {(TOPIC, 0): 16}  # NOT_COORDINATOR
    finally:
        held.close()
        queued.close()

    # What the new coordinator committed stays.
    assert catalog(d, "SELECT committed_offset FROM sluice_group_offsets WHERE group_id = %s",
                   (group,)) == [(100,)]
    c = Consumer({"bootstrap.servers": kafka(d, 0), "group.id": group, "enable.auto.commit": False})
    try:
        got = c.committed([TopicPartition(TOPIC, 0)], timeout=15)
        assert [(tp.partition, tp.offset) for tp in got] == [(0, 100)]
    finally:
        c.close()
    # Broker 0 still serves the group it kept.
    with K.Conn(kafka(d, 0)) as conn:
        assert K.offset_fetch_one(conn, 5, blocker, {TOPIC: [0]})[1][(TOPIC, 0)][0] == 2
