"""Idempotent producers: InitProducerId (v0-5), DescribeProducers (v0), and the
per-partition sequence check of Produce, as Kafka's ProducerStateManager does it.
Raw-protocol tests drive every branch and assert on what the partition holds after;
librdkafka (confluent-kafka 1.7) and kafkajs (idempotent: true) produce through it."""

import pytest
from confluent_kafka import Producer

import idempotence_helpers as I
import kproto as K
import sluice_helpers as H
from test_kafkajs import run_node


def v(i):
    return b"v%d" % i


def test_api_versions_advertise_the_new_apis(broker):
    with K.Conn(broker.bootstrap) as conn:
        err, apis = K.api_versions_v0(conn)
    assert err == 0
    assert apis[I.INIT_PRODUCER_ID] == (0, 5)
    assert apis[I.DESCRIBE_PRODUCERS] == (0, 0)


def test_init_producer_id_allocates_ids_and_bumps_epochs(broker):
    with K.Conn(broker.bootstrap) as conn:
        a = I.init_producer_id_v1(conn)
        b = I.init_producer_id_flexible(conn, 4)
        assert (a["error"], a["epoch"], b["error"], b["epoch"]) == (0, 0, 0, 0)
        assert b["producer_id"] > a["producer_id"] >= 0
        # Naming the current id and epoch (v3+) gets a new id without a transactional id,
        # as Kafka 4.3 answers (the epoch bump of KIP-360 is for transactional producers).
        again = I.init_producer_id_flexible(conn, 3, producer_id=b["producer_id"], epoch=0)
        assert (again["error"], again["epoch"]) == (0, 0) and again["producer_id"] > b["producer_id"], again
        coordinator = I.txn_coordinator(conn, "tx-1")
    # A transactional id is served by its coordinator only (Kafka's clients ask
    # FindCoordinator first; in a cluster another broker answers NOT_COORDINATOR). Its id
    # comes from the coordinator's block of ids: unique, but, as Kafka hands out blocks
    # per broker, not above the ids another broker gave.
    with K.Conn(coordinator) as conn:
        t = I.init_producer_id_flexible(conn, 5, transactional_id="tx-1")
        assert t["error"] == 0 and t["epoch"] == 0, t
        assert t["producer_id"] not in {a["producer_id"], b["producer_id"], again["producer_id"]}, t
        # The same transactional id again: the same producer id, the next epoch.
        t2 = I.init_producer_id_flexible(conn, 5, transactional_id="tx-1")
        assert (t2["error"], t2["producer_id"], t2["epoch"]) == (0, t["producer_id"], 1), t2


# Shared mode keeps producer ids and transactional ids' state in the database, and
# test_shared_txn.py kills a coordinator broker in a cluster; this one kills its broker.
@pytest.mark.single_node("kill -9 of its broker")
def test_init_producer_id_ids_are_durable_across_kill9(broker):
    with K.Conn(broker.bootstrap) as conn:
        a = I.init_producer_id_v1(conn)
        t = I.init_producer_id_flexible(conn, 5, transactional_id="tx-1")
        assert (a["error"], t["error"], t["epoch"]) == (0, 0, 0) and t["producer_id"] > a["producer_id"], t
    # Ids are never handed out twice, also after a kill -9.
    broker.kill9()
    broker.start()
    with K.Conn(broker.bootstrap) as conn:
        c = I.init_producer_id_v1(conn)
        t2 = I.init_producer_id_flexible(conn, 5, transactional_id="tx-1")
    assert c["error"] == 0 and c["producer_id"] > t["producer_id"]
    # A transactional id keeps its producer id across restarts (the epoch moves on).
    assert (t2["error"], t2["producer_id"], t2["epoch"]) == (0, t["producer_id"], 1), t2


