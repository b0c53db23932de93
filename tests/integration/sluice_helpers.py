"""Shared helpers: deterministic test data, librdkafka (confluent-kafka) admin /
producer / consumer wrappers, and record comparison.

Consumers never join a group (Sluice has no consumer groups yet): they use
assign() with explicit offsets.  confluent-kafka 1.7 refuses to build a
Consumer without group.id ("group.id must be set"), so a throw-away group.id
is set, but the consumer never subscribes, commits or stores offsets, so no
group API is ever needed (librdkafka only sends APIs the broker advertises).
"""

import atexit
import hashlib
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

from confluent_kafka import (OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, Consumer, KafkaError, KafkaException,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

_counter = itertools.count()

# --------------------------------------------------------------------------
# Processes: everything the suite starts is registered and killed at the end.
# --------------------------------------------------------------------------
_ALL_PROCS = []
_ALL_PROCS_LOCK = threading.Lock()


def register_proc(proc):
    with _ALL_PROCS_LOCK:
        _ALL_PROCS.append(proc)
    return proc


def kill_proc(proc):
    if proc.poll() is None:
        try:
            proc.kill()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def kill_group(proc):
    """SIGKILL the process group led by proc (started with start_new_session=True), then reap it.

    Reaches the real broker even when SLUICE_BIN is a wrapper script."""
    # Only while the leader is alive (not yet reaped) is the group id certainly ours.
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    kill_proc(proc)


def kill_all_procs():
    with _ALL_PROCS_LOCK:
        procs = list(_ALL_PROCS)
    for p in procs:
        kill_proc(p)


atexit.register(kill_all_procs)


def built_binary(env_name, relative):
    """A program of the build next to $SLUICE_BIN (build/sluice by default), at RELATIVE
    below the build directory, or the path in $ENV_NAME; the test fails when it is not
    there."""
    import pytest
    path = os.environ.get(env_name)
    if not path:
        repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        sluice = os.environ.get("SLUICE_BIN") or os.path.join(repo, "build", "sluice")
        path = os.path.join(os.path.dirname(sluice), relative)
    if not os.access(path, os.X_OK):
        pytest.fail("%s not found at %s (build it, or set %s)" % (os.path.basename(relative), path, env_name),
                    pytrace=False)
    return path


def tail(path, n=60):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return "<cannot read %s: %s>" % (path, e)
    lines = data.decode("utf-8", "replace").splitlines()
    return "\n".join(lines[-n:])

# librdkafka settings shared by every client: IPv4 only (we listen on 127.0.0.1).
BASE_CONF = {"broker.address.family": "v4", "api.version.request": True}


def wait_until(what, fn, timeout=15.0, interval=0.1, errors=(AssertionError, OSError)):
    """Calls fn() until it returns a true value (returned); an exception in `errors`
    counts as "not yet". AssertionError after `timeout` s, naming the last outcome."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = fn()
            if v:
                return v
            last = v
        except errors as e:
            last = e
        if time.monotonic() > deadline:
            raise AssertionError("%s: not reached within %.0fs (last: %r)" % (what, timeout, last))
        time.sleep(interval)


def unique_topic(prefix="t"):
    clean = "".join(c if c.isalnum() or c in "-_" else "-" for c in prefix)[:60]
    return "%s-%d-%d-%s" % (clean, os.getpid(), next(_counter), uuid.uuid4().hex[:6])


def now_ms():
    return int(time.time() * 1000)


# --------------------------------------------------------------------------
# Deterministic data
# --------------------------------------------------------------------------


def key_for(i, prefix=b"k"):
    return prefix + b"%06d" % i


def value_for(i, salt=b""):
    """100..300 bytes, distinct per index and salt, binary (contains NULs etc.)."""
    digest = hashlib.sha256(salt + b"/%d" % i).digest()
    n = 100 + (i * 7919) % 201
    return ((b"v%06d|" % i) + digest * (n // 32 + 1))[:n]


def headers_for(i, salt=b""):
    digest = hashlib.sha256(b"h" + salt + b"/%d" % i).digest()
    return [("idx", b"%d" % i), ("sig", digest[:8] + b"\x00\xff")]


# --------------------------------------------------------------------------
# Admin
# --------------------------------------------------------------------------


def admin_client(bootstrap, **extra):
    conf = dict(BASE_CONF)
    conf["bootstrap.servers"] = bootstrap
    conf.update(extra)
    return AdminClient(conf)


def create_topic(bootstrap, name, partitions, config=None, timeout=30.0):
    adm = admin_client(bootstrap)
    nt = NewTopic(name, num_partitions=partitions, replication_factor=1, config=dict(config or {}))
    fs = adm.create_topics([nt], request_timeout=15.0, operation_timeout=10.0)
    assert set(fs) == {name}
    assert fs[name].result(timeout=timeout) is None
    return wait_topic(bootstrap, name, partitions)


def wait_topic(bootstrap, name, partitions, timeout=20.0, adm=None):
    """Wait until Metadata shows `name` with `partitions` partitions, each with a leader.
    `adm`: the AdminClient to ask (one with credentials), else a plain one on `bootstrap`."""
    if adm is None:
        adm = admin_client(bootstrap)
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        md = adm.list_topics(timeout=10)
        t = md.topics.get(name)
        if t is not None and t.error is None and len(t.partitions) == partitions and all(
                p.leader >= 0 and p.error is None for p in t.partitions.values()):
            assert sorted(t.partitions) == list(range(partitions))
            if "," in bootstrap:
                wait_topic_on_each(bootstrap.split(","), name, partitions, deadline)
            return md
        last = t
        time.sleep(0.2)
    raise AssertionError("topic %s not visible with %d partitions in Metadata within %.0fs (last: %r)"
                         % (name, partitions, timeout, last))


def wait_topic_on_each(addresses, name, partitions, deadline):
    """Until each broker of a shared-mode cluster (cluster_mode.py) knows the topic: the
    others read the topics every half second (docs/shared-mode.md), and a client asking
    one of them sooner gets the retriable UNKNOWN_TOPIC_OR_PARTITION."""
    import kproto as K
    for addr in addresses:
        while True:
            with K.Conn(addr) as conn:
                t = K.metadata_v1(conn, [name])["topics"].get(name)
            if t is not None and t["error"] == 0 and len(t["partitions"]) == partitions:
                break
            if time.monotonic() > deadline:
                raise AssertionError("topic %s not known with %d partitions at %s in time (last: %r)"
                                     % (name, partitions, addr, t))
            time.sleep(0.1)


def list_topic_names(bootstrap):
    md = admin_client(bootstrap).list_topics(timeout=10)
    return set(md.topics)


def topic_listed_anywhere(bootstrap, name):
    """Whether any broker of the bootstrap list (each asked alone) still lists the topic."""
    import kproto as K
    for addr in bootstrap.split(","):
        with K.Conn(addr) as conn:
            if name in K.metadata_v1(conn, None)["topics"]:
                return True
    return False


# --------------------------------------------------------------------------
# Producing
# --------------------------------------------------------------------------


def producer_conf(bootstrap, **extra):
    conf = dict(BASE_CONF)
    conf.update({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": False,
        "compression.type": "none",
        "linger.ms": 5,
        "message.timeout.ms": 60000,
        "queue.buffering.max.messages": 500000,
        "queue.buffering.max.kbytes": 1048576,
    })
    conf.update(extra)
    return conf


class Delivery:
    __slots__ = ("err", "partition", "offset", "timestamp")

    def __init__(self, err, partition, offset, timestamp):
        self.err = err
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp

    def __repr__(self):
        return "Delivery(err=%r, p=%r, o=%r, ts=%r)" % (self.err, self.partition, self.offset, self.timestamp)


def produce_all(producer, topic, records, timeout=90.0):
    """records: list of dicts with key, value, headers, timestamp and optional partition.

    Returns a list of Delivery (same order as records); every record must be
    delivered successfully.
    """
    dr = [None] * len(records)

    def make_cb(i):
        def cb(err, msg):
            if err is not None:
                dr[i] = Delivery(err, None, None, None)
            else:
                dr[i] = Delivery(None, msg.partition(), msg.offset(), msg.timestamp())
        return cb

    deadline = time.monotonic() + timeout
    for i, r in enumerate(records):
        kwargs = dict(key=r["key"], value=r["value"], on_delivery=make_cb(i))
        if r.get("headers") is not None:
            kwargs["headers"] = r["headers"]
        if r.get("timestamp") is not None:
            kwargs["timestamp"] = r["timestamp"]
        if r.get("partition") is not None:
            kwargs["partition"] = r["partition"]
        while True:
            try:
                producer.produce(topic, **kwargs)
                break
            except BufferError:
                producer.poll(0.05)
                assert time.monotonic() < deadline, "producer queue stayed full until timeout"
        if i % 1000 == 0:
            producer.poll(0)
    while time.monotonic() < deadline:
        if producer.flush(1.0) == 0:
            break
    left = producer.flush(0)
    assert left == 0, "%d messages still undelivered after %.0fs" % (left, timeout)
    producer.poll(0)
    missing = [i for i, d in enumerate(dr) if d is None]
    assert not missing, "no delivery report for %d records (first: %r)" % (len(missing), missing[:5])
    failed = [(i, d.err) for i, d in enumerate(dr) if d.err is not None]
    assert not failed, "%d records failed delivery, first: %r" % (len(failed), failed[:5])
    return dr


def produce_one(producer, topic, key, value, partition=None, headers=None, timestamp=None, timeout=30.0):
    """Produce one record and return its Delivery (err may be set)."""
    box = []

    def cb(err, msg):
        box.append(Delivery(err, msg.partition() if err is None else None,
                            msg.offset() if err is None else None, msg.timestamp() if err is None else None))

    kwargs = dict(key=key, value=value, on_delivery=cb)
    if partition is not None:
        kwargs["partition"] = partition
    if headers is not None:
        kwargs["headers"] = headers
    if timestamp is not None:
        kwargs["timestamp"] = timestamp
    producer.produce(topic, **kwargs)
    deadline = time.monotonic() + timeout
    while not box and time.monotonic() < deadline:
        producer.flush(0.5)
    assert box, "no delivery report within %.0fs" % timeout
    return box[0]


# --------------------------------------------------------------------------
# Consuming (assign only, no group membership)
# --------------------------------------------------------------------------


def consumer_conf(bootstrap, **extra):
    conf = dict(BASE_CONF)
    conf.update({
        "bootstrap.servers": bootstrap,
        # Required by confluent-kafka 1.7; never used (no subscribe/commit).
        "group.id": "sluice-it-unused-" + uuid.uuid4().hex[:8],
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error",
        "check.crcs": True,
        "fetch.wait.max.ms": 100,
    })
    conf.update(extra)
    return conf


def make_consumer(bootstrap, **extra):
    return Consumer(consumer_conf(bootstrap, **extra))


def msg_to_dict(m):
    tstype, ts = m.timestamp()
    return dict(partition=m.partition(), offset=m.offset(), key=m.key(), value=m.value(),
                headers=m.headers(), timestamp_type=tstype, timestamp=ts)


def high_watermarks(bootstrap, topic, partitions):
    """{partition: high watermark}, asked of the broker (not cached)."""
    c = make_consumer(bootstrap)
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(partitions)}
    finally:
        c.close()


def consume_all(bootstrap, topic, expected_counts, timeout=60.0, consumer=None):
    """Read partitions {p: n} from the beginning until partition EOF at offset n.

    Returns the list of records (dicts) in arrival order.  Fails if the end is
    not reached in time or a partition's end lies beyond the expected count.
    """
    own = consumer is None
    c = consumer or make_consumer(bootstrap)
    out = []
    errors = []
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(expected_counts)])
        eof = {}
        deadline = time.monotonic() + timeout
        last_progress = time.monotonic()
        while True:
            done = all(eof.get(p) == n for p, n in expected_counts.items())
            if done:
                break
            # Every partition reported its end, short of the expectation, and nothing new for 10 s.
            stalled = len(eof) == len(expected_counts) and time.monotonic() - last_progress > 10
            if stalled or time.monotonic() > deadline:
                got = {}
                for r in out:
                    got[r["partition"]] = got.get(r["partition"], 0) + 1
                raise AssertionError(
                    "consumer did not reach the expected end (%s): expected %r, got counts %r, "
                    "end of partition at %r, errors %r" % (
                        "stalled at the end of every partition" if stalled else "timeout %.0fs" % timeout,
                        expected_counts, got, eof, errors[:10]))
            for m in c.consume(num_messages=10000, timeout=0.5):
                last_progress = time.monotonic()
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        eof[m.partition()] = m.offset()
                        assert m.offset() <= expected_counts[m.partition()], (
                            "partition %d ends at %d, beyond the expected %d records"
                            % (m.partition(), m.offset(), expected_counts[m.partition()]))
                    else:
                        errors.append(err)
                        if err.fatal():
                            raise AssertionError("fatal consumer error: %r" % err)
                    continue
                assert m.topic() == topic
                out.append(msg_to_dict(m))
    finally:
        if own:
            c.close()
    return out


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------


def counts_by_partition(positions):
    counts = {}
    for p, _ in positions:
        counts[p] = counts.get(p, 0) + 1
    return counts


def assert_contiguous(positions, what="records"):
    """positions: iterable of (partition, offset); offsets per partition must be exactly 0..n-1."""
    per = {}
    for p, o in positions:
        per.setdefault(p, []).append(o)
    for p, offs in per.items():
        offs.sort()
        assert offs == list(range(len(offs))), (
            "%s in partition %d: offsets not contiguous from 0 (first few: %r, n=%d, max=%d)"
            % (what, p, offs[:10], len(offs), offs[-1]))


def assert_records_match(expected, got, check_timestamp=True, max_report=15):
    """expected: {(partition, offset): dict(key, value, headers, timestamp)}; got: list of dicts."""
    seen = {}
    dups = []
    for r in got:
        pos = (r["partition"], r["offset"])
        if pos in seen:
            dups.append(pos)
        seen[pos] = r
    assert not dups, "duplicate (partition, offset) delivered to the consumer: %r" % dups[:10]
    missing = sorted(set(expected) - set(seen))
    extra = sorted(set(seen) - set(expected))
    assert not missing and not extra, "record positions differ: %d missing (first %r), %d unexpected (first %r)" % (
        len(missing), missing[:10], len(extra), extra[:10])
    bad = []
    for pos in sorted(expected):
        e = expected[pos]
        g = seen[pos]
        diffs = []
        for field in ("key", "value", "headers"):
            if field in e and e[field] != g[field]:
                diffs.append("%s: expected %r got %r" % (field, _short(e[field]), _short(g[field])))
        if check_timestamp and "timestamp" in e:
            if g.get("timestamp_type", TIMESTAMP_CREATE_TIME) != TIMESTAMP_CREATE_TIME:
                diffs.append("timestamp type %r (expected CreateTime)" % (g.get("timestamp_type"),))
            if e["timestamp"] != g["timestamp"]:
                diffs.append("timestamp: expected %r got %r" % (e["timestamp"], g["timestamp"]))
        if diffs:
            bad.append("%r: %s" % (pos, "; ".join(diffs)))
            if len(bad) >= max_report:
                break
    assert not bad, "%s record(s) differ:\n  %s" % (
        "at least %d" % len(bad) if len(bad) >= max_report else len(bad), "\n  ".join(bad))
    return len(expected)


def _short(v):
    if isinstance(v, bytes) and len(v) > 40:
        return v[:40] + b"...(%d bytes)" % len(v)
    return v


def kafka_exception_code(exc):
    assert isinstance(exc, KafkaException), "expected KafkaException, got %r" % (exc,)
    return exc.args[0].code()


class ProducerProc:
    """crash_producer.py in a process of its own (so that a test can kill the broker under
    it): collects the BASE and ACK lines it prints. `extra` adds arguments (--values,
    --rate)."""

    def __init__(self, bootstrap, topic, partitions, start_seq, log_path, procs, seconds=40, extra=()):
        self.lines = []
        self.buf = b""
        self.log_path = log_path
        self.errf = open(log_path, "wb")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crash_producer.py")
        self.proc = register_proc(subprocess.Popen(
            [sys.executable, script, bootstrap, topic, "--partitions", str(partitions),
             "--start-seq", str(start_seq), "--seconds", str(seconds)] + list(extra),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.errf))
        procs.append(self.proc)
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        fd = self.proc.stdout
        while True:
            chunk = fd.read1(65536)
            if not chunk:
                break
            with self.lock:
                self.buf += chunk
                *complete, self.buf = self.buf.split(b"\n")
                self.lines.extend(complete)

    def ack_count(self):
        with self.lock:
            return sum(1 for ln in self.lines if ln.startswith(b"ACK "))

    def finish(self):
        """Kills the producer; returns (base timestamp, [(partition, offset, seq)])."""
        kill_proc(self.proc)
        self.thread.join(timeout=10)
        self.errf.close()
        # An unterminated trailing fragment (self.buf) is ignored on purpose.
        base = None
        acks = []
        for ln in self.lines:
            parts = ln.split()
            if parts and parts[0] == b"BASE":
                base = int(parts[1])
            elif parts and parts[0] == b"ACK":
                acks.append((int(parts[1]), int(parts[2]), int(parts[3])))
        return base, acks
