"""DeleteRecords and retention: the log start offset moves forward, and every
client sees the same new start.

DeleteRecords v0-2 is sent raw (kproto): neither confluent-kafka 1.7 nor
kafka-python 2.0.2 has it.  The log start is read with ListOffsets (earliest)
and Fetch v5 (which answers it); the records are read back with librdkafka,
kafka-python and raw fetches, and compared with what was produced.

Retention runs every `--log-retention-check-interval-ms` (500 ms here).  Records
are produced raw, one batch each, so that segment boundaries are known:
with segment.bytes=1024 a segment rolls when the next batch would not fit, and
the `big` batch (between 816 and 992 bytes) never fits after another batch, so it
closes the old records' segments and the first recent record starts a new one.
Old records carry CreateTime "now - 1 hour"; recent ones "now", with retention.ms
long enough (30 s) that they cannot expire while a test runs.

Absence ("nothing more was deleted") is checked after a `pass_barrier`: a control
topic whose single expired record is removed by every retention pass, observed
three times, which proves a whole pass ran after the state under test was set.
"""

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition
from kafka.errors import OffsetOutOfRangeError

import group_helpers as G
import kproto as K
import sluice_helpers as H

CHECK_INTERVAL_MS = 500
RETENTION_ARGS = ["--log-retention-check-interval-ms", str(CHECK_INTERVAL_MS),
                  "--group-initial-rebalance-delay-ms", "0"]
HOUR_MS = 3600 * 1000
SEGMENT_BYTES = 1024  # the floor
SEGMENT_HEADER = 32   # Sluice's segment file header, counted in a partition's size
RECENT_RETENTION_MS = "30000"
CONSUMER_RESET_ERRORS = (K.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET)


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def retention_broker(broker_factory, extra=()):
    return broker_factory(extra_args=RETENTION_ARGS + list(extra))


def produce_batches(bootstrap, topic, records, partition=0):
    """records: list of (timestamp, key, value), one batch each, in order; returns their offsets."""
    offsets = []
    with K.Conn(bootstrap) as conn:
        for ts, key, value in records:
            p = K.produce_v3(conn, topic, partition, K.encode_batch([(ts, key, value, [])]))
            assert p["error"] == K.NONE, "produce to %s/%d: %r" % (topic, partition, p)
            offsets.append(p["base_offset"])
    return offsets


def batch_size(record):
    ts, key, value = record
    return len(K.encode_batch([(ts, key, value, [])]))


def aged_records(salt=b"", n_old=12, n_new=5):
    """(old, new): old records an hour old ending with the `big` batch, then recent ones."""
    now = H.now_ms()
    old = [(now - HOUR_MS + i, H.key_for(i, b"old"), H.value_for(i, b"old" + salt)) for i in range(n_old)]
    old.append((now - HOUR_MS + n_old, H.key_for(n_old, b"old"), b"B" * 820 + salt))
    new = [(now + i, H.key_for(i, b"new"), H.value_for(i, b"new" + salt)) for i in range(n_new)]
    # The big batch fits an empty segment but never one that already holds a batch.
    smallest = min(batch_size(r) for r in old[:-1] + new)
    assert SEGMENT_BYTES - smallest - SEGMENT_HEADER < batch_size(old[-1]) <= SEGMENT_BYTES - SEGMENT_HEADER
    return old, new


def list_offsets(bootstrap, topic, partition=0):
    """(log start, high watermark) from ListOffsets earliest and latest."""
    with K.Conn(bootstrap) as conn:
        return K.log_start_offset(conn, topic, partition), K.high_watermark(conn, topic, partition)


def log_start(bootstrap, topic, partition=0):
    return list_offsets(bootstrap, topic, partition)[0]


def wait_log_start(bootstrap, topic, pred, timeout=15.0, partition=0, what="the log start"):
    """Poll ListOffsets earliest until pred(offset); returns the offset."""
    seen = []

    def check():
        off = log_start(bootstrap, topic, partition)
        seen.append(off)
        return pred(off)

    G.wait_for(check, timeout, lambda: "%s of %s/%d (last ListOffsets earliest: %r)" % (
        what, topic, partition, seen[-3:]), interval=0.1)
    return seen[-1]


