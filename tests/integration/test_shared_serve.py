"""Shared mode end to end (docs/shared-mode.md): three `sluice serve --shared-storage
--shared-catalog` brokers over Debian's PostgreSQL and s3proxy, started by
scripts/cluster, driven by librdkafka (confluent-kafka) and kafka-python.

- an idempotent acks=all producer bootstrapped at broker 0 and a consumer bootstrapped
  at broker 1 see the same records at the same offsets;
- Metadata lists the three live brokers and spreads partition leadership over them;
- a group commits through one broker and a consumer bootstrapped at another resumes there;
- group requests at a broker that does not coordinate the group answer NOT_COORDINATOR,
  and a group bootstrapped there reads every record once;
- kill -9 of a broker under acks=all load loses no acknowledged record and stores none
  twice; clients move to the living brokers; the killed broker rejoins with `start`;
- a broker killed and started again serves what it had read from its read cache's disk
  tier, sending no read to the object store;
- what shared mode does not serve yet is refused with an error code;
- an idempotent producer's sequence is checked as before across kill -9 and restart of
  the broker it wrote through: retries answered with their first offsets, gaps refused;
- DeleteRecords through one broker forgets the idempotent producers whose batches all lie
  below the new log start, for the sequence checks and DescribeProducers of every broker.
"""

import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import idempotence_helpers as I
import kproto as K
from cluster_helpers import (broker_metrics, catalog, cluster_cmd, consume_all, kafka, running_cluster,
                             wait_for, wait_topic_known)
from conftest import GROUP_DELAY_FLAG, TEST_GROUP_DELAY_MS

LEASE_MS = 3000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """--fast-s3: s3proxy starts in about half the time (the loads here are small); groups
    form after 300 ms, as the single-node brokers' of the suites do (conftest.py)."""
    yield from running_cluster(tmp_path_factory.mktemp("cluster"), "--brokers", 3, "--lease-ms", LEASE_MS,
                               "--fast-s3", "--", GROUP_DELAY_FLAG, TEST_GROUP_DELAY_MS)


def create_topic(bootstrap, name, partitions, d=None):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=30)
    futures[name].result(timeout=30)
    if d:
        wait_topic_known(d, name)


def topic_leaders(bootstrap, topic):
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return None
    return {p: t.partitions[p].leader for p in t.partitions}, sorted(md.brokers)


def produce(bootstrap, topic, values, partitions, **extra):
    """Idempotent acks=all; returns {value: (partition, offset)} of the acknowledged."""
    acked, errors = {}, []

    def done(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked[msg.value().decode()] = (msg.partition(), msg.offset())

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5, **extra})
    for i, v in enumerate(values):
        p.produce(topic, v.encode(), partition=i % partitions, on_delivery=done)
        p.poll(0)
    assert p.flush(60) == 0
    return acked, errors


def test_metadata_lists_live_brokers_and_spreads_leaders(cluster):
    b0 = kafka(cluster, 0)
    # Placement is rendezvous hashing of each partition over the live brokers: with 48
    # partitions the chance that one of 3 brokers leads none is 3 * (2/3)^48, about 1e-8
    # (with 12 it was 2%, and it happened).
    create_topic(b0, "spread", 48)
    # Each broker places over the live brokers it read last (every half second): right
    # after `scripts/cluster up` returns, a broker that has not read the last one's lease
    # yet places over two. Once each lists all three (the topic read from the shared
    # catalog too), every broker computes the same placement.
    def views():
        got = [topic_leaders(kafka(cluster, b), "spread") for b in (0, 1, 2)]
        return got if all(v is not None and v[1] == [0, 1, 2] for v in got) else None
    (leaders, _), *others = wait_for(views, what="every broker to list the three and the topic")
    assert set(leaders.values()) == {0, 1, 2}, leaders
    assert [o[0] for o in others] == [leaders, leaders]


def test_produce_on_one_broker_fetch_on_another(cluster):
    create_topic(kafka(cluster, 0), "handoff", 3, cluster)
    values = ["v-%04d" % i for i in range(300)]
    acked, errors = produce(kafka(cluster, 0), "handoff", values, 3)
    assert not errors and len(acked) == 300
    # Offsets per partition are 0..n-1, in the order produced.
    for part in range(3):
        offs = [acked[v][1] for v in values if acked[v][0] == part]
        assert offs == list(range(100)), (part, offs[:5])
    seen, dups = consume_all(kafka(cluster, 1), "handoff", 3, 300)
    assert not dups
    assert seen == acked


