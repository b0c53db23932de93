"""Raw InitProducerId / DescribeProducers / idempotent Produce for the idempotence tests
(not a test module). Flexible versions use compact encodings and tagged fields."""

import kproto as K

INIT_PRODUCER_ID = 22
DESCRIBE_PRODUCERS = 61
WRITE_TXN_MARKERS = 27
DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66
COORDINATOR_NOT_AVAILABLE = 15
CLUSTER_AUTHORIZATION_FAILED = 31
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
UNKNOWN_PRODUCER_ID = 59
INVALID_RECORD = 87

T = K.EMPTY_TAGS


def carray(items, enc):
    return K.uvarint(len(items) + 1) + b"".join(enc(x) for x in items)


def init_producer_id_v1(conn, transactional_id=None):
    r = conn.roundtrip(INIT_PRODUCER_ID, 1, K.nullable_string(transactional_id) + K.i32(60000))
    return dict(throttle=r.i32(), error=r.i16(), producer_id=r.i64(), epoch=r.i16())


def init_producer_id_flexible(conn, version, transactional_id=None, producer_id=-1, epoch=-1):
    body = K.compact_string(transactional_id) + K.i32(60000)
    if version >= 3:
        body += K.i64(producer_id) + K.i16(epoch)
    r = conn.roundtrip(INIT_PRODUCER_ID, version, body + T, header_version=2,
                       response_header_version=1)
    out = dict(throttle=r.i32(), error=r.i16(), producer_id=r.i64(), epoch=r.i16())
    r.tagged_fields()
    return out


def txn_coordinator(conn, transactional_id):
    """The "HOST:PORT" of the transactional id's coordinator (FindCoordinator, key type 1):
    one broker of a cluster (the others answer its InitProducerId NOT_COORDINATOR), the
    broker itself alone."""
    (c,) = K.find_coordinator(conn, 4, [transactional_id], key_type=1)
    assert c["error"] == 0, c
    return "%s:%d" % (c["host"], c["port"])


def describe_producers(conn, topic, partitions):
    body = carray([topic], lambda n: K.compact_string(n) + carray(partitions, K.i32) + T) + T
    r = conn.roundtrip(DESCRIBE_PRODUCERS, 0, body, header_version=2, response_header_version=1)
    r.i32()

    def producer(x):
        d = dict(producer_id=x.i64(), epoch=x.i32(), last_sequence=x.i32(), last_timestamp=x.i64(),
                 coordinator_epoch=x.i32(), txn_start=x.i64())
        x.tagged_fields()
        return d

    def part(x):
        d = dict(partition=x.i32(), error=x.i16(), message=x.compact_string(),
                 producers=x.compact_array(producer))
        x.tagged_fields()
        return d

    topics = r.compact_array(lambda x: (x.compact_string(), x.compact_array(part), x.tagged_fields()))
    r.tagged_fields()
    assert topics[0][0] == topic
    return {p["partition"]: p for p in topics[0][1]}


def describe_transactions(conn, ids):
    """DescribeTransactions v0: {id: dict(error, state, timeout, start, producer_id, epoch,
    partitions=[(topic, partition)])}."""
    r = conn.roundtrip(DESCRIBE_TRANSACTIONS, 0, carray(ids, K.compact_string) + T, header_version=2,
                       response_header_version=1)
    r.i32()

    def topic(x):
        name = x.compact_string()
        parts = x.compact_array(lambda y: y.i32())
        x.tagged_fields()
        return [(name, p) for p in parts]

    def state(x):
        d = dict(error=x.i16(), id=x.compact_string(), state=x.compact_string(), timeout=x.i32(),
                 start=x.i64(), producer_id=x.i64(), epoch=x.i16())
        d["partitions"] = [tp for t in x.compact_array(topic) for tp in t]
        x.tagged_fields()
        return d

    out = {d["id"]: d for d in r.compact_array(state)}
    r.tagged_fields()
    return out


def list_transactions(conn, version=1, states=(), producer_ids=(), duration=-1, pattern=None):
    """ListTransactions v0-2: dict(error, unknown_states, txns={id: (producer_id, state)})."""
    body = carray(list(states), K.compact_string) + carray(list(producer_ids), K.i64)
    if version >= 1:
        body += K.i64(duration)
    if version >= 2:
        body += K.compact_string(pattern)
    r = conn.roundtrip(LIST_TRANSACTIONS, version, body + T, header_version=2, response_header_version=1)
    r.i32()
    error = r.i16()
    unknown = r.compact_array(lambda x: x.compact_string())

    def state(x):
        d = (x.compact_string(), x.i64(), x.compact_string())
        x.tagged_fields()
        return d

    txns = {i: (pid, st) for i, pid, st in r.compact_array(state)}
    r.tagged_fields()
    return dict(error=error, unknown_states=unknown, txns=txns)


def write_txn_markers(conn, pid, epoch, commit, topic, partitions, coordinator_epoch=0, version=1):
    """WriteTxnMarkers v1-2, one marker: {partition: error}."""
    marker = K.i64(pid) + K.i16(epoch) + (b"\x01" if commit else b"\x00")
    marker += carray([topic], lambda n: K.compact_string(n) + carray(partitions, K.i32) + T)
    marker += K.i32(coordinator_epoch) + (K.i8(0) if version >= 2 else b"") + T
    r = conn.roundtrip(WRITE_TXN_MARKERS, version, carray([marker], lambda m: m) + T, header_version=2,
                       response_header_version=1)

    def part(x):
        d = (x.i32(), x.i16())
        x.tagged_fields()
        return d

    def topic(x):
        name = x.compact_string()
        parts = x.compact_array(part)
        x.tagged_fields()
        return name, parts

    def mark(x):
        x.i64()
        ts = x.compact_array(topic)
        x.tagged_fields()
        return ts

    (ts,) = r.compact_array(mark)
    r.tagged_fields()
    return dict(ts[0][1])


def batch(pid, epoch, seq, values, ts, transactional=False):
    return K.encode_batch([(ts, b"k", v, []) for v in values], producer_id=pid,
                          producer_epoch=epoch, base_sequence=seq, transactional=transactional)


def produce(conn, topic, pid, epoch, seq, values, ts, partition=0, **kw):
    return K.produce_v3(conn, topic, partition, batch(pid, epoch, seq, values, ts, **kw))


def values_in(conn, topic, partition=0):
    recs, _ = K.fetch_all_v4(conn, topic, partition)
    return [r.value for r in recs]
