"""Incremental fetch sessions (KIP-227) on the wire: a full fetch opens a session, later
fetches name only what changed and get only partitions with something new, the epoch
and id are checked (INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_ID_NOT_FOUND), epoch -1
closes, and a full cache refuses or evicts as Kafka's does. Fetch v12 (topics by name)
and v13 (by id), with the declared messages of kproto_flex. The Java consumer, which
uses sessions (its FetchSessionHandler), reads records that arrive over many polls
exactly once and in order through incremental fetches."""

import re
import threading
import time

from confluent_kafka import Producer

import pytest

import java_client_helpers as JC
import kproto as K
import kproto_flex as F
import sluice_helpers as H

NONE, SESSION_NOT_FOUND, INVALID_EPOCH, TOPIC_ID_ERROR = 0, 70, 71, 106


def fetch(conn, session_id, epoch, parts=(), forget=(), version=12, max_wait_ms=0, min_bytes=0):
    """parts: [(topic, partition, offset)] to add or update; forget: [(topic, partition)]. A
    topic is a name (v12) or a 16-byte id (v13)."""
    by_topic, forgotten = {}, {}
    for t, p, off in parts:
        by_topic.setdefault(t, []).append(dict(partition=p, current_leader_epoch=-1, fetch_offset=off,
                                               last_fetched_epoch=-1, log_start_offset=-1,
                                               partition_max_bytes=1 << 20))
    for t, p in forget:
        forgotten.setdefault(t, []).append(p)
    key = "topic_id" if version >= 13 else "topic"
    req = dict(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=50 << 20,
               isolation_level=0, session_id=session_id, session_epoch=epoch,
               topics=[{key: t, "partitions": ps} for t, ps in by_topic.items()],
               forgotten_topics_data=[{key: t, "partitions": ps} for t, ps in forgotten.items()], rack_id="")
    if version >= 13:
        return F.call(conn, K.FETCH, 13, F.FETCH13_REQ, F.FETCH13_RESP, req)
    return F.call(conn, K.FETCH, F.FETCH_V, F.FETCH_REQ, F.FETCH_RESP, req)


def answered(resp, version=12):
    """{(topic, partition): [record values]} of the answer's partitions."""
    key = "topic_id" if version >= 13 else "topic"
    out = {}
    for t in resp["responses"]:
        for p in t["partitions"]:
            assert p["error_code"] == 0, p
            vals = [r.value for r in K.decode_batches(p["records"] or b"")[0]]
            out[(t[key], p["partition_index"])] = vals
    return out


def produce(conn, topic, partition, value):
    resp = F.produce(conn, topic, partition, K.encode_batch([(H.now_ms(), None, value, [])]))
    assert resp["responses"][0]["partition_responses"][0]["error_code"] == 0, resp


@pytest.fixture(scope="module")
def broker(module_broker_factory):
    # Debug logging: the broker logs each incremental fetch it serves.
    return module_broker_factory(extra_args=["--log-level", "debug"])


def make_topic(broker, name, partitions):
    with K.Conn(broker.bootstrap) as c:
        r = F.create_topics(c, [dict(name=name, num_partitions=partitions)])
        assert r["topics"][0]["error_code"] == 0, r
        return r["topics"][0]["topic_id"]