def make_control_topic(bootstrap, name):
    H.create_topic(bootstrap, name, 1, config={"retention.ms": "1000"})


def pass_barrier(bootstrap, control, rounds=3):
    """Returns once a whole retention pass ran after the call: each round produces one expired
    record to `control` and waits until a pass removed it.  Passes are sequential, so the pass
    that removes round 3's record starts after the one that removed round 2's has ended, and
    that one started after round 1's record was gone, that is after this call."""
    for _ in range(rounds):
        (off,) = produce_batches(bootstrap, control, [(H.now_ms() - HOUR_MS, b"tick", b"tick")])
        wait_log_start(bootstrap, control, lambda s: s > off, timeout=10, what="the control topic's log start")


def confluent_read(bootstrap, topic, start_offset, end, partition=0, reset="earliest", group=None,
                   timeout=30.0):
    """Read with librdkafka from `start_offset` (assign) or from a group's committed offset
    (subscribe, when group is set) until offset `end`; returns the record dicts.  Fails on any
    consumer error."""
    conf = H.consumer_conf(bootstrap, **{"auto.offset.reset": reset, "enable.partition.eof": False})
    if group is not None:
        conf["group.id"] = group
    c = Consumer(conf)
    out = []
    try:
        if group is None:
            c.assign([TopicPartition(topic, partition, start_offset)])
        else:
            c.subscribe([topic])
        deadline = time.monotonic() + timeout
        while not out or out[-1]["offset"] < end - 1:
            assert time.monotonic() < deadline, "librdkafka did not reach offset %d of %s/%d in %.0fs (got %d records%s)" % (
                end, topic, partition, timeout, len(out), ", last %d" % out[-1]["offset"] if out else "")
            for m in c.consume(num_messages=1000, timeout=0.2):
                assert m.error() is None, "consumer error: %r" % m.error()
                out.append(H.msg_to_dict(m))
    finally:
        c.close()
    return out


def confluent_reset_error(bootstrap, topic, start_offset, partition=0, group=None, timeout=20.0):
    """With auto.offset.reset=error, positioned below the log start: the consumer reports an
    offset-out-of-range error and delivers no record.  Returns the KafkaError."""
    conf = H.consumer_conf(bootstrap, **{"auto.offset.reset": "error", "enable.partition.eof": False})
    if group is not None:
        conf["group.id"] = group
    c = Consumer(conf)
    try:
        if group is None:
            c.assign([TopicPartition(topic, partition, start_offset)])
        else:
            c.subscribe([topic])
        deadline = time.monotonic() + timeout
        while True:
            assert time.monotonic() < deadline, "no offset-out-of-range error within %.0fs" % timeout
            for m in c.consume(num_messages=100, timeout=0.2):
                err = m.error()
                assert err is not None, "record delivered below the log start: %r" % (H.msg_to_dict(m),)
                if err.code() in CONSUMER_RESET_ERRORS:
                    return err
                assert not err.fatal(), err
    finally:
        c.close()


def kp_consumer(bootstrap, reset):
    return KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                         client_id="sluice-it-retention", auto_offset_reset=reset, check_crcs=True,
                         fetch_max_wait_ms=100, request_timeout_ms=30000, api_version_auto_timeout_ms=10000)


def kp_read_from(bootstrap, topic, offset, end, partition=0, timeout=30.0):
    """kafka-python, auto_offset_reset=earliest, seek(offset), read until `end`; returns records."""
    c = kp_consumer(bootstrap, "earliest")
    out = []
    try:
        tp = KTopicPartition(topic, partition)
        c.assign([tp])
        c.seek(tp, offset)
        deadline = time.monotonic() + timeout
        while not out or out[-1].offset < end - 1:
            assert time.monotonic() < deadline, "kafka-python did not reach offset %d (got %d records)" % (end, len(out))
            for recs in c.poll(timeout_ms=200).values():
                out.extend(recs)
    finally:
        c.close()
    return out


