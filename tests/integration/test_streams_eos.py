"""Kafka Streams 4.3.1 with processing.guarantee=exactly_once_v2 against Sluice (issue 34):
tests/jvm StreamsCount counts the records of each key (an in-memory store backed by its
changelog topic, the record cache off, so each input record gives one output record,
the key's new count). It is killed with kill -9 mid-way and started again on the same
state directory: the restarted instance restores the counts from the changelog,
read_committed, and goes on from the offsets its last committed transaction stored.
Exactly once means each key's committed outputs are 1, 2, ..., N in order: a count
repeated or skipped would be an input counted twice or lost.
"""

import subprocess
import time

import jvm_helpers as J
import sluice_helpers as H
import txn_views as V
from confluent_kafka import Producer

KEYS, PER_KEY, PARTS = 8, 150, 4


def start_app(b, procs, state_dir, log, delay_ms):
    out = open(log, "ab")
    p = subprocess.Popen(J.java_command("dev.sluice.jvmtests.streams.StreamsCount", b.bootstrap, "eos-count",
                                        "eos-in", "eos-out", state_dir, delay_ms, 240),
                         stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    out.close()
    procs.append(p)
    H.register_proc(p)
    return p


def counts_by_key(b):
    """{key: [committed counts in offset order]} of the output topic."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(H.consumer_conf(b.bootstrap, **{"isolation.level": "read_committed"}))
    c.assign([TopicPartition("eos-out", p, 0) for p in range(PARTS)])
    got, at_end = {}, set()
    deadline = time.monotonic() + 30
    while len(at_end) < PARTS and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            at_end.add(m.partition())
            continue
        at_end.discard(m.partition())
        got.setdefault(m.key().decode(), []).append(int(m.value()))
    c.close()
    return got


def test_exactly_once_v2_count_survives_kill9_of_the_application(broker_factory, procs, tmp_path):
    b = broker_factory(extra_args=["--transaction-abort-check-interval-ms", "1000"])
    H.create_topic(b.bootstrap, "eos-in", PARTS)
    H.create_topic(b.bootstrap, "eos-out", PARTS)
    p = Producer(H.producer_conf(b.bootstrap, **{"enable.idempotence": True}))
    for i in range(PER_KEY):
        for k in range(KEYS):
            p.produce("eos-in", key=b"k%d" % k, value=b"%d" % i)
    assert p.flush(30) == 0
    state, log = tmp_path / "state", tmp_path / "streams.log"
    app = start_app(b, procs, state, log, delay_ms=5)

    def progress():
        return sum(len(v) for v in counts_by_key(b).values())
    # Mid-way: some output committed, much of the input still to do.
    H.wait_until("the application committed output", lambda: progress() >= 150, timeout=120, interval=0.5)
    H.kill_group(app)
    app.wait(10)
    before = progress()
    assert before < KEYS * PER_KEY, "the application finished before it was killed"
    app = start_app(b, procs, state, log, delay_ms=0)

    def finished():
        got = counts_by_key(b)
        return len(got) == KEYS and all(v and v[-1] >= PER_KEY for v in got.values()) and got
    try:
        got = H.wait_until("every key counted to %d" % PER_KEY, finished, timeout=150, interval=1)
    finally:
        H.kill_group(app)
        tail = H.tail(log, 40)
    for k in range(KEYS):
        assert got["k%d" % k] == list(range(1, PER_KEY + 1)), ("k%d" % k, got["k%d" % k][:20], tail)
    # The output holds more than the committed records: what the killed instance wrote in
    # its open transaction was aborted, never shown.
    stored = V.read(b.bootstrap, "eos-out", PARTS, committed=False)
    print("killed after %d committed outputs; %d output records stored for %d committed" % (
        before, len(stored), KEYS * PER_KEY))
