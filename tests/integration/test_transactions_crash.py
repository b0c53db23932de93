"""Transactions across a broker killed with kill -9 (issue 34), with librdkafka's
transactional producer (Debian's confluent-kafka 1.7, the original protocol): in each
phase of a transaction -- open (records written, no EndTxn), after EndTxn was answered,
and while the markers of a transaction over many partitions are being written (also with
raw transaction version 2 requests, whose EndTxn retry must not be fenced) -- and, in
test_random_transactions_with_kill9, in a randomized check in the spirit of Jepsen's
Kafka workload, with librdkafka and with franz-go (go/cmd/franzjepsen, TV2) writers.
After each restart no read_committed consumer and no SQL query (kafka_topics."T") sees
a record of a transaction that did not commit, and every committed transaction is
whole. One broker (fixed port, SQL on) serves the phase tests, another the randomized
check: its ten restarts then recover its own few partitions, not the 300 of the marker
tests' topics (seconds each on a busy machine).
"""

import json
import random
import socket
import subprocess
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

import sluice_helpers as H
import sql_helpers as S
import kproto as K
import txn_views as V
from test_go_clients import GO_DIR


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def crash_broker(factory):
    return factory(listen="127.0.0.1:%d" % free_port(),
                   extra_args=S.SQL_ARGS + ["--log-level", "debug", "--transaction-abort-check-interval-ms", "200"])


@pytest.fixture(scope="module")
def b(module_broker_factory):
    return crash_broker(module_broker_factory)


@pytest.fixture(scope="module")
def jb(module_broker_factory):
    """test_random_transactions_with_kill9's broker."""
    return crash_broker(module_broker_factory)


@pytest.fixture(scope="module", autouse=True)
def franzjepsen(tmp_path_factory):
    """go/cmd/franzjepsen, built while the module's first tests run (linking it takes
    seconds, tens of them on a busy machine): a function returning the program's path."""
    exe = tmp_path_factory.mktemp("go") / "franzjepsen"
    build = H.register_proc(subprocess.Popen(["go", "build", "-o", str(exe), "./cmd/franzjepsen"], cwd=GO_DIR,
                                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT))

    def built():
        out, _ = build.communicate(timeout=300)
        assert build.returncode == 0, out.decode(errors="replace")[-3000:]
        return exe
    yield built
    if build.poll() is None:
        build.kill()
        build.wait()


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


def kill9_at_markers(b, parts, start_commit, nth=1):
    """Starts the commit (start_commit()), kills the broker as soon as it logs that it is
    writing the markers to the `parts` partitions for the nth time from now, starts it
    again; whether the kill came before the commit completed."""
    log = b.stderr_paths[-1]
    line = b"markers to %d partitions" % parts
    seen_before = log.read_bytes().count(line)
    start_commit()
    deadline = time.monotonic() + 30
    while log.read_bytes().count(line) < seen_before + nth:
        assert time.monotonic() < deadline, H.tail(log)
        time.sleep(0.001)
    b.kill9()
    mid_way = "transaction committed" not in log.read_text(errors="replace").split(line.decode())[-1]
    b.start()
    return mid_way


def test_kill9_while_markers_are_written_completes_the_commit(b):
    """librdkafka (transaction version 1)."""
    topic, parts = "crash-markers", 100
    H.create_topic(b.bootstrap, topic, parts)
    caught_mid_way = 0
    committed = []
    for rnd in range(3):
        p = txn_producer(b, "crash-markers-%d" % rnd)
        recs = one_txn(p, topic, parts, "m%d" % rnd, n=1, end=None)
        t = threading.Thread(target=lambda: _ignore(lambda: p.commit_transaction(30)), daemon=True)
        caught_mid_way += kill9_at_markers(b, parts, t.start)
        t.join(40)
        # PrepareCommit was stored before the first marker: the restart completes it.
        committed += recs
        assert_views(b, topic, parts, committed, [])
    print("killed before the commit completed in %d of 3 rounds" % caught_mid_way)


def raw(bootstrap, api_key, version, body):
    """One flexible request on a new connection; the Reader of its answer's body."""
    with K.Conn(bootstrap) as c:
        return c.roundtrip(api_key, version, body + K.uvarint(0), header_version=2, response_header_version=1)


