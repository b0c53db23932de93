"""Kafka transactions in shared mode (docs/shared-mode.md#transactions): two brokers of
scripts/cluster over one PostgreSQL and one S3 server, driven by librdkafka
(confluent-kafka) and raw requests.

- a transactional producer bootstrapped at broker 0 commits and aborts; a read_committed
  consumer bootstrapped at broker 1 sees exactly the committed records, each once, and a
  read_uncommitted one sees them all; ListOffsets at read_committed stops at the first
  offset of a transaction still open, as the Fetch answers' last stable offset does;
- DescribeProducers (from either broker), DescribeTransactions and ListTransactions (at
  the id's coordinator) answer from the shared state;
- offsets sent to a transaction become the group's committed offsets at its commit,
  whichever broker coordinates the group;
- the Java client (kafka-clients 4.3, tests/jvm Transactional) commits and aborts on
  transaction version 2 (each EndTxn bumps the epoch);
- kill -9 of the coordinator broker with a transaction open: a new producer with the
  same transactional id (bootstrapped at the survivor) is given the next epoch there,
  the open transaction is aborted and read_committed consumers pass it;
- races between brokers on one transactional id's record (its writes are conditional on
  the version read): a transaction version 2 producer's Produce requests to both brokers
  at once each add their partition (every partition gets its marker), and a zombie's
  Produce requests through one broker racing its successor's InitProducerId at the
  coordinator leave the successor's state, fence the zombie and commit nothing of it.
- DeleteRecords past an aborted transaction forgets it (its sluice_txn_aborted row goes
  with the log start), while read_committed consumers from the new log start still skip
  the aborted transaction above it.
"""

import re
import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import idempotence_helpers as I
import java_client_helpers as JC
import kproto as K
import kproto_flex as F
from cluster_helpers import catalog, cluster_cmd, kafka, running_cluster, wait_for, wait_topic_known

LEASE_MS = 3000
PARTS = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    d = tmp_path_factory.mktemp("cluster")
    yield from running_cluster(d, "--brokers", 2, "--lease-ms", LEASE_MS)


def create_topic(d, name, partitions=PARTS):
    admin = AdminClient({"bootstrap.servers": kafka(d, 0)})
    admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=30)[name].result(timeout=30)
    wait_topic_known(d, name)


def txn_producer(bootstrap, tid):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5,
                  "transaction.timeout.ms": 60000})
    p.init_transactions(60)
    return p


def send(p, topic, values):
    for i, v in enumerate(values):
        p.produce(topic, v.encode(), partition=i % PARTS)
    assert p.flush(30) == 0