def test_session_by_name(broker, topic_name):
    t = topic_name
    make_topic(broker, t, 3)
    with K.Conn(broker.bootstrap) as c:
        produce(c, t, 0, b"a0")
        full = fetch(c, 0, 0, [(t, 0, 0), (t, 1, 0), (t, 2, 0)])
        sid = full["session_id"]
        assert full["error_code"] == NONE and sid != 0, full
        assert answered(full) == {(t, 0): [b"a0"], (t, 1): [], (t, 2): []}

        # Epoch 1 moves partition 0 past its record: nothing changed anywhere.
        r = fetch(c, sid, 1, [(t, 0, 1)])
        assert (r["error_code"], r["session_id"], r["responses"]) == (NONE, sid, [])

        # A record in partition 1: only it is answered, from the offset the session holds.
        produce(c, t, 1, b"b0")
        r = fetch(c, sid, 2)
        assert answered(r) == {(t, 1): [b"b0"]}
        assert r["responses"][0]["partitions"][0]["high_watermark"] == 1

        # Epoch 3 updates partition 1 and forgets partition 2.
        r = fetch(c, sid, 3, [(t, 1, 1)], forget=[(t, 2)])
        assert r["responses"] == []
        produce(c, t, 2, b"c0")
        r = fetch(c, sid, 4)
        assert r["responses"] == [], "a forgotten partition is no longer fetched"
        r = fetch(c, sid, 5, [(t, 2, 0)])
        assert answered(r) == {(t, 2): [b"c0"]}

        # Out of sequence, and an id the broker never gave.
        for bad_id, bad_epoch, code in ((sid, 5, INVALID_EPOCH), (sid, 7, INVALID_EPOCH),
                                        (sid ^ 0x5A5A, 6, SESSION_NOT_FOUND), (0, 3, SESSION_NOT_FOUND)):
            r = fetch(c, bad_id, bad_epoch)
            assert (r["error_code"], r["session_id"], r["responses"]) == (code, 0, []), (bad_id, bad_epoch, r)
        r = fetch(c, sid, 6, [(t, 2, 1)])
        assert (r["error_code"], r["responses"]) == (NONE, [])

        # Epoch -1 closes the session and is answered as a fetch without one.
        r = fetch(c, sid, -1, [(t, 0, 0)])
        assert r["session_id"] == 0 and answered(r) == {(t, 0): [b"a0"]}
        r = fetch(c, sid, 7)
        assert r["error_code"] == SESSION_NOT_FOUND


def test_incremental_long_poll(broker, topic_name):
    """A parked incremental fetch answers the partition that got data, and only it."""
    t = topic_name
    make_topic(broker, t, 4)
    with K.Conn(broker.bootstrap) as c:
        full = fetch(c, 0, 0, [(t, p, 0) for p in range(4)])
        sid = full["session_id"]
        assert sid != 0

        def later():
            time.sleep(0.3)
            with K.Conn(broker.bootstrap) as p:
                produce(p, t, 3, b"late")

        th = threading.Thread(target=later)
        start = time.monotonic()
        th.start()
        try:
            r = fetch(c, sid, 1, max_wait_ms=10000, min_bytes=1)
        finally:
            th.join(timeout=10)
        assert time.monotonic() - start < 8, "the parked fetch waited out its max_wait"
        assert answered(r) == {(t, 3): [b"late"]}


def test_session_by_topic_id(broker, topic_name):
    t = topic_name
    tid = make_topic(broker, t, 2)
    with K.Conn(broker.bootstrap) as c:
        produce(c, t, 1, b"x")
        full = fetch(c, 0, 0, [(tid, 0, 0), (tid, 1, 0)], version=13)
        sid = full["session_id"]
        assert sid != 0 and answered(full, 13) == {(tid, 0): [], (tid, 1): [b"x"]}
        r = fetch(c, sid, 1, [(tid, 1, 1)], forget=[(tid, 0)], version=13)
        assert r["error_code"] == NONE and r["responses"] == []
        produce(c, t, 0, b"y")
        produce(c, t, 1, b"z")
        r = fetch(c, sid, 2, version=13)
        assert answered(r, 13) == {(tid, 1): [b"z"]}, "partition 0 was forgotten by id"
        # A session opened by topic id cannot go on by name.
        r = fetch(c, sid, 3, version=12)
        assert (r["error_code"], r["responses"]) == (TOPIC_ID_ERROR, [])
        r = fetch(c, sid, 3, version=13)
        assert r["error_code"] == NONE


