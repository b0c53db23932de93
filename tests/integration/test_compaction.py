"""Log compaction with a real client (confluent-kafka / librdkafka): a topic with
cleanup.policy=compact keeps the latest record of each key at its offset, consumers
read across the gaps, the result survives a restart, and a record without a key is
refused with INVALID_RECORD; transactions on a compacted topic (markers kept until
delete.retention.ms after their records went, never an aborted record) and DeleteRecords
inside an aborted transaction."""

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

import kproto as K
import sluice_helpers as H
import sql_helpers as S
import txn_views as V


def produce_one(p, topic, key, value):
    result = {}

    def done(err, msg):
        result["err"] = err
        result["offset"] = None if err else msg.offset()

    p.produce(topic, key=key, value=value, partition=0, on_delivery=done)
    p.flush(30)
    return result


def survivors(bootstrap, topic, end):
    return [(r["offset"], r["key"], r["value"]) for r in H.consume_all(bootstrap, topic, {0: end})]


def test_compacted_topic_keeps_latest_value_per_key(broker_factory, topic_name):
    b = broker_factory(extra_args=["--log-cleaner-backoff-ms", "200"])
    # segment.ms=1: every produce rolls the segment, so all but the last are cleanable.
    H.create_topic(b.bootstrap, topic_name, 1, {
        "cleanup.policy": "compact", "segment.ms": "1", "min.cleanable.dirty.ratio": "0.01"})
    p = Producer(H.producer_conf(b.bootstrap, **{"linger.ms": 0}))
    for i in range(30):
        r = produce_one(p, topic_name, b"k%d" % (i % 5), b"v%d" % i)
        assert r["err"] is None and r["offset"] == i, r
        time.sleep(0.005)
    assert produce_one(p, topic_name, b"k0", None)["offset"] == 30  # tombstone
    time.sleep(0.005)
    assert produce_one(p, topic_name, b"tail", b"t")["offset"] == 31

    keyless = produce_one(p, topic_name, None, b"no key")
    assert keyless["err"] is not None and keyless["err"].code() == KafkaError.INVALID_RECORD, keyless

    want = [(26, b"k1", b"v26"), (27, b"k2", b"v27"), (28, b"k3", b"v28"), (29, b"k4", b"v29"),
            (30, b"k0", None), (31, b"tail", b"t")]
    deadline = time.monotonic() + 30
    got = survivors(b.bootstrap, topic_name, 32)
    while got != want and time.monotonic() < deadline:
        time.sleep(0.3)
        got = survivors(b.bootstrap, topic_name, 32)
    assert got == want, b.stderr_tail()
    assert "cleaner:" in b.stderr_tail(200)

    b.kill9()
    b.start()
    assert survivors(b.bootstrap, topic_name, 32) == want


def txn_views(b, topic, absent=("ab1", "ab3", "a0", "a1", "a2")):
    """read_committed and SQL (kafka_topics."T"): [(offset, value)]. Neither shows an
    aborted value (absent); they agree (read again while a cleaner pass came between)."""
    for _ in range(10):
        rc, sq = V.read(b.bootstrap, topic, 1), V.sql(b, topic)
        for view in (rc, sq):
            assert not set(absent) & {v for _, _, v in view}, view
        if rc == sq:
            return [(o, v) for _, o, v in rc]
    raise AssertionError("read_committed %r and SQL %r differ" % (rc, sq))


def control_batches(b, topic):
    """[(offset, delete horizon in ms or None)] of the partition's transaction markers."""
    _, batches, raw = K.stored_batches(b.bootstrap, topic)
    return [(bt["base_offset"],
             int.from_bytes(r[27:35], "big") if int.from_bytes(r[21:23], "big") & 0x40 else None)
            for bt, r in zip(batches, raw) if bt["control"]]


