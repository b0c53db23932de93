"""Transactions across a broker killed with kill -9 (issue 34), with librdkafka's
transactional producer (Debian's confluent-kafka 1.7 under /usr/bin/python3, 2.x in the
ck venvs): in each phase of a transaction -- open (records written, no EndTxn), after
EndTxn was answered, and while the markers of a transaction over many partitions are
being written -- and, in test_random_transactions_with_kill9, in a randomized check in
the spirit of Jepsen's Kafka workload. After each restart no read_committed consumer and
no SQL query (kafka_topics."T") sees a record of a transaction that did not commit, and
every committed transaction is whole. One broker (fixed port, SQL on) serves the file.
"""

import random
import socket
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

import sluice_helpers as H
import sql_helpers as S
import txn_views as V


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def b(module_broker_factory):
    return module_broker_factory(
        listen="127.0.0.1:%d" % free_port(),
        extra_args=S.SQL_ARGS + ["--log-level", "debug", "--transaction-abort-check-interval-ms", "200"])


def txn_producer(b, tid, **extra):
    conf = {"transactional.id": tid, "enable.idempotence": True, "transaction.timeout.ms": 10000,
            "message.timeout.ms": 10000, "linger.ms": 0}
    conf.update(extra)
    p = Producer(H.producer_conf(b.bootstrap, **conf))
    p.init_transactions(30)
    return p


def one_txn(p, topic, partitions, prefix, n=3, end="commit"):
    """A transaction of n records to each partition, values PREFIX-PARTITION-I; end is
    "commit", "abort" or None (left open after its records are acknowledged)."""
    p.begin_transaction()
    for part in range(partitions):
        for i in range(n):
            p.produce(topic, value=("%s-%d-%d" % (prefix, part, i)).encode(), partition=part)
    assert p.flush(20) == 0
    if end == "commit":
        p.commit_transaction(30)
    elif end == "abort":
        p.abort_transaction(30)
    return ["%s-%d-%d" % (prefix, part, i) for part in range(partitions) for i in range(n)]


def restart(b):
    b.kill9()
    b.start()


def assert_views(b, topic, partitions, committed, absent):
    """read_committed and SQL both show exactly `committed` (each once), nothing of
    `absent`."""
    view = V.read(b.bootstrap, topic, partitions)
    got = V.values(view)
    assert sorted(got) == sorted(committed), (sorted(set(got) ^ set(committed))[:10], len(got))
    assert not set(got) & set(absent)
    assert V.sql(b, topic) == view


def test_open_transaction_is_invisible_after_kill9_and_aborted_by_the_next_instance(b):
    topic, parts = "crash-open", 3
    H.create_topic(b.bootstrap, topic, parts)
    p = txn_producer(b, "crash-open")
    first = one_txn(p, topic, parts, "a")
    open_ = one_txn(p, topic, parts, "open", end=None)
    restart(b)
    # The open transaction's records are stored, but nothing of them is visible.
    stored = V.values(V.read(b.bootstrap, topic, parts, committed=False))
    assert set(open_) <= set(stored), stored
    assert_views(b, topic, parts, first, open_)
    # A new instance of the producer fences the old one and aborts what it left open.
    p2 = txn_producer(b, "crash-open")
    last = one_txn(p2, topic, parts, "c")
    assert_views(b, topic, parts, first + last, open_)


def test_ended_transaction_survives_kill9_right_after_its_answer(b):
    topic, parts = "crash-ended", 3
    H.create_topic(b.bootstrap, topic, parts)
    p = txn_producer(b, "crash-ended")
    committed = one_txn(p, topic, parts, "c1")
    restart(b)
    assert_views(b, topic, parts, committed, [])
    aborted = one_txn(p, topic, parts, "ab", end="abort")
    restart(b)
    assert_views(b, topic, parts, committed, aborted)
    # The same producer goes on after both restarts.
    committed += one_txn(p, topic, parts, "c2")
    assert_views(b, topic, parts, committed, aborted)