def test_cache_bound_and_eviction(broker_factory, topic_name):
    """Two slots, 2 s minimum eviction time: a third session is refused while both are in
    use; a session unused for longer gives its slot; a larger session takes the slot of a
    smaller one created long enough ago."""
    b = broker_factory(extra_args=["--max-incremental-fetch-session-cache-slots", "2",
                                   "--min-incremental-fetch-session-eviction-ms", "2000"])
    t = topic_name
    make_topic(b, t, 3)
    with K.Conn(b.bootstrap) as c:
        start = time.monotonic()
        a = fetch(c, 0, 0, [(t, 0, 0)])["session_id"]
        bb = fetch(c, 0, 0, [(t, 0, 0)])["session_id"]
        assert a != 0 and bb != 0 and a != bb
        refused = fetch(c, 0, 0, [(t, 0, 0), (t, 1, 0), (t, 2, 0)])
        assert time.monotonic() - start < 1.5, "too slow to test the eviction time"
        assert refused["session_id"] == 0 and len(refused["responses"][0]["partitions"]) == 3

        time.sleep(2.2)
        assert fetch(c, a, 1)["error_code"] == NONE  # a is used again; b is now stale
        cc = fetch(c, 0, 0, [(t, 1, 0)])["session_id"]
        assert cc != 0
        assert fetch(c, bb, 1)["error_code"] == SESSION_NOT_FOUND, "the stale session was evicted"

        # a (1 partition, created over 2 s ago) gives way to a session of 3; c is too young.
        d = fetch(c, 0, 0, [(t, 0, 0), (t, 1, 0), (t, 2, 0)])["session_id"]
        assert d != 0
        assert fetch(c, a, 2)["error_code"] == SESSION_NOT_FOUND
        assert fetch(c, cc, 1)["error_code"] == NONE
        assert fetch(c, d, 1)["error_code"] == NONE
        assert fetch(c, 0, 0, [(t, 2, 0)])["session_id"] == 0, "no slot for a small new session"


INCREMENTAL = re.compile(r"incremental fetch of session (\d+) at epoch (\d+): (\d+) added")


def test_java_consumer_reads_through_incremental_fetches(broker, topic_name, procs):
    partitions, rounds, per_round = 4, 6, 5
    H.create_topic(broker.bootstrap, topic_name, partitions)
    log_path = broker.stderr_paths[-1]
    log_from = log_path.stat().st_size  # only what the broker logs from here on
    member = JC.Member(procs, broker.bootstrap, "fs-" + topic_name, topic_name, "A")
    JC.wait_for("the member to own every partition", lambda: member.assignment() == set(range(partitions)))
    producer = Producer(H.producer_conf(broker.bootstrap))
    want = {p: [] for p in range(partitions)}
    for r in range(rounds):
        # Records arrive over time, on some partitions only, so that most fetches find
        # partitions with nothing new.
        for p in range(partitions):
            if (p + r) % 2 == 0:
                for i in range(per_round):
                    v = "r%d-p%d-%d" % (r, p, i)
                    producer.produce(topic_name, value=v.encode(), partition=p)
                    want[p].append(v)
        assert producer.flush(30) == 0
        time.sleep(0.4)
    total = sum(len(v) for v in want.values())
    JC.wait_for("every record consumed", lambda: len(member.values()) >= total, timeout=60)
    member.stop()
    got = {p: [] for p in range(partitions)}
    for p, off, v in member.values():
        got[p].append((off, v))
    for p in range(partitions):
        assert [o for o, _ in got[p]] == list(range(len(want[p]))), "partition %d: offsets" % p
        assert [v for _, v in got[p]] == want[p], "partition %d: each record once, in order" % p
    with open(log_path, "rb") as f:
        f.seek(log_from)
        log = f.read().decode(errors="replace")
    steady = [m for m in INCREMENTAL.finditer(log) if m.group(3) == "0"]
    assert len(steady) >= rounds, "the consumer's fetches were incremental:\n" + log[-3000:]
