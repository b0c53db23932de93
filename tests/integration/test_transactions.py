"""Kafka transactions against Sluice's transaction coordinator (src/txn), with real
clients: the Java client (kafka-clients 4.3.1, tests/jvm Transactional) on transaction
version 2 and, with --transaction-version 1, on the original protocol; librdkafka
through confluent-kafka. Commit and abort are checked in the partition itself (every
record the producers sent is there once, and each transaction ends with the COMMIT or
ABORT control batch its outcome calls for, read through raw Fetch, kproto) and by
read_committed consumers, which see every committed record once and no aborted one.
"""

import json
import queue
import re
import subprocess
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

import idempotence_helpers as I
import java_client_helpers as JC
import jvm_helpers as J
import kproto as K
import kproto_flex as KF
import sluice_helpers as H


def markers(bootstrap, topic):
    """[(offset, 'COMMIT' | 'ABORT')] of the partition's control batches, and the
    values of its data records by offset."""
    recs, batches, raw = K.stored_batches(bootstrap, topic)
    out = []
    for b, data in zip(batches, raw):
        if not b["control"]:
            continue
        # The control record's key: version (int16), type (int16: 0 ABORT, 1 COMMIT);
        # the batch header is 61 bytes.
        r = K.Reader(data[61:])
        r.varint()  # record length
        r.i8()  # attributes
        r.varint()  # timestamp delta
        r.varint()  # offset delta
        key = r.take(r.varint())
        out.append((b["base_offset"], "COMMIT" if int.from_bytes(key[2:4], "big") == 1 else "ABORT"))
    return out, {r.offset: r.value.decode() for r in recs}


def debug_broker(broker_factory, *extra):
    return broker_factory(extra_args=["--log-level", "debug", *extra])


def end_txn_versions(b):
    return {int(v) for v in re.findall(r"EndTxn v(\d+) for", H.tail(b.stderr_paths[-1], 10_000_000))}


@pytest.mark.parametrize("tv", [2, 1])
def test_java_commit_abort_each_transaction_ends_with_its_marker(broker_factory, tv):
    b = debug_broker(broker_factory, "--transaction-version", str(tv))
    topic = "java-txn-tv%d" % tv
    H.create_topic(b.bootstrap, topic, 1)
    out = JC.run("Transactional", b.bootstrap, "commit-abort", topic, "java-ca-%d" % tv)
    unc = [x for x in JC.by_kind(out, "read") if x["isolation"] == "read_uncommitted"][0]
    com = [x for x in JC.by_kind(out, "read") if x["isolation"] == "read_committed"][0]
    # read_committed sees each committed record once and no aborted one.
    assert com["values"] == ["c1-%d" % i for i in range(10)] + ["c2-%d" % i for i in range(10)], com
    want_all = ["c1-%d" % i for i in range(10)] + ["ab-%d" % i for i in range(10)] + \
        ["c2-%d" % i for i in range(10)]
    assert unc["values"] == want_all, unc
    m, data = markers(b.bootstrap, topic)
    # Ten records, then the transaction's marker, three times.
    assert m == [(10, "COMMIT"), (21, "ABORT"), (32, "COMMIT")], m
    assert [data[o] for o in sorted(data)] == want_all
    # TV2 ends every transaction with EndTxn v5 (epoch bump); TV1 never sends v5.
    versions = end_txn_versions(b)
    if tv == 2:
        assert versions == {5}, versions
    else:
        assert versions and max(versions) < 5, versions


def test_java_second_instance_fences_the_first(broker_factory):
    b = debug_broker(broker_factory)
    topic = "java-txn-fence"
    H.create_topic(b.bootstrap, topic, 1)
    out = JC.run("Transactional", b.bootstrap, "fence", topic, "java-fence")
    fenced = JC.one(out, "fenced")
    assert fenced["error"] in ("ProducerFencedException", "InvalidProducerEpochException"), fenced
    m, data = markers(b.bootstrap, topic)
    # The zombie's open transaction was aborted when the second instance started; the
    # winner's committed.
    zombie = [o for o, v in data.items() if v == "zombie"]
    winner = [o for o, v in data.items() if v == "winner"]
    assert len(zombie) == 1 and len(winner) == 1 and "zombie-2" not in data.values(), data
    assert [k for o, k in m if o > zombie[0] and o < winner[0]] == ["ABORT"], m
    assert [k for o, k in m if o > winner[0]] == ["COMMIT"], m
    assert JC.one(out, "read")["values"] == ["winner"], out


TRANSACTION_ABORTABLE = 120
INVALID_TXN_STATE = 48