def test_kill9_while_markers_are_written_completes_the_commit(b):
    topic, parts = "crash-markers", 100
    H.create_topic(b.bootstrap, topic, parts)
    caught_mid_way = 0
    committed = []
    for rnd in range(3):
        p = txn_producer(b, "crash-markers-%d" % rnd)
        recs = one_txn(p, topic, parts, "m%d" % rnd, n=1, end=None)
        log = b.stderr_paths[-1]
        seen_before = log.read_bytes().count(b"markers to %d partitions" % parts)
        t = threading.Thread(target=lambda: _ignore(lambda: p.commit_transaction(30)), daemon=True)
        t.start()
        deadline = time.monotonic() + 30
        while log.read_bytes().count(b"markers to %d partitions" % parts) == seen_before:
            assert time.monotonic() < deadline, H.tail(log)
            time.sleep(0.001)
        b.kill9()
        killed_log = log.read_text(errors="replace")
        if "'crash-markers-%d': transaction committed" % rnd not in killed_log:
            caught_mid_way += 1
        b.start()
        t.join(40)
        # PrepareCommit was stored before the first marker: the restart completes it.
        committed += recs
        assert_views(b, topic, parts, committed, [])
    print("killed before the commit completed in %d of 3 rounds" % caught_mid_way)


def _ignore(fn):
    try:
        fn()
    except KafkaException:
        pass


# --------------------------------------------------------------------------
# Randomized: producers, consumers, kill -9
# --------------------------------------------------------------------------

class TxnWriter(threading.Thread):
    """Short transactions of 1-4 sends to random partitions, one in four aborted. Each
    transaction's outcome: "committed" (commit_transaction returned), "aborted" (aborted
    before any commit was asked for) or "unknown" (the commit raised: either outcome may
    hold, but all or nothing)."""

    def __init__(self, b, topic, parts, k, stop):
        super().__init__(daemon=True)
        self.b, self.topic, self.parts, self.k, self.stop = b, topic, parts, k, stop
        self.outcomes = {}  # txn number -> (outcome, [values])
        self.rng = random.Random(k)
        self.errors = []

    def producer(self):
        while not self.stop.is_set():
            try:
                return txn_producer(self.b, "jepsen-%d" % self.k, **{"transaction.timeout.ms": 6000,
                                                                   "message.timeout.ms": 6000})
            except KafkaException as e:
                self.errors.append(str(e))
                time.sleep(0.2)
        return None

    def run(self):
        p = self.producer()
        n = 0
        while p is not None and not self.stop.is_set():
            n += 1
            vals = ["%d-%d-%d" % (self.k, n, i) for i in range(self.rng.randint(1, 4))]
            abort = self.rng.random() < 0.25
            commit_asked = False
            try:
                p.begin_transaction()
                for v in vals:
                    p.produce(self.topic, value=v.encode(), partition=self.rng.randrange(self.parts))
                if abort:
                    p.flush(10)
                    p.abort_transaction(10)
                    self.outcomes[n] = ("aborted", vals)
                else:
                    commit_asked = True
                    p.commit_transaction(10)
                    self.outcomes[n] = ("committed", vals)
            except KafkaException as e:
                self.errors.append(str(e))
                self.outcomes[n] = ("unknown" if commit_asked else "aborted", vals)
                try:
                    p.abort_transaction(10)
                except KafkaException:
                    p = self.producer()  # fatal, or the abort failed: a new instance fences
            time.sleep(self.rng.random() * 0.02)


