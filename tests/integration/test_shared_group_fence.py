"""Shared mode: a group's old coordinator cannot overwrite what its new one committed
(docs/shared-mode.md#fencing-group-writes). Three brokers of scripts/cluster over Debian's
PostgreSQL and s3proxy; broker 2 is killed first, so a group placed on broker 2 among all
three is coordinated by broker 0 until broker 2 starts again.

An OffsetCommit that broker 0 accepted waits in its offset writer (behind a commit held
by a row lock taken in the database by the test) while broker 2 starts and takes the
group over, and a real client commits through broker 2. When broker 0's write reaches the
database it is refused (NOT_COORDINATOR to its client), and the new coordinator's offset
stays, as a librdkafka consumer and the catalog read back.

TxnOffsetCommit is fenced the same way: a librdkafka transactional producer's offsets
sent to a broker whose group's epoch row another broker took are refused NOT_COORDINATOR,
the client sends them again and they commit with the transaction; and a
consume-transform-produce loop whose group's coordinator is killed and started again
(the group moves away and back) ends with every record in the output once and the
committed offset at the end.
"""

import threading
import time

import psycopg2
import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kproto as K
from cluster_helpers import (catalog, cluster_cmd, consume_all, kafka, running_cluster, state, wait_for,
                             wait_topic_known)

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


def place(group, brokers, kind="g"):
    """The broker placement gives group (or with kind "t", transactional id) among
    `brokers` (src/shared/placement.h: rendezvous hashing, FNV-1a 64 of "g/<group>" mixed
    with each id by SplitMix64's finalizer); the test checks it against FindCoordinator."""
    key = fnv1a(kind + "/" + group)
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


def catalog_write(d, sql, params):
    conn = psycopg2.connect(state(d)["postgres"])
    try:
        with conn, conn.cursor() as cur:
            cur.execute(sql, params)
    finally:
        conn.close()


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


def test_a_txn_offset_commit_at_a_coordinator_whose_group_was_taken_is_refused(cluster):
    """Kafka's group coordinator validates a TxnOffsetCommit (KIP-447) and writes it only
    while it leads the group's partition; here the write into the transaction's record
    checks the group's coordinator epoch. The test moves the epoch row on as another
    broker's take does, while broker 0 still believes it coordinates the group: the
    TxnOffsetCommit of a librdkafka transactional producer is refused NOT_COORDINATOR, the
    client asks again, broker 0 takes the group back from the database and the offsets
    commit with the transaction, once."""
    d = cluster
    topic = "fenced-txn"
    group = next("txn-fence-%d" % i for i in range(200) if place("txn-fence-%d" % i, [0, 1, 2]) == 0)
    admin = AdminClient({"bootstrap.servers": kafka(d, 0)})
    admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30)[topic].result(timeout=30)
    wait_topic_known(d, topic)
    for b in (0, 1, 2):
        wait_for(lambda: broker_ids(kafka(d, b)) == [0, 1, 2], timeout=30,
                 what="broker %d to list the three brokers" % b)
    with K.Conn(kafka(d, 1)) as conn:
        wait_for(lambda: coordinator(conn, group) == 0, timeout=10, what="group placed on broker 0")
    member = Consumer({"bootstrap.servers": kafka(d, 1), "group.id": group,
                       "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    p = Producer({"bootstrap.servers": kafka(d, 1), "transactional.id": "txn-fence",
                  "transaction.timeout.ms": 60000})
    try:
        member.subscribe([topic])
        wait_for(lambda: member.poll(0.2) is None and member.assignment() != [], timeout=30,
                 what="the member to be assigned the partition")
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(topic, b"out")
        assert p.flush(30) == 0
        (epoch,), = catalog(d, "SELECT epoch FROM sluice_group_coordinators WHERE group_id = %s "
                               "AND broker_id = 0", (group,))
        # Another broker's take: the epoch goes on and names broker 1.
        catalog_write(d, "UPDATE sluice_group_coordinators SET broker_id = 1, epoch = epoch + 1 "
                         "WHERE group_id = %s", (group,))
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 7)],
                                      member.consumer_group_metadata(), 30)
        p.commit_transaction(30)
    finally:
        member.close()
    # Broker 0's TxnOffsetCommit found the epoch moved on, so it took the group back (a
    # write made without the check would have left the row at broker 1).
    assert catalog(d, "SELECT broker_id, epoch FROM sluice_group_coordinators "
                      "WHERE group_id = %s", (group,)) == [(0, epoch + 2)]
    assert catalog(d, "SELECT committed_offset FROM sluice_group_offsets WHERE group_id = %s",
                   (group,)) == [(7,)]
    assert catalog(d, "SELECT count(*) FROM sluice_txn_offsets WHERE transactional_id = %s",
                   ("txn-fence",)) == [(0,)]
    reader = Consumer({"bootstrap.servers": kafka(d, 2), "group.id": group,
                       "enable.auto.commit": False})
    try:
        got = reader.committed([TopicPartition(topic, 0)], timeout=15)
        assert [(tp.partition, tp.offset) for tp in got] == [(0, 7)]
    finally:
        reader.close()