def kp_out_of_range(bootstrap, topic, offset, partition=0, timeout=20.0):
    """kafka-python with auto_offset_reset='none' raises OffsetOutOfRangeError at `offset`."""
    c = kp_consumer(bootstrap, "none")
    try:
        tp = KTopicPartition(topic, partition)
        c.assign([tp])
        c.seek(tp, offset)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                got = c.poll(timeout_ms=200)
            except OffsetOutOfRangeError as e:
                return e
            assert not got, "kafka-python got records at offset %d: %r" % (offset, got)
        raise AssertionError("kafka-python saw no OffsetOutOfRangeError at offset %d within %.0fs" % (offset, timeout))
    finally:
        c.close()


def assert_exact(got, expected_by_offset, what):
    """got: record dicts (librdkafka) or kafka-python records; expected {offset: (key, value)}."""
    pairs = []
    for r in got:
        if isinstance(r, dict):
            pairs.append((r["offset"], (r["key"], r["value"])))
        else:
            pairs.append((r.offset, (r.key, r.value)))
    offsets = [o for o, _ in pairs]
    assert offsets == sorted(expected_by_offset), "%s: offsets %s, expected %s" % (
        what, _ranges(offsets), _ranges(sorted(expected_by_offset)))
    bad = [o for o, kv in pairs if kv != expected_by_offset[o]]
    assert not bad, "%s: records differ at offsets %r" % (what, bad[:10])


def _ranges(offsets):
    if not offsets:
        return "[]"
    if offsets == list(range(offsets[0], offsets[-1] + 1)):
        return "%d..%d" % (offsets[0], offsets[-1])
    return repr(offsets[:20])


def raw_fetch_error(bootstrap, topic, offset, partition=0):
    with K.Conn(bootstrap) as conn:
        p = K.fetch_v5(conn, topic, partition, offset)
    return p["error"], p


def retention_lines(broker, topic):
    """Lines of the broker's current stderr naming retention and the topic."""
    text = H.tail(broker.stderr_paths[-1], 100000)
    return [ln for ln in text.splitlines() if "retention" in ln and topic in ln]


def produce_keyed(bootstrap, topic, partition, n, salt):
    """n records through librdkafka (batched); returns {offset: (key, value)}."""
    now = H.now_ms()
    records = [dict(key=H.key_for(i), value=H.value_for(i, salt), timestamp=now + i, partition=partition)
               for i in range(n)]
    dr = H.produce_all(Producer(H.producer_conf(bootstrap)), topic, records)
    return {d.offset: (r["key"], r["value"]) for r, d in zip(records, dr)}


# --------------------------------------------------------------------------
# DeleteRecords
# --------------------------------------------------------------------------