def test_transaction_markers_under_compaction(broker_factory, topic_name):
    """A committed and an aborted transaction of a transactional producer on a compacted
    topic (and a third one that keeps its record): compaction removes the aborted
    records at once and the committed ones once superseded, keeps each marker until delete.retention.ms after its transaction lost
    its last record (KIP-534's delete horizon, attributes bit 6), then removes it; at
    every step, and after a restart, read_committed and SQL agree and show no aborted
    record."""
    b = broker_factory(extra_args=S.SQL_ARGS + ["--log-cleaner-backoff-ms", "200"])
    H.create_topic(b.bootstrap, topic_name, 1, {
        "cleanup.policy": "compact", "segment.ms": "1", "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "3000"})
    t = Producer(H.producer_conf(b.bootstrap, **{
        "transactional.id": "compact-txn", "enable.idempotence": True, "linger.ms": 0}))
    t.init_transactions(30)
    plain = Producer(H.producer_conf(b.bootstrap, **{"linger.ms": 0}))
    started_ms = time.time() * 1000

    def txn(pairs, commit):
        t.begin_transaction()
        for k, v in pairs:
            t.produce(topic_name, key=k, value=v, partition=0)
            assert t.flush(20) == 0
            time.sleep(0.005)
        t.commit_transaction(30) if commit else t.abort_transaction(30)
        time.sleep(0.005)

    txn([(b"k1", b"c1"), (b"k2", b"c2")], True)     # 0, 1; COMMIT 2
    txn([(b"k1", b"ab1"), (b"k3", b"ab3")], False)  # 3, 4; ABORT 5
    # The producer's last batch stays whole (its sequence), so its transaction's marker
    # does too: a third transaction holds it.
    txn([(b"k9", b"keep")], True)                   # 6; COMMIT 7
    for i, (k, v) in enumerate([(b"k1", b"v1"), (b"k2", b"v2"), (b"tail", b"t")]):
        assert produce_one(plain, topic_name, k, v)["offset"] == 8 + i
        time.sleep(0.005)
    before = txn_views(b, topic_name)
    assert set(before) <= {(0, "c1"), (1, "c2"), (6, "keep"), (8, "v1"), (9, "v2"), (10, "t")}, before

    # Cleaned: the committed transaction's records were superseded, the aborted ones
    # removed; both markers stay, with their delete horizon.
    want = [(6, "keep"), (8, "v1"), (9, "v2"), (10, "t")]
    deadline = time.monotonic() + 30
    while V.read(b.bootstrap, topic_name, 1, committed=False) != [(0, o, v) for o, v in want]:
        assert time.monotonic() < deadline, V.read(b.bootstrap, topic_name, 1, committed=False)
        time.sleep(0.3)
    assert txn_views(b, topic_name) == want
    marks = control_batches(b, topic_name)
    assert [o for o, _ in marks] == [2, 5, 7], marks

    # Each marker gets its horizon at the pass that finds its transaction without a
    # record, and goes at the first pass after it; new records keep passes coming.
    ticks = 0
    horizons = {}
    while True:
        marks = control_batches(b, topic_name)
        now_ms = time.time() * 1000
        for o, h in marks:
            if h is not None:
                assert started_ms + 3000 <= h <= now_ms + 3000, (marks, started_ms, now_ms)
                horizons[o] = h
        for o in (2, 5):
            if o not in dict(marks):
                # Removed: only after its horizon.
                assert o in horizons and now_ms >= horizons[o] - 50, (o, horizons, now_ms)
        assert 7 in dict(marks) and dict(marks)[7] is None, marks
        if len(marks) == 1:
            break
        assert time.monotonic() < deadline + 30, marks
        produce_one(plain, topic_name, b"tick", b"%d" % ticks)
        ticks += 1
        view = txn_views(b, topic_name)
        assert view[:4] == want, view
        time.sleep(0.3)
    final = txn_views(b, topic_name)
    assert final[:4] == want and final[-1][1] == "%d" % (ticks - 1), final

    b.kill9()
    b.start()
    assert txn_views(b, topic_name) == final
    assert control_batches(b, topic_name) == [(7, None)]


def test_delete_records_inside_an_aborted_transaction_hides_the_rest(broker_factory, topic_name):
    """Retention (here DeleteRecords, which moves the log start inside a segment) that
    cuts an aborted transaction leaves its ABORT marker and index entry: a read_committed
    reader from the new log start sees none of its remaining records."""
    b = broker_factory(extra_args=S.SQL_ARGS)
    H.create_topic(b.bootstrap, topic_name, 1)
    t = Producer(H.producer_conf(b.bootstrap, **{
        "transactional.id": "retention-txn", "enable.idempotence": True, "linger.ms": 0}))
    t.init_transactions(30)
    for values, commit in ((["a0", "a1", "a2"], False), (["c0", "c1"], True)):
        t.begin_transaction()
        for v in values:
            t.produce(topic_name, value=v.encode(), partition=0)
            assert t.flush(20) == 0
        t.commit_transaction(30) if commit else t.abort_transaction(30)
    # a0 a1 a2 ABORT(3) c0 c1 COMMIT(6); the log start moves to a1's offset.
    body = K.i32(1) + K.string(topic_name) + K.i32(1) + K.i32(0) + K.i64(1) + K.i32(10000)
    with K.Conn(b.bootstrap) as c:
        r = c.roundtrip(21, 0, body)
        r.i32()  # throttle
        parts = r.array(lambda x: (x.string(), x.array(lambda y: (y.i32(), y.i64(), y.i16()))))
    assert parts == [(topic_name, [(0, 1, 0)])], parts
    for restart in (False, True):
        if restart:
            b.kill9()
            b.start()
        c = Consumer(H.consumer_conf(b.bootstrap, **{"isolation.level": "read_committed"}))
        c.assign([TopicPartition(topic_name, 0, OFFSET_BEGINNING)])
        got = [(r["offset"], r["value"]) for r in H.consume_all(b.bootstrap, topic_name, {0: 7}, consumer=c)]
        c.close()
        assert got == [(4, b"c0"), (5, b"c1")], got
        assert V.sql(b, topic_name) == [(0, 4, "c0"), (0, 5, "c1")]