def test_consume_transform_produce_across_coordinator_moves(cluster):
    """A librdkafka consume-transform-produce loop (read_committed consumer, transactional
    producer sending its positions with send_offsets_to_transaction) while its group's
    coordinator is killed and started again, so the group moves to another broker and
    back: every input record is in the output once, and the committed offset is the end
    (no transaction's offsets lost or committed twice)."""
    d = cluster
    src, dst, total = "eos-in", "eos-out", 300
    # Coordinated by broker 2 among three, by another broker while 2 is down; the
    # transactional id stays on broker 0 (its coordinator is not the one killed).
    group = next("eos-%d" % i for i in range(200)
                 if place("eos-%d" % i, [0, 1, 2]) == 2)
    tid = next("eos-txn-%d" % i for i in range(200)
               if place("eos-txn-%d" % i, [0, 1, 2], "t") == 0 and place("eos-txn-%d" % i, [0, 1], "t") == 0)
    admin = AdminClient({"bootstrap.servers": kafka(d, 0)})
    for f in admin.create_topics([NewTopic(t, 1, 1) for t in (src, dst)], operation_timeout=30).values():
        f.result(timeout=30)
    wait_topic_known(d, src)
    wait_topic_known(d, dst)
    p = Producer({"bootstrap.servers": kafka(d, 0), "enable.idempotence": True})
    for i in range(total):
        p.produce(src, ("in-%d" % i).encode())
    assert p.flush(30) == 0
    (epoch_before,), = catalog(d, "SELECT COALESCE(MAX(epoch), 0) FROM sluice_group_coordinators "
                                  "WHERE group_id = %s", (group,))

    c = Consumer({"bootstrap.servers": kafka(d, 0), "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                  "session.timeout.ms": 30000})
    out = Producer({"bootstrap.servers": kafka(d, 0), "transactional.id": tid,
                    "transaction.timeout.ms": 60000})
    out.init_transactions(30)
    c.subscribe([src])
    moves = []

    def move():
        cluster_cmd("kill", d, 2)
        wait_for(lambda: broker_ids(kafka(d, 0)) == [0, 1], timeout=30, what="broker 2's lease to pass")
        moves.append("away")
        time.sleep(1)
        cluster_cmd("start", d, 2)
        moves.append("back")
    mover = threading.Thread(target=move)
    done, txns, aborted, rewind = 0, 0, 0, False
    deadline = time.monotonic() + 120
    try:
        while (done < total or mover.is_alive()) and time.monotonic() < deadline:
            if rewind:
                # Back to what the group committed: the aborted batch is processed again.
                try:
                    got = c.committed([TopicPartition(src, 0)], timeout=10)[0].offset
                except KafkaException:
                    continue
                c.seek(TopicPartition(src, 0, max(got, 0)))
                rewind = False
            msgs = [m for m in c.consume(5, 1.0) if m.error() is None]
            if not msgs:
                continue
            try:
                out.begin_transaction()
                for m in msgs:
                    out.produce(dst, m.value().replace(b"in-", b"out-"))
                positions = [TopicPartition(src, 0, msgs[-1].offset() + 1)]
                out.send_offsets_to_transaction(positions, c.consumer_group_metadata(), 30)
                out.commit_transaction(30)
                done = msgs[-1].offset() + 1
                txns += 1
            except KafkaException as e:
                if not e.args[0].txn_requires_abort():
                    raise
                out.abort_transaction(30)
                aborted += 1
                rewind = True
            if txns >= 2 and not mover.ident:
                mover.start()
            time.sleep(0.2)  # spread the transactions over the moves
    finally:
        c.close()
        if mover.ident:
            mover.join(120)
    print("%d transactions committed, %d aborted; moves %s" % (txns, aborted, moves))
    assert moves == ["away", "back"]
    assert done == total
    assert catalog(d, "SELECT committed_offset FROM sluice_group_offsets WHERE group_id = %s",
                   (group,)) == [(total,)]
    assert catalog(d, "SELECT count(*) FROM sluice_txn_offsets WHERE transactional_id = %s",
                   (tid,)) == [(0,)]
    (epoch_after,), = catalog(d, "SELECT epoch FROM sluice_group_coordinators WHERE group_id = %s",
                              (group,))
    assert epoch_after >= epoch_before + 2  # taken by another broker, then by broker 2 again
    seen, dups = consume_all(kafka(d, 1), dst, 1, total)
    assert not dups, dups[:5]
    assert sorted(seen) == sorted("out-%d" % i for i in range(total))