def test_delete_records(broker_factory, topic_name):
    b = broker_factory()
    H.create_topic(b.bootstrap, topic_name, 2)
    p0 = produce_keyed(b.bootstrap, topic_name, 0, 100, b"p0")
    p1 = produce_keyed(b.bootstrap, topic_name, 1, 30, b"p1")
    assert sorted(p0) == list(range(100)) and sorted(p1) == list(range(30))

    with K.Conn(b.bootstrap) as conn:
        assert K.delete_records(conn, 0, {topic_name: [(0, 40)]}) == {(topic_name, 0): (40, 0)}
    assert list_offsets(b.bootstrap, topic_name, 0) == (40, 100)
    assert list_offsets(b.bootstrap, topic_name, 1) == (0, 30)

    # Below the log start: OFFSET_OUT_OF_RANGE; at it, the records from 40 on.
    for off in (0, 10, 39):
        err, p = raw_fetch_error(b.bootstrap, topic_name, off)
        assert err == K.OFFSET_OUT_OF_RANGE, "fetch at %d: %r" % (off, p)
    with K.Conn(b.bootstrap) as conn:
        recs, _, last = K.fetch_range_v5(conn, topic_name, 0, 40)
    assert last["log_start_offset"] == 40, last
    assert_exact([dict(offset=r.offset, key=r.key, value=r.value) for r in recs],
                 {o: p0[o] for o in range(40, 100)}, "raw fetch from 40")
    # ListOffsets by a timestamp older than every record: the first record still there.
    with K.Conn(b.bootstrap) as conn:
        at = K.list_offsets(conn, topic_name, {0: 0})[0]
    assert (at["error"], at["offset"]) == (0, 40), at
    kp_out_of_range(b.bootstrap, topic_name, 10)
    assert_exact(kp_read_from(b.bootstrap, topic_name, 10, 100), {o: p0[o] for o in range(40, 100)},
                 "kafka-python (earliest) from 10")
    assert_exact(confluent_read(b.bootstrap, topic_name, OFFSET_BEGINNING, 100), {o: p0[o] for o in range(40, 100)},
                 "librdkafka from the beginning")
    assert_exact(confluent_read(b.bootstrap, topic_name, 10, 100), {o: p0[o] for o in range(40, 100)},
                 "librdkafka (earliest) from 10")
    confluent_reset_error(b.bootstrap, topic_name, 10)

    with K.Conn(b.bootstrap) as conn:
        # Below the current start: nothing moves, the answer is the current start.
        assert K.delete_records(conn, 1, {topic_name: [(0, 20)]}) == {(topic_name, 0): (40, 0)}
        # Above the high watermark, or negative other than -1.
        res = K.delete_records(conn, 2, {topic_name: [(0, 150)]})
        assert res[(topic_name, 0)][1] == K.OFFSET_OUT_OF_RANGE, res
        res = K.delete_records(conn, 0, {topic_name: [(0, -5)]})
        assert res[(topic_name, 0)][1] == K.OFFSET_OUT_OF_RANGE, res
        # Unknown partition, unknown topic.
        res = K.delete_records(conn, 1, {topic_name: [(9, 1)], topic_name + "-missing": [(0, 1)]})
        assert res[(topic_name, 9)][1] == K.UNKNOWN_TOPIC_OR_PARTITION, res
        assert res[(topic_name + "-missing", 0)][1] == K.UNKNOWN_TOPIC_OR_PARTITION, res
    assert list_offsets(b.bootstrap, topic_name, 0) == (40, 100)

    # -1: up to the high watermark; two partitions in one request.
    with K.Conn(b.bootstrap) as conn:
        res = K.delete_records(conn, 2, {topic_name: [(0, -1), (1, 10)]})
    assert res == {(topic_name, 0): (100, 0), (topic_name, 1): (10, 0)}, res
    assert list_offsets(b.bootstrap, topic_name, 0) == (100, 100)
    assert list_offsets(b.bootstrap, topic_name, 1) == (10, 30)
    c = Consumer(H.consumer_conf(b.bootstrap, **{"auto.offset.reset": "earliest"}))
    try:
        got = H.consume_all(b.bootstrap, topic_name, {0: 100, 1: 30}, consumer=c)
    finally:
        c.close()
    assert_exact([r for r in got if r["partition"] == 0], {}, "partition 0 after deleting everything")
    assert_exact([r for r in got if r["partition"] == 1], {o: p1[o] for o in range(10, 30)}, "partition 1")
    # The log goes on at the high watermark.
    offs = produce_batches(b.bootstrap, topic_name, [(H.now_ms(), b"after", b"after %d" % i) for i in range(5)])
    assert offs == list(range(100, 105))
    assert_exact(confluent_read(b.bootstrap, topic_name, OFFSET_BEGINNING, 105),
                 {100 + i: (b"after", b"after %d" % i) for i in range(5)}, "records after DeleteRecords -1")