class LiveReader(threading.Thread):
    """A read_committed consumer reading every partition from 0 through the kills."""

    def __init__(self, b, topic, parts, stop):
        super().__init__(daemon=True)
        self.c = Consumer(H.consumer_conf(b.bootstrap, **{"isolation.level": "read_committed",
                                                          "enable.partition.eof": False}))
        self.c.assign([TopicPartition(topic, p, 0) for p in range(parts)])
        self.stop = stop
        self.seen, self.errors = [], []

    def run(self):
        while not self.stop.is_set():
            m = self.c.poll(0.2)
            if m is None:
                continue
            if m.error():
                self.errors.append(str(m.error()))
            else:
                self.seen.append((m.partition(), m.offset(), m.value().decode()))

    def drain(self, final):
        """Go on reading until this reader has reached the end of `final`."""
        want = {}
        for p, o, _ in final:
            want[p] = max(want.get(p, -1), o)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            last = {}
            for p, o, _ in self.seen:
                last[p] = max(last.get(p, -1), o)
            if all(last.get(p, -1) >= o for p, o in want.items()):
                break
            m = self.c.poll(0.2)
            if m is not None and not m.error():
                self.seen.append((m.partition(), m.offset(), m.value().decode()))
        self.c.close()


def test_random_transactions_with_kill9(b):
    topic, parts = "jepsen", 3
    H.create_topic(b.bootstrap, topic, parts)
    stop = threading.Event()
    writers = [TxnWriter(b, topic, parts, k, stop) for k in range(3)]
    readers = [LiveReader(b, topic, parts, stop) for _ in range(2)]
    for t in writers + readers:
        t.start()
    t0 = time.monotonic()
    rng = random.Random(34)
    kills = 0
    for _ in range(5):
        time.sleep(rng.uniform(4, 7))
        restart(b)
        kills += 1
    time.sleep(6)
    stop.set()
    for t in writers + readers:
        t.join(60)
        assert not t.is_alive(), "a client thread did not stop"
    # Transactions the writers never ended are aborted at their timeout at the latest.
    outcome = {}
    for w in writers:
        for n, (o, vals) in w.outcomes.items():
            for v in vals:
                outcome[v] = (o, (w.k, n))
    committed = {v for v, (o, _) in outcome.items() if o == "committed"}
    aborted = {v for v, (o, _) in outcome.items() if o == "aborted"}
    assert len(committed) > 50 and aborted, (len(committed), len(aborted))

    def settled():
        final = V.read(b.bootstrap, topic, parts)
        return len(final) >= len(committed) and final
    final = H.wait_until("the last transactions ended", settled, timeout=30)
    got = V.values(final)
    assert len(got) == len(set(got)), "duplicates: %r" % [v for v in set(got) if got.count(v) > 1][:10]
    assert not set(got) & aborted, "aborted read: %r" % sorted(set(got) & aborted)[:10]
    assert committed <= set(got), "lost committed writes: %r" % sorted(committed - set(got))[:10]
    assert set(got) <= set(outcome), sorted(set(got) - set(outcome))[:10]
    # An unknown transaction is all or nothing.
    by_txn = {}
    for v, (o, txn) in outcome.items():
        if o == "unknown":
            by_txn.setdefault(txn, []).append(v in set(got))
    partial = {t: xs for t, xs in by_txn.items() if any(xs) and not all(xs)}
    assert not partial, "transactions partly visible: %r" % partial
    # Offsets: read_committed skips exactly the records of transactions that did not
    # commit (and the markers, which no consumer sees).
    everything = V.read(b.bootstrap, topic, parts, committed=False)
    assert [x for x in everything if x[2] in set(got)] == final
    assert V.sql(b, topic) == final
    # Each live reader saw, per partition, a prefix of the final committed sequence: no
    # aborted read, no gap, no duplicate, through three kills.
    for r in readers:
        r.drain(final)
        for p in range(parts):
            mine = [x for x in r.seen if x[0] == p]
            want = [x for x in final if x[0] == p]
            assert mine == want[:len(mine)], (p, [x for x in mine if x not in want][:5], r.errors[:5])
            assert len(mine) == len(want), (p, len(mine), len(want), r.errors[:5])
    print("%d kills in %.0f s; %d committed records, %d aborted, %d unknown transactions (%d of them visible); "
          "client errors: %d" % (kills, time.monotonic() - t0, len(committed), len(aborted), len(by_txn),
                                 sum(1 for xs in by_txn.values() if all(xs)),
                                 sum(len(w.errors) for w in writers)))