def test_kill9_while_markers_are_written_tv2_retry_is_not_fenced(b):
    """Transaction version 2 (raw InitProducerId v4, AddPartitionsToTxn v3, EndTxn v5): an
    EndTxn retried after the restart while the broker completes that commit gets
    CONCURRENT_TRANSACTIONS, as in Kafka, then the commit's answer (the bumped epoch) --
    it was once answered PRODUCER_FENCED, and a client gave up on a transaction that
    committed (found by test_random_transactions_with_kill9[franz-go])."""
    topic, parts, tid = "crash-markers-tv2", 200, "raw-tv2"
    H.create_topic(b.bootstrap, topic, parts)
    r = raw(b.bootstrap, 22, 4, K.compact_string(tid) + K.i32(10000) + K.i64(-1) + K.i16(-1))
    r.i32()
    assert r.i16() == 0
    pid, epoch = r.i64(), r.i16()
    r = raw(b.bootstrap, 24, 3, K.compact_string(tid) + K.i64(pid) + K.i16(epoch) + K.uvarint(2) +
            K.compact_string(topic) + K.uvarint(parts + 1) + b"".join(K.i32(p) for p in range(parts)) + K.uvarint(0))
    end_body = K.compact_string(tid) + K.i64(pid) + K.i16(epoch) + K.i8(1)
    with K.Conn(b.bootstrap) as c:
        mid_way = kill9_at_markers(b, parts, lambda: c.send_request(26, 5, end_body + K.uvarint(0), 2))
    answers = []
    deadline = time.monotonic() + 30
    while not answers or answers[-1][0] == 51:  # CONCURRENT_TRANSACTIONS: retry
        assert time.monotonic() < deadline, answers[-5:]
        try:
            r = raw(b.bootstrap, 26, 5, end_body)
        except OSError:
            continue
        r.i32()
        answers.append((r.i16(), r.i64(), r.i16()))
    assert answers[-1] == (0, pid, epoch + 1), (answers, mid_way)
    assert all(a[0] in (0, 51) for a in answers), answers
    print("killed before the commit completed: %s; answers after the restart: %r" % (
        mid_way, sorted(set(a[0] for a in answers))))


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


class GoWriters:
    """franz-go's writers (go/cmd/franzjepsen, transaction version 2) in one process,
    with the same outcomes as TxnWriter's."""

    def __init__(self, b, topic, parts, seconds, tmp_path, exe):
        self.out = tmp_path / "franzjepsen.out"
        with open(self.out, "wb") as out:
            self.proc = H.register_proc(subprocess.Popen(
                [str(exe), "-bootstrap", b.bootstrap, "-topic", topic, "-partitions", "3",
                 "-per-codec", str(seconds)], stdout=out, stderr=subprocess.STDOUT, start_new_session=True))

    def finish(self):
        self.proc.wait(90)
        lines = [json.loads(x) for x in self.out.read_text().splitlines() if x.startswith("{")]
        assert self.proc.returncode == 0 and lines[-1]["kind"] == "done", lines[-5:]
        txns = [x for x in lines if x["kind"] == "txn"]
        self.errors = [x["error"] for x in txns if x["error"]]
        return {v: (x["outcome"], ("go", x["writer"], x["n"])) for x in txns for v in x["values"]}


@pytest.mark.parametrize("client", ["librdkafka", "franz-go"])
def test_random_transactions_with_kill9(jb, client, tmp_path, franzjepsen):
    """TxnWriter's or GoWriters' transactions and two LiveReaders while the broker is
    killed five times; then the read_committed view, SQL and each reader are checked."""
    topic, parts = "jepsen-" + client, 3
    H.create_topic(jb.bootstrap, topic, parts)
    stop = threading.Event()
    rng = random.Random(34)
    pauses = [rng.uniform(4, 7) for _ in range(5)]
    go, writers = None, []
    if client == "librdkafka":
        writers = [TxnWriter(jb, topic, parts, k, stop) for k in range(3)]
    else:
        go = GoWriters(jb, topic, parts, int(sum(pauses)) + 6, tmp_path, franzjepsen())
    readers = [LiveReader(jb, topic, parts, stop) for _ in range(2)]
    for t in writers + readers:
        t.start()
    t0 = time.monotonic()
    kills = 0
    for pause in pauses:
        time.sleep(pause)
        restart(jb)
        kills += 1
    time.sleep(6)
    outcome = go.finish() if go else {}
    stop.set()
    for t in writers + readers:
        t.join(60)
        assert not t.is_alive(), "a client thread did not stop"
    # Transactions the writers never ended are aborted at their timeout at the latest.
    for w in writers:
        for n, (o, vals) in w.outcomes.items():
            for v in vals:
                outcome[v] = (o, (w.k, n))
    if go:
        # Each writer has its own transactional id: only a timeout may fence one. A retried
        # EndTxn that came while a restarted broker was still writing its markers was once
        # fenced, and the client gave up on a transaction that committed.
        fenced = [e for e in go.errors if "PRODUCER_FENCED" in e]
        timeouts = [ln for p in jb.stderr_paths for ln in p.read_text(errors="replace").splitlines()
                    if "'jepsen-go-" in ln and "longer than its timeout" in ln]
        assert not fenced or timeouts, fenced[:3]
    committed = {v for v, (o, _) in outcome.items() if o == "committed"}
    aborted = {v for v, (o, _) in outcome.items() if o == "aborted"}
    assert len(committed) > 50 and aborted, (len(committed), len(aborted))

    def settled():
        final = V.read(jb.bootstrap, topic, parts)
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
    everything = V.read(jb.bootstrap, topic, parts, committed=False)
    visible = set(got)
    assert [x for x in everything if x[2] in visible] == final
    assert V.sql(jb, topic) == final
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
                                 sum(len(w.errors) for w in writers) + (len(go.errors) if go else 0)))