def test_delete_records_survives_restart(broker_factory, topic_name):
    b = broker_factory()
    H.create_topic(b.bootstrap, topic_name, 1)
    data = produce_keyed(b.bootstrap, topic_name, 0, 100, b"restart")
    with K.Conn(b.bootstrap) as conn:
        assert K.delete_records(conn, 1, {topic_name: [(0, 40)]}) == {(topic_name, 0): (40, 0)}

    b.stop()
    b.start()
    assert list_offsets(b.bootstrap, topic_name) == (40, 100)
    assert raw_fetch_error(b.bootstrap, topic_name, 39)[0] == K.OFFSET_OUT_OF_RANGE
    assert_exact(confluent_read(b.bootstrap, topic_name, OFFSET_BEGINNING, 100), {o: data[o] for o in range(40, 100)},
                 "after a clean restart")

    with K.Conn(b.bootstrap) as conn:
        assert K.delete_records(conn, 0, {topic_name: [(0, 65)]}) == {(topic_name, 0): (65, 0)}
    b.kill9()
    b.start()
    assert list_offsets(b.bootstrap, topic_name) == (65, 100)
    assert raw_fetch_error(b.bootstrap, topic_name, 64)[0] == K.OFFSET_OUT_OF_RANGE
    assert_exact(confluent_read(b.bootstrap, topic_name, OFFSET_BEGINNING, 100), {o: data[o] for o in range(65, 100)},
                 "after kill -9")
    assert produce_batches(b.bootstrap, topic_name, [(H.now_ms(), b"next", b"next")]) == [100]
    b.restart()
    assert list_offsets(b.bootstrap, topic_name) == (65, 101)

    # A topic created again under the same name starts at offset 0.
    adm = H.admin_client(b.bootstrap)
    fs = adm.delete_topics([topic_name], request_timeout=15, operation_timeout=10)
    for f in fs.values():
        assert f.result(timeout=30) is None
    G.wait_for(lambda: topic_name not in H.list_topic_names(b.bootstrap), 15, "the deleted topic to leave Metadata",
               interval=0.2)
    H.create_topic(b.bootstrap, topic_name, 1)
    assert list_offsets(b.bootstrap, topic_name) == (0, 0)
    assert produce_batches(b.bootstrap, topic_name, [(H.now_ms(), b"again", b"again")]) == [0]
    assert_exact(confluent_read(b.bootstrap, topic_name, OFFSET_BEGINNING, 1), {0: (b"again", b"again")},
                 "the re-created topic")


# --------------------------------------------------------------------------
# Retention
# --------------------------------------------------------------------------


def test_time_retention_deletes_only_expired_segments(broker_factory, topic_name):
    b = retention_broker(broker_factory)
    control = H.unique_topic("clock")  # a name that does not contain topic_name
    make_control_topic(b.bootstrap, control)
    H.create_topic(b.bootstrap, topic_name, 1, config={"segment.bytes": str(SEGMENT_BYTES),
                                                      "retention.ms": RECENT_RETENTION_MS})
    old, new = aged_records()
    offsets = produce_batches(b.bootstrap, topic_name, old + new)
    assert offsets == list(range(len(old) + len(new)))
    first_new, end = len(old), len(old) + len(new)
    expected = {first_new + i: (k, v) for i, (_, k, v) in enumerate(new)}

    start = wait_log_start(b.bootstrap, topic_name, lambda s: s > 0, what="time retention to move the log start")
    pass_barrier(b.bootstrap, control)
    # Every old segment is gone, and nothing recent.
    assert list_offsets(b.bootstrap, topic_name) == (first_new, end), "log start %d after the first move" % start
    assert raw_fetch_error(b.bootstrap, topic_name, 0)[0] == K.OFFSET_OUT_OF_RANGE
    assert raw_fetch_error(b.bootstrap, topic_name, first_new - 1)[0] == K.OFFSET_OUT_OF_RANGE
    got = confluent_read(b.bootstrap, topic_name, OFFSET_BEGINNING, end)
    assert_exact(got, expected, "librdkafka from the beginning")
    assert [r["timestamp"] for r in got] == [ts for ts, _, _ in new]
    assert retention_lines(b, topic_name), "no broker log line about retention naming %s:\n%s" % (
        topic_name, b.stderr_tail(20))


