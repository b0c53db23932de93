"""Helpers for the consumer-group tests: bounded polling, librdkafka group members
run on their own threads (or in a subprocess, to be SIGKILLed), and group
lookups through the raw protocol.

A `GroupMember` subscribes a confluent-kafka Consumer and polls it on a thread.
Its assignment is tracked from the on_assign / on_revoke callbacks inside a
`GroupView` shared by all members of a test, under one lock, so a snapshot of
every member's partitions is taken atomically.  Handled records are kept as
(partition, offset, key, value, member); when `commit` is set, each polled
batch is committed synchronously after it was handled and before the next
poll, which is what "commit after processing" means.
"""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition

import kproto as K
import sluice_helpers as H

HERE = Path(__file__).resolve().parent
MEMBER_PROC = HERE / "group_member_proc.py"

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500


def wait_for(pred, timeout, what, interval=0.05):
    """Poll pred() until it returns something truthy (returned); AssertionError after timeout.

    `what` is a string or a callable returning one (evaluated only on failure)."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            desc = what() if callable(what) else what
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, desc))
        time.sleep(interval)


def group_consumer_conf(bootstrap, group, **extra):
    conf = dict(H.BASE_CONF)
    conf.update({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
        # Also the rebalance timeout librdkafka sends in JoinGroup; bounds every rebalance.
        "max.poll.interval.ms": 20000,
        "fetch.wait.max.ms": 100,
        "check.crcs": True,
        "enable.partition.eof": False,
    })
    conf.update(extra)
    return conf


class GroupView:
    """Assignments of every member of one test, updated from rebalance callbacks."""

    def __init__(self):
        self.lock = threading.Lock()
        self.assigned = {}   # member name -> frozenset of partitions (live members only)
        self.events = []     # (monotonic time, member, "assign"|"revoke"|"closed", partitions)

    def set(self, name, kind, partitions):
        with self.lock:
            if kind == "assign":
                self.assigned[name] = frozenset(partitions)
            elif kind == "revoke":
                self.assigned[name] = frozenset()
            else:  # closed
                self.assigned.pop(name, None)
            self.events.append((time.monotonic(), name, kind, sorted(partitions)))

    def snapshot(self):
        with self.lock:
            return dict(self.assigned)

    def check_disjoint(self):
        """Assignments of the live members never overlap; returns the snapshot."""
        snap = self.snapshot()
        seen = {}
        for name, parts in snap.items():
            for p in parts:
                assert p not in seen, "partition %d assigned to %s and %s at the same time: %r" % (
                    p, seen[p], name, snap)
                seen[p] = name
        return snap

    def covered(self, names, partitions):
        """Snapshot if the members `names` (all nonempty) together own exactly `partitions`."""
        snap = self.check_disjoint()
        if set(snap) != set(names):
            return None
        if any(not snap[n] for n in names):
            return None
        union = set().union(*snap.values())
        return snap if union == set(partitions) else None


class GroupMember:
    """A librdkafka consumer in a group, polled on its own thread."""

    def __init__(self, view, name, conf, topic, commit=True, batch=100, per_message_delay=0.0):
        self.view = view
        self.name = name
        self.topic = topic
        self.conf = dict(conf)
        self.conf.setdefault("client.id", name)
        self.commit = commit
        self.batch = batch
        self.per_message_delay = per_message_delay
        self.records = []          # (partition, offset, key, value)
        self.errors = []           # consumer errors and failed commits
        self.committed = {}        # partition -> last offset committed successfully
        self.pending = {}          # partition -> offset handled but not yet committed
        self.commit_failures = []  # batch commits that failed (retried at revoke)
        self.lib_assignment = frozenset()  # consumer.assignment() after the latest poll
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._closed = threading.Event()
        self.close_returned_at = None
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name="member-%s" % name, daemon=True)
        self.thread.start()
        assert self.ready.wait(15), "consumer %s did not start" % name

    # rebalance callbacks run on the polling thread
    def _on_assign(self, consumer, partitions):
        for tp in partitions:
            assert tp.topic == self.topic, "assigned a partition of another topic: %r" % tp
        self.view.set(self.name, "assign", [tp.partition for tp in partitions])

    def _on_revoke(self, consumer, partitions):
        # Records handled whose batch commit failed (e.g. refused during the rebalance) are
        # committed here, while this member still owns them; a failure now is an error.
        revoked = {tp.partition for tp in partitions}
        with self.lock:
            retry = {p: o for p, o in self.pending.items() if p in revoked}
        if retry:
            self._commit(consumer, retry, final=True)
        self.view.set(self.name, "revoke", sorted(revoked))

    def _run(self):
        c = None
        try:
            c = Consumer(self.conf)
            c.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
            self.ready.set()
            while not self._stop.is_set():
                msgs = c.consume(num_messages=self.batch, timeout=0.1)
                upto = {}
                for m in msgs:
                    err = m.error()
                    if err is not None:
                        with self.lock:
                            self.errors.append(("consume", err))
                        continue
                    if self.per_message_delay:
                        time.sleep(self.per_message_delay)
                    with self.lock:
                        self.records.append((m.partition(), m.offset(), m.key(), m.value()))
                    upto[m.partition()] = m.offset() + 1
                if upto and self.commit:
                    self._commit(c, upto)
                # What librdkafka itself reports, to cross-check the callbacks.
                lib = frozenset(tp.partition for tp in c.assignment())
                with self.lock:
                    self.lib_assignment = lib
        except Exception as e:  # reported through .errors and asserted by the tests
            with self.lock:
                self.errors.append(("thread", repr(e)))
        finally:
            self.ready.set()
            if c is not None:
                try:
                    c.close()
                except Exception as e:
                    with self.lock:
                        self.errors.append(("close", repr(e)))
            self.close_returned_at = time.monotonic()
            self.view.set(self.name, "closed", [])
            self._closed.set()

    def _commit(self, c, upto, final=False):
        tps = [TopicPartition(self.topic, p, o) for p, o in sorted(upto.items())]
        failures = []
        try:
            res = c.commit(offsets=tps, asynchronous=False)
        except KafkaException as e:
            failures.append(("commit", e.args[0], dict(upto)))
            res = []
        with self.lock:
            for tp in res or []:
                if tp.error is not None:
                    failures.append(("commit", tp.error, tp.partition, tp.offset))
                else:
                    self.committed[tp.partition] = tp.offset
                    if self.pending.get(tp.partition, -1) <= tp.offset:
                        self.pending.pop(tp.partition, None)
            if failures:
                for p, o in upto.items():
                    self.pending[p] = max(o, self.pending.get(p, -1))
                (self.errors if final else self.commit_failures).extend(failures)

    def close(self, timeout=30):
        """Stop polling and close the consumer (LeaveGroup); returns when close() returned."""
        self._stop.set()
        assert self._closed.wait(timeout), "consumer %s did not close within %ds" % (self.name, timeout)
        self.thread.join(5)

    def handled(self):
        with self.lock:
            return list(self.records)

    def count(self):
        with self.lock:
            return len(self.records)

    def assignment(self):
        with self.lock:
            return self.lib_assignment

    def errors_snapshot(self):
        with self.lock:
            return list(self.errors)


def close_all(members):
    for m in members:
        if not m._closed.is_set():
            m.close()


# --------------------------------------------------------------------------
# A member in a subprocess (group_member_proc.py), so that it can be SIGKILLed.
# --------------------------------------------------------------------------


class ProcMember:
    """Runs group_member_proc.py and collects its JSON-line events."""

    def __init__(self, procs, bootstrap, group, topic, name, per_message_delay_ms=0, commit_every=1,
                 session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS):
        cmd = [sys.executable, str(MEMBER_PROC), "--bootstrap", bootstrap, "--group", group, "--topic", topic,
               "--client-id", name, "--per-message-delay-ms", str(per_message_delay_ms),
               "--commit-every", str(commit_every), "--session-timeout-ms", str(session_timeout_ms),
               "--heartbeat-interval-ms", str(heartbeat_interval_ms)]
        self.name = name
        self.proc = H.register_proc(subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(HERE)))
        procs.append(self.proc)
        self.lock = threading.Lock()
        self.events = []
        self.stderr = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()
        self._te = threading.Thread(target=self._read_err, daemon=True)
        self._te.start()

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            try:
                ev = json.loads(raw)
            except ValueError:
                ev = {"ev": "garbage", "line": raw.decode("utf-8", "replace")}
            ev["t"] = time.monotonic()
            with self.lock:
                self.events.append(ev)

    def _read_err(self):
        for raw in iter(self.proc.stderr.readline, b""):
            with self.lock:
                self.stderr.append(raw.decode("utf-8", "replace"))

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def assignment(self):
        """Current partitions according to the last assign/revoke event."""
        cur = None
        for ev in self.snapshot():
            if ev["ev"] == "assign":
                cur = frozenset(ev["partitions"])
            elif ev["ev"] == "revoke":
                cur = frozenset()
        return cur

    def records(self):
        return [(ev["p"], ev["o"], bytes.fromhex(ev["k"]) if ev["k"] is not None else None,
                 bytes.fromhex(ev["v"]) if ev["v"] is not None else None)
                for ev in self.snapshot() if ev["ev"] == "rec"]

    def kill9(self):
        self.proc.kill()
        self.proc.wait(timeout=10)
        t = time.monotonic()
        self._t.join(5)
        return t

    def stderr_tail(self):
        with self.lock:
            return "".join(self.stderr[-30:])


# --------------------------------------------------------------------------
# Raw protocol lookups
# --------------------------------------------------------------------------


def committed_raw(bootstrap, group, topic, partitions, version=5):
    """OffsetFetch: {partition: (offset, metadata)} for the given partitions (offset -1: none)."""
    with K.Conn(bootstrap) as conn:
        err, offs = K.offset_fetch_one(conn, version, group, {topic: list(partitions)})
    assert err == 0, "OffsetFetch top-level error %d" % err
    out = {}
    for (t, p), (off, meta, perr) in offs.items():
        assert t == topic and perr == 0, "OffsetFetch %s/%d error %d" % (t, p, perr)
        out[p] = (off, meta)
    assert set(out) == set(partitions), "OffsetFetch answered partitions %r, asked %r" % (sorted(out), partitions)
    return out


def list_groups_raw(bootstrap, version=4, states=None):
    with K.Conn(bootstrap) as conn:
        err, groups = K.list_groups(conn, version, states)
    assert err == 0, "ListGroups error %d" % err
    return groups


def describe_group_raw(bootstrap, group, version=5):
    with K.Conn(bootstrap) as conn:
        res = K.describe_groups(conn, version, [group])
    assert len(res) == 1 and res[0]["group_id"] == group, res
    return res[0]


def expected_by_position(records, deliveries):
    return {(d.partition, d.offset): r for r, d in zip(records, deliveries)}


def produce_records(bootstrap, topic, n, partitions, salt=b"", start=0):
    """Produce n records round-robin over `partitions`; returns {(p, o): (key, value)}."""
    from confluent_kafka import Producer
    recs = [dict(key=H.key_for(i), value=H.value_for(i, salt), partition=i % partitions)
            for i in range(start, start + n)]
    p = Producer(H.producer_conf(bootstrap))
    dr = H.produce_all(p, topic, recs)
    out = {}
    for r, d in zip(recs, dr):
        assert d.partition == r["partition"]
        out[(d.partition, d.offset)] = (r["key"], r["value"])
    return out


def assert_exact_records(expected, handled, what):
    """expected {(p, o): (key, value)}; handled list of (p, o, key, value): every record exactly once."""
    seen = {}
    dups = []
    for p, o, k, v in handled:
        if (p, o) in seen:
            dups.append((p, o))
        seen[(p, o)] = (k, v)
    missing = sorted(set(expected) - set(seen))
    extra = sorted(set(seen) - set(expected))
    assert not missing and not extra, "%s: %d records missing (first %r), %d unexpected (first %r)" % (
        what, len(missing), missing[:10], len(extra), extra[:10])
    bad = [pos for pos in expected if seen[pos] != expected[pos]]
    assert not bad, "%s: %d records differ from what was produced, first at %r" % (what, len(bad), bad[:5])
    assert not dups, "%s: %d records handled more than once, first %r" % (what, len(dups), sorted(dups)[:10])