def test_kafka_python_reads_from_a_third_broker(cluster):
    from kafka import KafkaConsumer, TopicPartition as KTP
    create_topic(kafka(cluster, 1), "kp", 1, cluster)
    acked, _ = produce(kafka(cluster, 1), "kp", ["kp-%d" % i for i in range(50)], 1)
    c = KafkaConsumer(bootstrap_servers=kafka(cluster, 2), enable_auto_commit=False,
                      consumer_timeout_ms=15000)
    c.assign([KTP("kp", 0)])
    c.seek(KTP("kp", 0), 0)
    got = {}
    for m in c:
        got[m.value.decode()] = (m.partition, m.offset)
        if len(got) == 50:
            break
    c.close()
    assert got == acked


def test_group_offsets_resume_through_another_broker(cluster):
    create_topic(kafka(cluster, 0), "grouped", 2, cluster)
    acked, _ = produce(kafka(cluster, 0), "grouped", ["g-%03d" % i for i in range(100)], 2)
    c = Consumer({"bootstrap.servers": kafka(cluster, 0), "group.id": "resumers",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.subscribe(["grouped"])
    read = []
    deadline = time.monotonic() + 60
    while len(read) < 60 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            read.append(m)
    assert len(read) >= 60
    c.commit(asynchronous=False)
    committed = {tp.partition: tp.offset for tp in c.committed([TopicPartition("grouped", 0),
                                                                 TopicPartition("grouped", 1)], timeout=10)}
    c.close()
    # A new member bootstrapped at another broker sees the same committed offsets and
    # starts there.
    c2 = Consumer({"bootstrap.servers": kafka(cluster, 2), "group.id": "resumers",
                   "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    again = {tp.partition: tp.offset for tp in c2.committed([TopicPartition("grouped", 0),
                                                              TopicPartition("grouped", 1)], timeout=10)}
    assert again == committed
    # It reads on from the committed offset of each partition that has records left (the
    # first member may have read one partition to its end: nothing comes from that one).
    left = {part for part, off in committed.items()
            if off < sum(1 for p, _ in acked.values() if p == part)}
    assert left, (committed, len(acked))
    c2.subscribe(["grouped"])
    first = {}
    deadline = time.monotonic() + 60
    while not left <= set(first) and time.monotonic() < deadline:
        m = c2.poll(0.5)
        if m is not None and not m.error() and m.partition() not in first:
            first[m.partition()] = m.offset()
    c2.close()
    assert left <= set(first), (left, first, committed)
    for part, off in first.items():
        assert off == committed[part], (part, off, committed)


def test_group_requests_are_served_by_the_group_coordinator_only(cluster):
    """Issue 35: a group request at a broker that placement does not make the group's
    coordinator answers NOT_COORDINATOR (16), as Kafka does, and holds nothing of the
    group; clients look the coordinator up again, so a group bootstrapped there still
    reads every record once."""
    create_topic(kafka(cluster, 0), "coordinated", 2, cluster)
    with K.Conn(kafka(cluster, 0)) as conn:
        def coordinator(g):
            return K.find_coordinator(conn, 1, [g])[0]["node_id"]
        group = next(g for g in ("coordinated-%d" % i for i in range(64)) if coordinator(g) != 0)
        owner = coordinator(group)
        sub = [("range", K.consumer_subscription_v0(["coordinated"]))]
        assert K.join_group(conn, 5, group, "", "consumer", sub)["error"] == 16
        assert K.heartbeat(conn, 3, group, 1, "m-1") == 16
        assert K.offset_commit(conn, 2, group, {"coordinated": [(0, 0, None)]}) == {
            ("coordinated", 0): 16}
        assert K.offset_fetch_one(conn, 5, group, {"coordinated": [0]})[0] == 16
        assert K.offset_fetch_one(conn, 8, group, {"coordinated": [0]})[0] == 16
        assert [g["error"] for g in K.describe_groups(conn, 5, [group])] == [16]
    with K.Conn(kafka(cluster, owner)) as conn:
        assert K.offset_commit(conn, 2, group, {"coordinated": [(0, 0, None)]}) == {
            ("coordinated", 0): 0}
    # Two members bootstrapped at broker 0 share the partitions, then read what comes.
    members = [Consumer({"bootstrap.servers": kafka(cluster, 0), "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
               for _ in range(2)]
    try:
        for c in members:
            c.subscribe(["coordinated"])
        got = {}

        def read():
            for i, c in enumerate(members):
                m = c.poll(0.1)
                if m is not None and not m.error():
                    got.setdefault(m.value().decode(), []).append((i, m.partition()))
            return all(c.assignment() for c in members)

        wait_for(read, timeout=30, what="both members assigned")
        acked, errors = produce(kafka(cluster, 1), "coordinated",
                                ["k-%02d" % i for i in range(40)], 2)
        assert not errors and len(acked) == 40
        wait_for(lambda: read() and len(got) >= 40, timeout=30, what="every record")
        assert sorted(got) == sorted(acked)
        assert all(len(v) == 1 for v in got.values()), got
        # Each member read its own partitions.
        by_member = {i: {p for [(j, p)] in got.values() if j == i} for i in range(2)}
        assert by_member[0] and by_member[1] and not by_member[0] & by_member[1]
    finally:
        for c in members:
            c.close()


def test_kill_a_broker_under_acks_all_load(cluster):
    bootstrap = ",".join(kafka(cluster, i) for i in range(3))
    create_topic(kafka(cluster, 0), "durable", 6, cluster)
    acked, errors = {}, []
    stop = threading.Event()

    def done(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            acked[msg.value().decode()] = (msg.partition(), msg.offset())

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5, "message.timeout.ms": 120000})

    def load():
        i = 0
        while not stop.is_set():
            try:
                p.produce("durable", ("d-%06d" % i).encode(), on_delivery=done)
                i += 1
            except BufferError:
                pass
            p.poll(0.001)

    t = threading.Thread(target=load)
    t.start()
    try:
        wait_for(lambda: len(acked) > 300, what="acks before the kill")
        cluster_cmd("kill", cluster, 1)
        n = len(acked)
        # The living brokers take over: acknowledgements go on.
        wait_for(lambda: len(acked) > n + 500, timeout=60, what="acks after the kill")
    finally:
        stop.set()
        t.join()
    assert p.flush(120) == 0
    assert not errors, errors[:5]
    leaders, brokers = wait_for(lambda: (lambda r: r if r and r[1] == [0, 2] else None)(
        topic_leaders(kafka(cluster, 0), "durable")), timeout=LEASE_MS / 1000 + 15, what="broker 1 gone")
    assert set(leaders.values()) <= {0, 2}
    # Every acknowledged record, once, where it was acknowledged.
    seen, dups = consume_all(kafka(cluster, 2), "durable", 6, len(acked), timeout=120)
    assert not dups
    assert {v: seen.get(v) for v in acked} == acked
    assert len(seen) == len(acked)
    # The killed broker rejoins and serves again.
    cluster_cmd("start", cluster, 1)
    wait_for(lambda: (lambda r: r and r[1] == [0, 1, 2])(topic_leaders(kafka(cluster, 0), "durable")),
             what="broker 1 back")
    seen1, _ = consume_all(kafka(cluster, 1), "durable", 6, len(acked), timeout=120)
    assert len(seen1) == len(acked)


def test_a_restarted_broker_reads_its_disk_cache_not_the_store(cluster):
    """The read cache's disk tier (docs/shared-mode.md, "The read cache"): a broker that
    did not take the produce reads the partition (its range GETs fill its disk tier), is
    killed with -9 and started again, and serves the same fetches from the disk tier: its
    cache sends no read to the object store."""
    create_topic(kafka(cluster, 0), "warm", 1, cluster)
    acked, errors = produce(kafka(cluster, 0), "warm", ["w-%04d" % i for i in range(400)], 1)
    assert not errors and len(acked) == 400
    leaders, _ = wait_for(lambda: topic_leaders(kafka(cluster, 0), "warm"), what="a leader for warm")
    leader = leaders[0]
    reader = 2 if leader != 2 else 1
    disk = 'sluice_object_cache_%s{tier="disk"}'
    written = 'sluice_object_cache_disk_writes_total{outcome="ok"}'

    def fetch_all():
        with K.Conn(kafka(cluster, reader)) as conn:
            recs, hw = K.fetch_all_v4(conn, "warm", 0)
        return [(r.offset, r.value) for r in recs], hw

    before = fetch_all()
    assert before[1] == 400 and len(before[0]) == 400
    # Each range the store returned is written to disk by the cache's writer thread.
    m = wait_for(lambda: (lambda m: m if m[written] >= max(m[disk % "misses_total"], 1) else None)(
        broker_metrics(cluster, reader)), what="the disk tier written")
    assert m['sluice_object_cache_disk_writes_total{outcome="failed"}'] == 0
    cluster_cmd("kill", cluster, reader)
    cluster_cmd("start", cluster, reader)
    assert fetch_all() == before
    m = broker_metrics(cluster, reader)
    assert m[disk % "hits_total"] > 0
    assert m[disk % "misses_total"] == 0, m  # no range read from the store
    # Every memory miss (the memory tier starts empty) was a disk hit.
    assert m['sluice_object_cache_misses_total{tier="memory"}'] == m[disk % "hits_total"]


def test_unsupported_features_are_refused(cluster):
    """WriteTxnMarkers (Kafka's inter-broker API): left out of ApiVersions, and refused
    with UNSUPPORTED_VERSION and a log line when sent anyway. Transactions
    (test_shared_txn.py) and share groups (test_shared_share_groups.py) are served."""
    import kproto as K
    with K.Conn(kafka(cluster, 0)) as conn:
        err, apis = K.api_versions_v0(conn)
        assert err == 0 and 0 in apis and 1 in apis  # Produce, Fetch
        for key in (22, 24, 25, 26, 28, 61, 65, 66):  # InitProducerId ... ListTransactions
            assert key in apis
        for key in (76, 77, 78, 79, 90, 91, 92):  # ShareGroupHeartbeat ... DeleteShareGroupOffsets
            assert key in apis
        assert 27 not in apis  # WriteTxnMarkers
        r = conn.roundtrip(27, 0, K.i32(0))  # WriteTxnMarkers, no markers
        assert r.i16() == 35  # UNSUPPORTED_VERSION
    log = (cluster / "broker-0.log").read_text(errors="replace")
    assert "shared mode does not support WriteTxnMarkers yet" in log


def delete_records(bootstrap, topic, partition, offset):
    import kproto as K
    with K.Conn(bootstrap) as conn:
        body = K.array([topic], lambda t: K.string(t) + K.array(
            [partition], lambda p: K.i32(p) + K.i64(offset))) + K.i32(10000)
        r = conn.roundtrip(21, 0, body)  # DeleteRecords v0
        r.i32()  # throttle
        ((name, parts),) = r.array(lambda x: (x.string(), x.array(lambda y: (y.i32(), y.i64(), y.i16()))))
        assert name == topic
        return parts[0][1:]  # (low watermark, error code)


def test_delete_records_through_one_broker_holds_on_all(cluster):
    create_topic(kafka(cluster, 0), "trimmed", 1, cluster)
    p = Producer({"bootstrap.servers": kafka(cluster, 0), "enable.idempotence": True, "acks": "all"})
    for i in range(30):
        p.produce("trimmed", ("v-%02d" % i).encode(), partition=0)
    assert p.flush(30) == 0
    assert delete_records(kafka(cluster, 1), "trimmed", 0, 12) == (12, 0)
    assert delete_records(kafka(cluster, 2), "trimmed", 0, 5) == (12, 0)  # never back
    assert delete_records(kafka(cluster, 0), "trimmed", 0, 31)[1] == 1  # OFFSET_OUT_OF_RANGE
    for i in range(3):
        c = Consumer({"bootstrap.servers": kafka(cluster, i), "group.id": "trim-%d" % i})
        assert c.get_watermark_offsets(TopicPartition("trimmed", 0), timeout=10) == (12, 30)
        c.close()
    seen, dups = consume_all(kafka(cluster, 2), "trimmed", 1, 18)  # from 0: reset to 12
    assert not dups and sorted(seen) == ["v-%02d" % i for i in range(12, 30)], sorted(seen)
    assert delete_records(kafka(cluster, 0), "trimmed", 0, -1) == (30, 0)  # -1: the high watermark


def test_delete_records_forgets_producers_below_the_log_start(cluster):
    # As single-node mode and Kafka do (test_idempotence.py has the same test against one
    # broker): a producer whose batches all lie below the log start is forgotten, so its
    # next batch is taken at any sequence; one with a batch above it is still checked.
    create_topic(kafka(cluster, 0), "forgotten", 1, cluster)
    ts = int(time.time() * 1000)
    with K.Conn(kafka(cluster, 0)) as conn:
        gone = I.init_producer_id_v1(conn)["producer_id"]
        kept = I.init_producer_id_v1(conn)["producer_id"]
        assert I.produce(conn, "forgotten", gone, 0, 0, [b"a", b"b"], ts)["base_offset"] == 0
        assert I.produce(conn, "forgotten", kept, 0, 0, [b"c"], ts)["base_offset"] == 2
    assert delete_records(kafka(cluster, 1), "forgotten", 0, 2) == (2, 0)
    with K.Conn(kafka(cluster, 2)) as conn:
        desc = I.describe_producers(conn, "forgotten", [0])
        assert [x["producer_id"] for x in desc[0]["producers"]] == [kept], desc
        assert I.produce(conn, "forgotten", kept, 0, 5, [b"e"], ts)["error"] == I.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert I.produce(conn, "forgotten", kept, 0, 1, [b"e"], ts)["base_offset"] == 3
        assert I.produce(conn, "forgotten", gone, 0, 5, [b"d"], ts)["base_offset"] == 4
    seen, dups = consume_all(kafka(cluster, 0), "forgotten", 1, 3)  # from the log start, 2
    assert not dups and seen == {"c": (0, 2), "e": (0, 3), "d": (0, 4)}, seen
    # Its state rows went with it: what the brokers check against (the shared catalog).
    rows = catalog(cluster, "SELECT s.producer_id, s.last_sequence FROM sluice_producer_state s "
                   "JOIN sluice_topics t ON t.topic_id = s.topic_id WHERE t.topic_name = %s "
                   "ORDER BY s.producer_id", ("forgotten",))
    assert rows == sorted([(kept, 1), (gone, 5)]), rows


def test_sequences_hold_across_kill9_of_the_broker_written_through(cluster):
    # The cluster's form of test_idempotence's restart test: the state is the database's,
    # so the other brokers, and the killed one once back, check sequences as it did.
    create_topic(kafka(cluster, 0), "resumed", 1, cluster)
    ts = int(time.time() * 1000)
    with K.Conn(kafka(cluster, 0)) as conn:
        pid = I.init_producer_id_v1(conn)["producer_id"]
        for s in range(8):
            assert I.produce(conn, "resumed", pid, 0, s, [b"v%d" % s], ts)["base_offset"] == s
    cluster_cmd("kill", cluster, 0)
    try:
        with K.Conn(kafka(cluster, 1)) as conn:
            retry = I.produce(conn, "resumed", pid, 0, 7, [b"v7"], ts)
            assert (retry["error"], retry["base_offset"]) == (0, 7), retry
            assert I.produce(conn, "resumed", pid, 0, 3, [b"v3"], ts)["base_offset"] == 3  # one of the last five
            assert I.produce(conn, "resumed", pid, 0, 9, [b"gap"], ts)["error"] == I.OUT_OF_ORDER_SEQUENCE_NUMBER
            assert I.produce(conn, "resumed", pid, 0, 8, [b"v8"], ts)["base_offset"] == 8
    finally:
        cluster_cmd("start", cluster, 0)
    with K.Conn(kafka(cluster, 0)) as conn:
        retry = I.produce(conn, "resumed", pid, 0, 8, [b"v8"], ts)
        assert (retry["error"], retry["base_offset"]) == (0, 8), retry
        assert I.produce(conn, "resumed", pid, 0, 0, [b"v0"], ts)["error"] == I.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert I.produce(conn, "resumed", pid, 0, 9, [b"v9"], ts)["base_offset"] == 9
        assert I.values_in(conn, "resumed") == [b"v%d" % s for s in range(10)]