def test_produce_outside_the_transaction_is_abortable_from_v11(broker_factory):
    """KIP-890's verification: a transactional batch for a partition its transaction has
    not added is refused TRANSACTION_ABORTABLE from Produce v11 (clients that abort on it)
    and INVALID_TXN_STATE before, as Kafka's AddPartitionsToTxnManager answers them."""
    b = broker_factory()
    topic = "txn-abortable-raw"
    H.create_topic(b.bootstrap, topic, 1)
    with K.Conn(b.bootstrap) as c:
        coordinator = I.txn_coordinator(c, "raw-abortable")
    with K.Conn(coordinator) as c:
        init = KF.init_producer_id(c, transactional_id="raw-abortable")
        assert init["error_code"] == 0, init
        pid, epoch = init["producer_id"], init["producer_epoch"]
        for version, want in ((9, INVALID_TXN_STATE), (11, TRANSACTION_ABORTABLE)):
            batch = I.batch(pid, epoch, 0, [b"x"], int(time.time() * 1000), transactional=True)
            r = KF.call(c, K.PRODUCE, version, KF.PRODUCE_REQ, KF.PRODUCE_RESP,
                        dict(transactional_id="raw-abortable", acks=-1, timeout_ms=10000,
                             topic_data=[dict(name=topic, partition_data=[dict(index=0, records=batch)])]))
            part = r["responses"][0]["partition_responses"][0]
            assert part["error_code"] == want, (version, r)
        assert I.values_in(c, topic) == []


def test_java_producer_recovers_from_transaction_abortable_by_aborting(broker_factory):
    """The Java client on transaction version 1 (Produce v11): its transaction is ended
    under it at the coordinator (a raw EndTxn abort with its producer id and epoch), so
    its next send to the partition is answered TRANSACTION_ABORTABLE; the client fails
    that send and the commit with TransactionAbortableException, aborts, and its next
    transaction commits. read_committed sees only that one."""
    b = debug_broker(broker_factory, "--transaction-version", "1")
    topic, tid = "java-txn-abortable", "java-abortable"
    H.create_topic(b.bootstrap, topic, 1)
    proc = subprocess.Popen(J.java_command(JC.PKG + "Transactional", b.bootstrap, "abortable", topic, tid),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = queue.Queue()
        threading.Thread(target=lambda: first.put(proc.stdout.readline()), daemon=True).start()
        opened = json.loads(first.get(timeout=120))
        assert opened["kind"] == "open", opened
        end = (K.compact_string(tid) + K.i64(opened["producer_id"]) + K.i16(opened["producer_epoch"])
               + K.i8(0) + K.uvarint(0))
        with K.Conn(b.bootstrap) as c:
            r = c.roundtrip(26, 3, end, header_version=2, response_header_version=1)
            r.i32()  # throttle
            assert r.i16() == 0
        proc.stdin.write("go\n")
        proc.stdin.flush()
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    out = JC.lines(rest)
    got = JC.one(out, "abortable")
    assert got["send"] == "TransactionAbortableException", got
    assert got["commit"] is not None, got
    assert JC.one(out, "read")["values"] == ["kept-1"], out
    # The refused batch was never written: lost-1, its ABORT, kept-1, its COMMIT.
    m, data = markers(b.bootstrap, topic)
    assert [data[o] for o in sorted(data)] == ["lost-1", "kept-1"], data
    assert [k for _, k in m] == ["ABORT", "COMMIT"], m


def test_java_read_process_write_commits_offsets_with_the_transaction(broker_factory):
    b = debug_broker(broker_factory)
    H.create_topic(b.bootstrap, "rpw-in", 1)
    H.create_topic(b.bootstrap, "rpw-out", 1)
    p = Producer(H.producer_conf(b.bootstrap))
    for i in range(30):
        p.produce("rpw-in", value=b"v%d" % i, partition=0)
        p.flush(10)  # one record per batch: several polls, several transactions
    out = JC.run("Transactional", b.bootstrap, "rpw", "rpw-out", "java-rpw", "rpw-in", "rpw-group", 30)
    committed = JC.one(out, "committed")
    assert committed["rpw-in-0"] == 30, committed
    assert committed["transactions"] >= 3, committed  # the third was aborted
    m, data = markers(b.bootstrap, "rpw-out")
    assert "ABORT" in [k for _, k in m] and m[-1][1] == "COMMIT", m
    # Every input's output is there; the aborted transaction's copies lie before its
    # ABORT marker, and the committed copies are exactly one per input.
    aborts = [o for o, k in m if k == "ABORT"]
    committed_values = []
    ends = sorted(o for o, _ in m)
    start = 0
    for end in ends:
        vals = [data[o] for o in sorted(data) if start <= o < end]
        if dict(m)[end] == "COMMIT":
            committed_values += vals
        start = end + 1
    assert sorted(committed_values) == sorted("V%d" % i for i in range(30)), committed_values
    assert aborts
    # A read_committed consumer sees exactly those: each input's output once.
    assert sorted(JC.one(out, "read")["values"]) == sorted(committed_values)


def test_librdkafka_transactional_producer_commit_and_abort(broker_factory):
    b = debug_broker(broker_factory)
    topic = "rdk-txn"
    H.create_topic(b.bootstrap, topic, 1)
    p = Producer(H.producer_conf(b.bootstrap, **{"transactional.id": "rdk-1", "enable.idempotence": True}))
    p.init_transactions(20)
    for kind, commit in (("c1", True), ("ab", False), ("c2", True)):
        p.begin_transaction()
        for i in range(5):
            p.produce(topic, value=("%s-%d" % (kind, i)).encode(), partition=0)
        if commit:
            p.commit_transaction(20)
        else:
            p.flush(20)
            p.abort_transaction(20)
    m, data = markers(b.bootstrap, topic)
    assert m == [(5, "COMMIT"), (11, "ABORT"), (17, "COMMIT")], m
    assert [data[o] for o in sorted(data)] == ["%s-%d" % (k, i) for k in ("c1", "ab", "c2") for i in range(5)]
    c = Consumer(H.consumer_conf(b.bootstrap, **{"group.id": "rdk-reader", "isolation.level": "read_committed"}))
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 10 and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg.value().decode())
    c.close()
    assert got == ["c1-%d" % i for i in range(5)] + ["c2-%d" % i for i in range(5)], got