def test_sequence_check_branches(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1)
    ts = H.now_ms()
    with K.Conn(broker.bootstrap) as conn:
        pid = I.init_producer_id_v1(conn)["producer_id"]
        p = lambda epoch, seq, vals, **kw: I.produce(conn, topic_name, pid, epoch, seq, vals, ts, **kw)
        assert p(0, 0, [v(0), v(1), v(2)]) == dict(partition=0, error=0, base_offset=0, log_append_time=-1)
        # A retry of the batch: its first offsets, nothing appended.
        assert p(0, 0, [v(0), v(1), v(2)])["base_offset"] == 0
        assert p(0, 3, [v(3)])["base_offset"] == 3
        # A gap, an overlap.
        assert p(0, 5, [v(5)])["error"] == I.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert p(0, 2, [v(2)])["error"] == I.OUT_OF_ORDER_SEQUENCE_NUMBER
        # Four more batches: the first (sequence 0..2) falls out of the last five.
        for s in range(4, 8):
            assert p(0, s, [v(s)]) == dict(partition=0, error=0, base_offset=s, log_append_time=-1)
        assert p(0, 3, [v(3)])["base_offset"] == 3  # still one of the five
        assert p(0, 0, [v(0), v(1), v(2)])["error"] == I.OUT_OF_ORDER_SEQUENCE_NUMBER
        # A new epoch starts at sequence 0; the old epoch is then stale.
        assert p(1, 8, [v(8)])["error"] == I.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert p(1, 0, [v(8)])["base_offset"] == 8
        assert p(0, 8, [v(9)])["error"] == I.INVALID_PRODUCER_EPOCH
        # A transactional batch without a transactional id in the request (as Kafka).
        assert p(1, 1, [v(9)], transactional=True)["error"] == I.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # Two batches of one producer in one partition's records.
        two = I.batch(pid, 1, 1, [v(9)], ts) + I.batch(pid, 1, 2, [v(10)], ts)
        assert K.produce_v3(conn, topic_name, 0, two)["error"] == I.INVALID_RECORD
        assert p(1, 1, [v(9)])["base_offset"] == 9
        assert I.values_in(conn, topic_name) == [v(i) for i in range(10)]
        desc = I.describe_producers(conn, topic_name, [0, 5])
    assert desc[5]["error"] == K.UNKNOWN_TOPIC_OR_PARTITION
    assert desc[0]["error"] == 0
    assert [(x["producer_id"], x["epoch"], x["last_sequence"], x["last_timestamp"])
            for x in desc[0]["producers"]] == [(pid, 1, 1, ts)]
    log = broker.stderr_tail(400)
    assert "OUT_OF_ORDER_SEQUENCE_NUMBER: producer %d epoch 0: sequence 5 does not follow 3" % pid in log
    assert "INVALID_PRODUCER_EPOCH" in log


# Its broker's restarts and producer snapshot files are single-node mode's; shared mode keeps
# producer state in the database (test_shared_serve.py and test_shared_faults.py kill brokers
# under idempotent load and check that nothing acknowledged is lost or stored twice).
@pytest.mark.single_node("restarts its broker and deletes its producer snapshots")
def test_state_survives_restart_and_kill9(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1, config={"segment.bytes": "4096"})
    ts = H.now_ms()
    with K.Conn(broker.bootstrap) as conn:
        pid = I.init_producer_id_v1(conn)["producer_id"]
        # Enough batches to roll segments (and write snapshots on the way).
        for s in range(60):
            assert I.produce(conn, topic_name, pid, 0, s, [b"x" * 100 + v(s)], ts)["base_offset"] == s
    # The last start finds no snapshot (a data directory from before snapshots existed,
    # or one lost): the state is rebuilt from the batch headers alone.
    for how in ("stop", "kill9", "kill9", "no snapshot"):
        if how == "stop":
            broker.stop()
        else:
            broker.kill9()
        if how == "no snapshot":
            snaps = list(broker.data_dir.rglob("producer-state.snapshot"))
            assert snaps, "no producer snapshot was written"
            for f in snaps:
                f.unlink()
        broker.start()
        with K.Conn(broker.bootstrap) as conn:
            last = I.produce(conn, topic_name, pid, 0, 59, [b"x" * 100 + v(59)], ts)
            assert (last["error"], last["base_offset"]) == (0, 59), how
            assert I.produce(conn, topic_name, pid, 0, 61, [b"gap"], ts)["error"] == \
                I.OUT_OF_ORDER_SEQUENCE_NUMBER, how
            assert len(I.values_in(conn, topic_name)) == 60
        if how == "no snapshot":  # the partition loads on first use
            assert "producer state rebuilt from 60 batches after offset 0" in broker.stderr_tail(200)
    with K.Conn(broker.bootstrap) as conn:
        assert I.produce(conn, topic_name, pid, 0, 60, [b"next"], ts)["base_offset"] == 60
        vals = I.values_in(conn, topic_name)
    assert vals == [b"x" * 100 + v(s) for s in range(60)] + [b"next"]