def test_size_retention(broker_factory, topic_name):
    retention_bytes = 4096
    b = retention_broker(broker_factory)
    control = H.unique_topic("clock")  # a name that does not contain topic_name
    make_control_topic(b.bootstrap, control)
    H.create_topic(b.bootstrap, topic_name, 1, config={"segment.bytes": str(SEGMENT_BYTES),
                                                      "retention.bytes": str(retention_bytes)})
    now = H.now_ms()
    records = [(now + i, H.key_for(i), H.value_for(i, b"size")) for i in range(80)]
    sizes = [batch_size(r) for r in records]
    assert sum(sizes) > 20000
    assert produce_batches(b.bootstrap, topic_name, records) == list(range(80))

    def readable():
        start, hw = list_offsets(b.bootstrap, topic_name)
        with K.Conn(b.bootstrap) as conn:
            recs, spans, last = K.fetch_range_v5(conn, topic_name, 0, start)
        return start, hw, recs, spans, last

    # Allowed: at most one segment above retention.bytes.  Sluice also counts each segment's
    # 32-byte file header in a partition's size, so the records alone may be short of
    # retention.bytes by one header per remaining segment (at most 10 of them here), never
    # by a whole segment.
    upper = retention_bytes + SEGMENT_BYTES
    lower = retention_bytes - 10 * SEGMENT_HEADER
    def settled():
        start = list_offsets(b.bootstrap, topic_name)[0]
        try:
            return sum(s[2] for s in readable()[3]) <= upper
        except AssertionError:
            # Retention may delete segments between the ListOffsets and the Fetch that follows
            # it (OFFSET_OUT_OF_RANGE): not settled yet.  Any other failure is a failure.
            if list_offsets(b.bootstrap, topic_name)[0] > start:
                return False
            raise

    G.wait_for(settled, 15,
               lambda: "size retention to bring the partition to <= %d bytes (log start, hw: %r)" % (
                   upper, list_offsets(b.bootstrap, topic_name)), interval=0.2)
    pass_barrier(b.bootstrap, control)
    start, hw, recs, spans, last = readable()
    total = sum(s[2] for s in spans)
    assert hw == 80 and start > 0, (start, hw)
    assert spans[0][0] == start, "the log start %d is not a batch boundary: %r" % (start, spans[:2])
    assert last["log_start_offset"] == start, last
    assert lower <= total <= upper, "%d bytes of records remain from offset %d (allowed %d..%d)" % (
        total, start, lower, upper)
    assert total == sum(sizes[start:])
    # The newest records are all there, intact.
    assert [(r.offset, r.key, r.value) for r in recs] == [(o, records[o][1], records[o][2]) for o in range(start, 80)]


def test_consumers_before_the_log_start_reset(broker_factory, topic_name):
    b = retention_broker(broker_factory)
    H.create_topic(b.bootstrap, topic_name, 1, config={"segment.bytes": str(SEGMENT_BYTES), "retention.bytes": "4096"})
    groups = {name: "ret-%s-%s" % (name, uuid.uuid4().hex[:8]) for name in ("earliest", "error")}
    with K.Conn(b.bootstrap) as conn:
        for g in groups.values():
            assert K.offset_commit(conn, 8, g, {topic_name: [(0, 0, None)]}) == {(topic_name, 0): 0}
    now = H.now_ms()
    records = [(now + i, H.key_for(i), H.value_for(i, b"reset")) for i in range(80)]
    assert produce_batches(b.bootstrap, topic_name, records) == list(range(80))
    start = wait_log_start(b.bootstrap, topic_name, lambda s: s > 0, what="size retention to move the log start")
    # Settled: what remains fits in retention.bytes plus one segment, and no retention pass
    # moves the log start any more (the bound above ignores segment headers, which the
    # broker counts, so one more pass may still delete a segment): the same log start on
    # either side of three check intervals.
    def settled():
        before = log_start(b.bootstrap, topic_name)
        if sum(batch_size(r) for r in records[before:]) > 4096 + SEGMENT_BYTES:
            return False
        time.sleep(3 * CHECK_INTERVAL_MS / 1000)
        return log_start(b.bootstrap, topic_name) == before

    G.wait_for(settled, 30, "size retention to settle", interval=0.2)
    start, hw = list_offsets(b.bootstrap, topic_name)
    assert hw == 80 and 0 < start < 80
    expected = {o: (records[o][1], records[o][2]) for o in range(start, 80)}

    # Committed offset 0 lies below the log start.
    assert_exact(confluent_read(b.bootstrap, topic_name, None, 80, group=groups["earliest"]), expected,
                 "group member with committed offset 0, auto.offset.reset=earliest")
    err = confluent_reset_error(b.bootstrap, topic_name, None, group=groups["error"])
    assert err.code() in CONSUMER_RESET_ERRORS, err
    # Assigned at offset 0.
    assert_exact(confluent_read(b.bootstrap, topic_name, 0, 80), expected, "assign at 0, auto.offset.reset=earliest")
    confluent_reset_error(b.bootstrap, topic_name, 0)
    assert_exact(kp_read_from(b.bootstrap, topic_name, 0, 80), expected, "kafka-python seek(0), earliest")
    kp_out_of_range(b.bootstrap, topic_name, 0)
    assert list_offsets(b.bootstrap, topic_name) == (start, 80)