def test_timeout_above_the_maximum_is_refused(broker_factory):
    b = broker_factory(extra_args=["--transaction-max-timeout-ms", "5000"])
    p = Producer(H.producer_conf(b.bootstrap, **{"transactional.id": "rdk-timeout", "enable.idempotence": True,
                                                 "transaction.timeout.ms": 10000,
                                                 "message.timeout.ms": 5000}))
    with pytest.raises(KafkaException) as e:
        p.init_transactions(10)
    assert "INVALID_TRANSACTION_TIMEOUT" in e.value.args[0].name() or \
        "timeout" in e.value.args[0].str().lower(), e.value.args[0]


def test_open_transaction_past_its_timeout_is_aborted(broker_factory):
    b = broker_factory(extra_args=["--transaction-abort-check-interval-ms", "200"])
    topic = "rdk-txn-timeout"
    H.create_topic(b.bootstrap, topic, 1)
    p = Producer(H.producer_conf(b.bootstrap, **{"transactional.id": "rdk-slow", "enable.idempotence": True,
                                                 "transaction.timeout.ms": 1000,
                                                 "message.timeout.ms": 1000}))
    p.init_transactions(10)
    p.begin_transaction()
    delivered = []
    p.produce(topic, value=b"late", partition=0,
              on_delivery=lambda err, msg: delivered.append(err is None))
    p.flush(10)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        m, _ = markers(b.bootstrap, topic)
        if m:
            break
        time.sleep(0.2)
    # The record is at 0 and the marker after it; on a loaded machine the second may pass
    # before the record arrives: then the abort comes first and the record is refused.
    assert delivered in ([True], [False]), delivered
    assert m == [(1 if delivered == [True] else 0, "ABORT")], (m, delivered)
    with pytest.raises(KafkaException):
        p.commit_transaction(10)


def test_open_transaction_survives_kill9_and_is_aborted_at_its_timeout(broker_factory):
    b = broker_factory(extra_args=["--transaction-abort-check-interval-ms", "200"])
    topic = "rdk-txn-kill9"
    H.create_topic(b.bootstrap, topic, 1)
    p = Producer(H.producer_conf(b.bootstrap, **{"transactional.id": "rdk-kill9", "enable.idempotence": True,
                                                 "transaction.timeout.ms": 4000,
                                                 "message.timeout.ms": 4000}))
    p.init_transactions(10)
    p.begin_transaction()
    p.produce(topic, value=b"open", partition=0)
    p.flush(10)
    b.kill9()
    b.start()
    # The transaction, restored from the catalog, is still open: nothing committed yet.
    assert markers(b.bootstrap, topic)[0] == []
    deadline = time.monotonic() + 20
    m = []
    while time.monotonic() < deadline and not m:
        m, data = markers(b.bootstrap, topic)
        time.sleep(0.2)
    assert m == [(1, "ABORT")] and data == {0: "open"}, (m, data)