def test_delete_records_forgets_producers_below_the_log_start(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1)
    ts = H.now_ms()
    with K.Conn(broker.bootstrap) as conn:
        pid = I.init_producer_id_v1(conn)["producer_id"]
        other = I.init_producer_id_v1(conn)["producer_id"]
        assert I.produce(conn, topic_name, pid, 0, 0, [b"a", b"b"], ts)["base_offset"] == 0
        assert I.produce(conn, topic_name, other, 0, 0, [b"c"], ts)["base_offset"] == 2
        # DeleteRecords v0 up to offset 2.
        body = K.i32(1) + K.string(topic_name) + K.i32(1) + K.i32(0) + K.i64(2) + K.i32(10000)
        r = conn.roundtrip(21, 0, body)
        r.i32()
        topics = r.array(lambda x: (x.string(), x.array(lambda y: (y.i32(), y.i64(), y.i16()))))
        assert topics[0][1][0] == (0, 2, 0)
        # pid's batches all lie below the start: it is forgotten and its next batch starts
        # anew (a gap is not seen); other is still known, its gap refused.
        assert I.produce(conn, topic_name, other, 0, 5, [b"e"], ts)["error"] == I.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert I.produce(conn, topic_name, other, 0, 1, [b"e"], ts)["base_offset"] == 3
        desc = I.describe_producers(conn, topic_name, [0])
        assert [x["producer_id"] for x in desc[0]["producers"]] == [other]
        assert I.produce(conn, topic_name, pid, 0, 5, [b"d"], ts)["base_offset"] == 4


def test_librdkafka_idempotent_producer(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 3)
    p = Producer(H.producer_conf(broker.bootstrap, **{"enable.idempotence": True, "linger.ms": 1}))
    n = 3000
    records = [dict(key=H.key_for(i), value=H.value_for(i, b"idem"), partition=i % 3) for i in range(n)]
    dr = H.produce_all(p, topic_name, records)
    got = H.consume_all(broker.bootstrap, topic_name, {0: n // 3, 1: n // 3, 2: n // 3})
    for part in range(3):
        vals = [r["value"] for r in got if r["partition"] == part]
        assert vals == [H.value_for(i, b"idem") for i in range(part, n, 3)]
    assert sorted(d.offset for d in dr if d.partition == 0) == list(range(n // 3))
    with K.Conn(broker.bootstrap) as conn:
        desc = I.describe_producers(conn, topic_name, [0, 1, 2])
    pids = {x["producer_id"] for part in desc.values() for x in part["producers"]}
    assert len(pids) == 1, desc
    # librdkafka numbers each partition's records from 0: the last is n/3 - 1.
    assert [part["producers"][0]["last_sequence"] for part in desc.values()] == [n // 3 - 1] * 3


def test_kafkajs_idempotent_producer(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 2)
    out = run_node("idempotent.js", broker.bootstrap, topic_name, 400)
    assert out["acked"] == 400
    got = H.consume_all(broker.bootstrap, topic_name, {0: 200, 1: 200})
    for part in range(2):
        assert [r["value"] for r in got if r["partition"] == part] == \
            [b"kjs-%d" % i for i in range(part, 400, 2)]
    with K.Conn(broker.bootstrap) as conn:
        desc = I.describe_producers(conn, topic_name, [0, 1])
    assert [len(desc[p]["producers"]) for p in (0, 1)] == [1, 1]


@pytest.mark.shared_missing("producer_expiry")
def test_idle_producers_expire(broker_factory, topic_name):
    broker = broker_factory(extra_args=["--producer-id-expiration-ms", "1500"])
    H.create_topic(broker.bootstrap, topic_name, 1)
    ts = H.now_ms()
    with K.Conn(broker.bootstrap) as conn:
        pid = I.init_producer_id_v1(conn)["producer_id"]
        assert I.produce(conn, topic_name, pid, 0, 0, [b"a"], ts)["base_offset"] == 0
        assert I.produce(conn, topic_name, pid, 0, 1, [b"b"], ts)["base_offset"] == 1
        assert [x["producer_id"] for x in I.describe_producers(conn, topic_name, [0])[0]["producers"]] == [pid]
        H.wait_until("producer %d expired" % pid,
                     lambda: I.describe_producers(conn, topic_name, [0])[0]["producers"] == [], timeout=10)
        # Forgotten: its next batch starts anew wherever it is, as Kafka 4.3 takes it.
        assert I.produce(conn, topic_name, pid, 0, 5, [b"c"], ts)["base_offset"] == 2
        assert I.values_in(conn, topic_name) == [b"a", b"b", b"c"]