def test_retention_after_restart_on_unread_partition(broker_factory, topic_name):
    # First run: the default check interval (5 minutes), so no pass runs before the restart.
    b = broker_factory()
    H.create_topic(b.bootstrap, topic_name, 2, config={"segment.bytes": str(SEGMENT_BYTES),
                                                      "retention.ms": RECENT_RETENTION_MS})
    old, new = aged_records()
    for p in (0, 1):
        assert produce_batches(b.bootstrap, topic_name, old + new, partition=p) == list(range(len(old) + len(new)))
    assert list_offsets(b.bootstrap, topic_name, 0) == (0, len(old) + len(new))
    b.stop()

    b.extra_args += ["--log-retention-check-interval-ms", str(CHECK_INTERVAL_MS)]
    b.start()
    # Nothing reads the partitions until the broker says retention removed their old segments.
    G.wait_for(lambda: all(any("%s-%d" % (topic_name, p) in ln for ln in retention_lines(b, topic_name))
                           for p in (0, 1)), 15,
               lambda: "a retention log line for %s-0 and -1 after the restart:\n%s" % (topic_name, b.stderr_tail(20)),
               interval=0.2)
    first_new, end = len(old), len(old) + len(new)
    for p in (0, 1):
        assert list_offsets(b.bootstrap, topic_name, p) == (first_new, end)
    assert_exact(confluent_read(b.bootstrap, topic_name, OFFSET_BEGINNING, end, partition=1),
                 {first_new + i: (k, v) for i, (_, k, v) in enumerate(new)}, "partition 1 after the restart")


def test_retention_ms_change_takes_effect(broker_factory, topic_name):
    b = retention_broker(broker_factory)
    control = H.unique_topic("clock")  # a name that does not contain topic_name
    make_control_topic(b.bootstrap, control)
    H.create_topic(b.bootstrap, topic_name, 1, config={"segment.bytes": str(SEGMENT_BYTES)})
    old, new = aged_records()
    assert produce_batches(b.bootstrap, topic_name, old + new) == list(range(len(old) + len(new)))
    first_new, end = len(old), len(old) + len(new)

    # Default retention (7 days): an hour-old record stays, pass after pass.
    pass_barrier(b.bootstrap, control)
    assert list_offsets(b.bootstrap, topic_name) == (0, end)

    def set_retention(value, version):
        op = K.OP_SET if value is not None else K.OP_DELETE
        with K.Conn(b.bootstrap) as conn:
            (res,) = K.incremental_alter_configs(conn, version, [(K.RESOURCE_TOPIC, topic_name,
                                                                  [("retention.ms", op, value)])])
        assert res["error"] == 0, res

    set_retention(RECENT_RETENTION_MS, 1)
    wait_log_start(b.bootstrap, topic_name, lambda s: s > 0, timeout=10, what="the new retention.ms to apply")
    pass_barrier(b.bootstrap, control)
    assert list_offsets(b.bootstrap, topic_name) == (first_new, end)
    assert_exact(confluent_read(b.bootstrap, topic_name, OFFSET_BEGINNING, end),
                 {first_new + i: (k, v) for i, (_, k, v) in enumerate(new)}, "after retention.ms=30000")

    # 1 s: now the recent records are expired too, the active segment included.
    set_retention("1000", 0)
    wait_log_start(b.bootstrap, topic_name, lambda s: s == end, timeout=10, what="retention.ms=1000 to empty the log")
    assert list_offsets(b.bootstrap, topic_name) == (end, end)
    # Back to the default: the log continues at the high watermark and keeps what comes.
    set_retention(None, 1)
    assert produce_batches(b.bootstrap, topic_name, [(H.now_ms(), b"last", b"last")]) == [end]
    pass_barrier(b.bootstrap, control)
    assert list_offsets(b.bootstrap, topic_name) == (end, end + 1)
    assert_exact(confluent_read(b.bootstrap, topic_name, OFFSET_BEGINNING, end + 1), {end: (b"last", b"last")},
                 "after emptying the log")