def read(bootstrap, topic, isolation, expect, timeout=30, settle=1.0, partitions=PARTS, start=0):
    """Every record from offset `start` until `expect` came (and `settle` s more): a list of
    values."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader-%f" % time.time(),
                  "enable.auto.commit": False, "isolation.level": isolation})
    c.assign([TopicPartition(topic, p, start) for p in range(partitions)])
    got = []
    deadline = time.monotonic() + timeout
    quiet_until = None
    while time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value().decode())
        if len(got) >= expect:
            quiet_until = quiet_until or time.monotonic() + settle
            if time.monotonic() >= quiet_until:
                break
    c.close()
    return got


def txn_coordinator(d, tid):
    with K.Conn(kafka(d, 0)) as conn:
        (c,) = K.find_coordinator(conn, 4, [tid], key_type=1)
    assert c["error"] == 0, c
    return c["node_id"]


def test_commit_and_abort_seen_read_committed_on_the_other_broker(cluster):
    create_topic(cluster, "stx")
    p = txn_producer(kafka(cluster, 0), "stx-1")
    committed, aborted = [], []
    for t in range(4):
        vals = ["t%d-%d" % (t, i) for i in range(12)]
        p.begin_transaction()
        send(p, "stx", vals)
        if t == 2:
            p.abort_transaction(30)
            aborted += vals
        else:
            p.commit_transaction(30)
            committed += vals
    got = read(kafka(cluster, 1), "stx", "read_committed", len(committed))
    assert sorted(got) == sorted(committed)  # each once, no aborted one
    every = read(kafka(cluster, 1), "stx", "read_uncommitted", len(committed) + len(aborted))
    assert sorted(every) == sorted(committed + aborted)

    # A transaction left open: read_committed stops at its first offset.
    with K.Conn(kafka(cluster, 1)) as conn:
        hw = F.list_offsets(conn, "stx", [(q, -1) for q in range(PARTS)], isolation_level=0)
    p.begin_transaction()
    send(p, "stx", ["open-%d" % i for i in range(PARTS)])
    with K.Conn(kafka(cluster, 1)) as conn:
        lso = F.list_offsets(conn, "stx", [(q, -1) for q in range(PARTS)], isolation_level=1)
        now = F.list_offsets(conn, "stx", [(q, -1) for q in range(PARTS)], isolation_level=0)
        producers = I.describe_producers(conn, "stx", list(range(PARTS)))
    before = {x["partition_index"]: x["offset"] for x in hw["topics"][0]["partitions"]}
    stable = {x["partition_index"]: x["offset"] for x in lso["topics"][0]["partitions"]}
    latest = {x["partition_index"]: x["offset"] for x in now["topics"][0]["partitions"]}
    assert stable == before and all(latest[q] == before[q] + 1 for q in range(PARTS)), (before, stable, latest)
    for q in range(PARTS):
        (prod,) = producers[q]["producers"]
        assert prod["txn_start"] == before[q], producers  # the open transaction's first offset
    assert "open-0" not in read(kafka(cluster, 1), "stx", "read_committed", len(committed), settle=0.5)

    # The coordinator describes and lists it.
    coord = txn_coordinator(cluster, "stx-1")
    with K.Conn(kafka(cluster, coord)) as conn:
        desc = I.describe_transactions(conn, ["stx-1"])["stx-1"]
        listed = I.list_transactions(conn)["txns"]
    assert desc["error"] == 0 and desc["state"] == "Ongoing", desc
    assert sorted(desc["partitions"]) == [("stx", q) for q in range(PARTS)]
    assert listed.get("stx-1") == (desc["producer_id"], "Ongoing"), listed
    with K.Conn(kafka(cluster, 1 - coord)) as conn:
        assert "stx-1" not in I.list_transactions(conn)["txns"]  # each broker lists its own
        assert I.describe_transactions(conn, ["stx-1"])["stx-1"]["error"] == 16  # NOT_COORDINATOR

    p.commit_transaction(30)
    got = read(kafka(cluster, 1), "stx", "read_committed", len(committed) + PARTS)
    assert sorted(got) == sorted(committed + ["open-%d" % i for i in range(PARTS)])


def test_offsets_sent_to_a_transaction_become_committed(cluster):
    create_topic(cluster, "stx-off")
    p = txn_producer(kafka(cluster, 1), "stx-off")
    c = Consumer({"bootstrap.servers": kafka(cluster, 0), "group.id": "stx-group"})
    meta = c.consumer_group_metadata()
    positions = [TopicPartition("stx-off", q, 10 + q) for q in range(PARTS)]
    p.begin_transaction()
    send(p, "stx-off", ["x"])
    p.send_offsets_to_transaction(positions, meta, 30)
    p.commit_transaction(30)
    for b in (0, 1):
        reader = Consumer({"bootstrap.servers": kafka(cluster, b), "group.id": "stx-group"})

        def committed():
            got = reader.committed([TopicPartition("stx-off", q) for q in range(PARTS)], timeout=10)
            return [t.offset for t in got] == [10 + q for q in range(PARTS)]
        wait_for(committed, timeout=15, what="transactional offsets seen through broker %d" % b)
        reader.close()
    c.close()


def test_aborted_transactions_below_the_log_start_are_forgotten(cluster):
    create_topic(cluster, "stx-prune", 1)
    p = txn_producer(kafka(cluster, 0), "stx-prune")
    values = {}
    for t, end in enumerate(("abort", "commit", "abort", "commit")):
        values[t] = ["%s%d-%d" % (end, t, i) for i in range(5)]
        p.begin_transaction()
        for v in values[t]:
            p.produce("stx-prune", v.encode(), partition=0)
        assert p.flush(30) == 0
        if end == "abort":
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
    (topic_id,) = catalog(cluster, "SELECT topic_id FROM sluice_topics WHERE topic_name = 'stx-prune'")[0]

    def aborted():
        return catalog(cluster, "SELECT first_offset, last_offset FROM sluice_txn_aborted WHERE topic_id = %s "
                       "ORDER BY 1", (topic_id,))
    (first, first_marker), (second, second_marker) = aborted()
    # DeleteRecords (through the other broker) to the first committed record, past the
    # first aborted transaction's marker.
    with K.Conn(kafka(cluster, 1)) as conn:
        assert K.delete_records(conn, 2, {"stx-prune": [(0, first_marker + 1)]}) == \
            {("stx-prune", 0): (first_marker + 1, 0)}
    assert aborted() == [(second, second_marker)]
    # Consumers from the log start (ListOffsets earliest): the aborted transaction above it
    # is still skipped at read_committed.
    want = values[1] + values[3]
    assert read(kafka(cluster, 1), "stx-prune", "read_committed", len(want), partitions=1,
                start=OFFSET_BEGINNING) == want
    assert read(kafka(cluster, 0), "stx-prune", "read_uncommitted", 15, partitions=1,
                start=OFFSET_BEGINNING) == values[1] + values[2] + values[3]


def test_java_client_on_transaction_version_2(cluster):
    create_topic(cluster, "stx-java", 1)
    out = JC.run("Transactional", kafka(cluster, 0), "commit-abort", "stx-java", "stx-java")
    want = ["c1-%d" % i for i in range(10)] + ["c2-%d" % i for i in range(10)]
    com = [x for x in JC.by_kind(out, "read") if x["isolation"] == "read_committed"][0]
    assert com["values"] == want, com
    assert read(kafka(cluster, 1), "stx-java", "read_committed", len(want), partitions=1) == want
    coord = txn_coordinator(cluster, "stx-java")
    with K.Conn(kafka(cluster, coord)) as conn:
        d = I.describe_transactions(conn, ["stx-java"])["stx-java"]
    # TV2: EndTxn v5 bumped the epoch at each of the three ends (TV1 would keep 0).
    assert d["state"] == "CompleteCommit" and d["epoch"] == 3, d


# Raw requests of transaction version 2 (Kafka's message schemas): Produce v12 adds the
# partition to the producer's transaction itself; EndTxn v5 bumps the epoch.
PRODUCE_V12 = 12
END_TXN = 26
END_TXN_REQ = [("transactional_id", "str"), ("producer_id", "i64"), ("producer_epoch", "i16"),
               ("committed", "bool")]
END_TXN_RESP = [("throttle_time_ms", "i32"), ("error_code", "i16"), ("producer_id", "i64"),
                ("producer_epoch", "i16")]
CONCURRENT_TRANSACTIONS, NOT_ENOUGH_REPLICAS = 51, 19
FENCED = (47, 90)  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED
RACE_PARTS = 8


def init_txn(d, broker, tid):
    """InitProducerId v4 for tid at broker, retried while the previous transaction ends."""
    deadline = time.monotonic() + 30
    with K.Conn(kafka(d, broker)) as conn:
        while True:
            r = F.init_producer_id(conn, transactional_id=tid)
            if r["error_code"] != CONCURRENT_TRANSACTIONS or time.monotonic() > deadline:
                assert r["error_code"] == 0, r
                return r["producer_id"], r["producer_epoch"]
            time.sleep(0.05)


def produce_txn(d, broker, tid, topic, partition, pid, epoch, value):
    """One transactional batch (sequence 0: each epoch starts there) by Produce v12; retried
    on the retriable answers; returns the error code."""
    records = I.batch(pid, epoch, 0, [value.encode()], int(time.time() * 1000), transactional=True)
    with K.Conn(kafka(d, broker)) as conn:
        for _ in range(20):
            r = F.call(conn, K.PRODUCE, PRODUCE_V12, F.PRODUCE_REQ, F.PRODUCE_RESP,
                       dict(transactional_id=tid, acks=-1, timeout_ms=10000,
                            topic_data=[dict(name=topic, partition_data=[dict(index=partition, records=records)])]))
            code = r["responses"][0]["partition_responses"][0]["error_code"]
            if code != NOT_ENOUGH_REPLICAS:
                return code
            time.sleep(0.05)
    return code


def end_txn(d, broker, tid, pid, epoch, commit=True):
    with K.Conn(kafka(d, broker)) as conn:
        return F.call(conn, END_TXN, 5, END_TXN_REQ, END_TXN_RESP,
                      dict(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit))


def in_parallel(calls):
    """Runs each call in its own thread, all released at once; their results in order."""
    out = [None] * len(calls)
    start = threading.Barrier(len(calls))

    def run(i, fn):
        start.wait()
        out[i] = fn()
    threads = [threading.Thread(target=run, args=(i, fn)) for i, fn in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def lost_races(d):
    """How many transaction-record writes the brokers found changed since their read."""
    return sum(len(re.findall(r"changed at another broker since version", log.read_text(errors="replace")))
               for log in d.glob("broker-*.log"))


def test_partitions_added_through_both_brokers_at_once_all_get_markers(cluster):
    topic, tid = "stx-race", "stx-race"
    create_topic(cluster, topic, RACE_PARTS)
    coord = txn_coordinator(cluster, tid)
    before = lost_races(cluster)
    pid, epoch = init_txn(cluster, coord, tid)
    want = []
    rounds = 6
    for r in range(rounds):
        vals = ["r%d-p%d" % (r, q) for q in range(RACE_PARTS)]
        codes = in_parallel([lambda q=q: produce_txn(cluster, q % 2, tid, topic, q, pid, epoch, vals[q])
                             for q in range(RACE_PARTS)])
        assert codes == [0] * RACE_PARTS, codes
        ended = end_txn(cluster, coord, tid, pid, epoch)
        assert ended["error_code"] == 0, ended
        pid, epoch = ended["producer_id"], ended["producer_epoch"]
        want += vals
    # Each partition's records committed: had an add been lost from the record, that
    # partition would have no COMMIT marker and its last stable offset would stay put.
    got = read(kafka(cluster, 1), topic, "read_committed", len(want), partitions=RACE_PARTS)
    assert sorted(got) == sorted(want)
    print("partitions added through both brokers at once: %d adds, %d writes found the record changed"
          % (rounds * RACE_PARTS, lost_races(cluster) - before))


def test_zombie_racing_its_successor_through_another_broker_is_fenced(cluster):
    topic, tid = "stx-zombie", "stx-zombie"
    create_topic(cluster, topic, RACE_PARTS)
    coord = txn_coordinator(cluster, tid)
    other = 1 - coord
    before = lost_races(cluster)
    want, fenced = [], 0
    rounds = 5
    for r in range(rounds):
        zpid, zepoch = init_txn(cluster, coord, tid)
        assert produce_txn(cluster, other, tid, topic, 0, zpid, zepoch, "zombie-%d-0" % r) == 0
        # The zombie adds partitions through the other broker while its successor's
        # InitProducerId at the coordinator aborts its transaction and fences it.
        zombie = [lambda q=q: produce_txn(cluster, other, tid, topic, q, zpid, zepoch, "zombie-%d-%d" % (r, q))
                  for q in range(1, RACE_PARTS)]
        *zcodes, (spid, sepoch) = in_parallel(zombie + [lambda: init_txn(cluster, coord, tid)])
        assert all(c == 0 or c in FENCED for c in zcodes), zcodes
        fenced += sum(1 for c in zcodes if c in FENCED)
        assert (spid, sepoch) != (zpid, zepoch)
        # The successor's state stands: its transaction commits, the zombie's end is fenced.
        vals = ["succ-%d-%d" % (r, q) for q in range(RACE_PARTS)]
        codes = in_parallel([lambda q=q: produce_txn(cluster, q % 2, tid, topic, q, spid, sepoch, vals[q])
                             for q in range(RACE_PARTS)])
        assert codes == [0] * RACE_PARTS, codes
        assert end_txn(cluster, coord, tid, zpid, zepoch)["error_code"] in FENCED
        ended = end_txn(cluster, coord, tid, spid, sepoch)
        assert ended["error_code"] == 0, ended
        want += vals
    got = read(kafka(cluster, 1), topic, "read_committed", len(want), partitions=RACE_PARTS)
    assert sorted(got) == sorted(want)  # no zombie record committed, every successor's one
    with K.Conn(kafka(cluster, coord)) as conn:
        d = I.describe_transactions(conn, [tid])[tid]
    assert d["error"] == 0 and d["state"] == "CompleteCommit" and d["epoch"] == ended["producer_epoch"], d
    print("zombie racing its successor: %d rounds, %d zombie adds fenced, %d writes found the record changed"
          % (rounds, fenced, lost_races(cluster) - before))


def test_coordinator_killed_with_a_transaction_open(cluster):
    create_topic(cluster, "stx-kill")
    tid = "stx-kill"
    coord = txn_coordinator(cluster, tid)
    survivor = 1 - coord
    p = txn_producer(kafka(cluster, survivor), tid)
    p.begin_transaction()
    send(p, "stx-kill", ["before-%d" % i for i in range(PARTS)])
    p.commit_transaction(30)
    p.begin_transaction()
    send(p, "stx-kill", ["lost-%d" % i for i in range(6)])  # in the log, never committed
    cluster_cmd("kill", cluster, coord)
    try:
        # The survivor takes the id once the coordinator's lease passed: the new instance's
        # InitProducerId aborts the open transaction and fences the old producer.
        p2 = txn_producer(kafka(cluster, survivor), tid)
        assert txn_coordinator_at(cluster, survivor, tid) == survivor
        with pytest.raises(KafkaException):
            p.commit_transaction(10)
        p2.begin_transaction()
        send(p2, "stx-kill", ["after-%d" % i for i in range(PARTS)])
        p2.commit_transaction(30)
        want = ["before-%d" % i for i in range(PARTS)] + ["after-%d" % i for i in range(PARTS)]
        got = read(kafka(cluster, survivor), "stx-kill", "read_committed", len(want))
        assert sorted(got) == sorted(want)
        with K.Conn(kafka(cluster, survivor)) as conn:
            d = I.describe_transactions(conn, [tid])[tid]
        assert d["error"] == 0 and d["state"] == "CompleteCommit", d
    finally:
        cluster_cmd("start", cluster, coord)


def txn_coordinator_at(d, broker, tid):
    with K.Conn(kafka(d, broker)) as conn:
        (c,) = K.find_coordinator(conn, 4, [tid], key_type=1)
    return c["node_id"]
