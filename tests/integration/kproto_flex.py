"""Declared messages for kproto: flexible versions of the topic and record APIs, every
field of the answer decoded, so that two brokers' answers can be compared whole.

A message is declared once as a list of (name, type) pairs, where a type is one of
'i8', 'i16', 'i32', 'i64', 'bool', 'str' (nullable in the flexible encoding), 'uuid',
'bytes', or a list: [T] is an array of T (T a type name or a list of fields). The
same declaration encodes a request (from a dict) and decodes an answer (into a dict).
Each struct of a flexible version ends with tagged fields; those an answer carries are
kept raw under '_tags' ({tag: bytes}), so that they are compared too.

Written from Kafka's message schemas (the wire spec), for the versions named below.
"""

import struct

import kproto as K

_PRIM = {"i8": ">b", "i16": ">h", "i32": ">i", "i64": ">q"}


def _is_struct(t):
    return isinstance(t, list) and t and isinstance(t[0], tuple)


def encode(fields, value):
    """The flexible encoding of the dict VALUE as the struct FIELDS."""
    out = b"".join(_enc(t, value[name]) for name, t in fields)
    return out + K.EMPTY_TAGS


def _enc(t, v):
    if isinstance(t, list):
        if _is_struct(t):
            return encode(t, v)
        if v is None:
            return K.uvarint(0)
        return K.uvarint(len(v) + 1) + b"".join(_enc(t[0], x) for x in v)
    if t in _PRIM:
        return struct.pack(_PRIM[t], v)
    if t == "bool":
        return b"\x01" if v else b"\x00"
    if t == "str":
        return K.compact_string(v)
    if t == "uuid":
        assert len(v) == 16
        return v
    if t == "bytes":
        return K.uvarint(0) if v is None else K.uvarint(len(v) + 1) + v
    raise ValueError("unknown type %r" % (t,))


def decode(r, fields):
    """Reads the struct FIELDS (flexible encoding) from the kproto.Reader R into a dict."""
    out = {name: _dec(r, t) for name, t in fields}
    tags = {}
    for _ in range(r.uvarint()):
        tag = r.uvarint()
        tags[tag] = r.take(r.uvarint())
    if tags:
        out["_tags"] = tags
    return out


def _dec(r, t):
    if isinstance(t, list):
        if _is_struct(t):
            return decode(r, t)
        return r.compact_array(lambda x: _dec(x, t[0]))
    if t in _PRIM:
        return struct.unpack(_PRIM[t], r.take(struct.calcsize(_PRIM[t])))[0]
    if t == "bool":
        return r.boolean()
    if t == "str":
        return r.compact_string()
    if t == "uuid":
        return r.take(16)
    if t == "bytes":
        n = r.uvarint()
        return None if n == 0 else r.take(n - 1)
    raise ValueError("unknown type %r" % (t,))


def call(conn, api_key, version, request_fields, response_fields, request, timeout=None):
    """Sends REQUEST (request header v2) and decodes the whole answer (response header v1);
    bytes left over after the declared answer are an error."""
    r = conn.roundtrip(api_key, version, encode(request_fields, request), header_version=2,
                       response_header_version=1, timeout=timeout)
    out = decode(r, response_fields)
    if r.remaining():
        raise AssertionError("api %d v%d: %d bytes after the answer" % (api_key, version, r.remaining()))
    return out


CONFIG = [("name", "str"), ("value", "str")]

# CreateTopics v7 (flexible from v5).
CREATE_TOPICS_V = 7
CREATE_TOPICS_REQ = [
    ("topics", [[("name", "str"), ("num_partitions", "i32"), ("replication_factor", "i16"),
                 ("assignments", [[("partition_index", "i32"), ("broker_ids", ["i32"])]]),
                 ("configs", [CONFIG])]]),
    ("timeout_ms", "i32"), ("validate_only", "bool")]
CREATE_TOPICS_RESP = [
    ("throttle_time_ms", "i32"),
    ("topics", [[("name", "str"), ("topic_id", "uuid"), ("error_code", "i16"), ("error_message", "str"),
                 ("num_partitions", "i32"), ("replication_factor", "i16"),
                 ("configs", [[("name", "str"), ("value", "str"), ("read_only", "bool"),
                               ("config_source", "i8"), ("is_sensitive", "bool")]])]])]

# DeleteTopics v6 (by name or id).
DELETE_TOPICS_V = 6
DELETE_TOPICS_REQ = [("topics", [[("name", "str"), ("topic_id", "uuid")]]), ("timeout_ms", "i32")]
DELETE_TOPICS_RESP = [
    ("throttle_time_ms", "i32"),
    ("responses", [[("name", "str"), ("topic_id", "uuid"), ("error_code", "i16"), ("error_message", "str")]])]

# Metadata v12.
METADATA_V = 12
METADATA_REQ = [("topics", [[("topic_id", "uuid"), ("name", "str")]]),
                ("allow_auto_topic_creation", "bool"), ("include_topic_authorized_operations", "bool")]
METADATA_RESP = [
    ("throttle_time_ms", "i32"),
    ("brokers", [[("node_id", "i32"), ("host", "str"), ("port", "i32"), ("rack", "str")]]),
    ("cluster_id", "str"), ("controller_id", "i32"),
    ("topics", [[("error_code", "i16"), ("name", "str"), ("topic_id", "uuid"), ("is_internal", "bool"),
                 ("partitions", [[("error_code", "i16"), ("partition_index", "i32"), ("leader_id", "i32"),
                                  ("leader_epoch", "i32"), ("replica_nodes", ["i32"]), ("isr_nodes", ["i32"]),
                                  ("offline_replicas", ["i32"])]]),
                 ("topic_authorized_operations", "i32")]])]

# Produce v9.
PRODUCE_V = 9
PRODUCE_REQ = [("transactional_id", "str"), ("acks", "i16"), ("timeout_ms", "i32"),
               ("topic_data", [[("name", "str"), ("partition_data", [[("index", "i32"), ("records", "bytes")]])]])]
PRODUCE_RESP = [
    ("responses", [[("name", "str"),
                    ("partition_responses", [[("index", "i32"), ("error_code", "i16"), ("base_offset", "i64"),
                                              ("log_append_time_ms", "i64"), ("log_start_offset", "i64"),
                                              ("record_errors", [[("batch_index", "i32"),
                                                                  ("batch_index_error_message", "str")]]),
                                              ("error_message", "str")]])]]),
    ("throttle_time_ms", "i32")]

# Fetch v12 (the last version that names topics).
FETCH_V = 12
FETCH_REQ = [("replica_id", "i32"), ("max_wait_ms", "i32"), ("min_bytes", "i32"), ("max_bytes", "i32"),
             ("isolation_level", "i8"), ("session_id", "i32"), ("session_epoch", "i32"),
             ("topics", [[("topic", "str"),
                          ("partitions", [[("partition", "i32"), ("current_leader_epoch", "i32"),
                                           ("fetch_offset", "i64"), ("last_fetched_epoch", "i32"),
                                           ("log_start_offset", "i64"), ("partition_max_bytes", "i32")]])]]),
             ("forgotten_topics_data", [[("topic", "str"), ("partitions", ["i32"])]]), ("rack_id", "str")]
FETCH_RESP = [
    ("throttle_time_ms", "i32"), ("error_code", "i16"), ("session_id", "i32"),
    ("responses", [[("topic", "str"),
                    ("partitions", [[("partition_index", "i32"), ("error_code", "i16"), ("high_watermark", "i64"),
                                     ("last_stable_offset", "i64"), ("log_start_offset", "i64"),
                                     ("aborted_transactions", [[("producer_id", "i64"), ("first_offset", "i64")]]),
                                     ("preferred_read_replica", "i32"), ("records", "bytes")]])]])]

# Fetch v13: v12 with topics by id (requested, forgotten and answered).
FETCH13_REQ = FETCH_REQ[:7] + [("topics", [[("topic_id", "uuid"), FETCH_REQ[7][1][0][1]]]),
                               ("forgotten_topics_data", [[("topic_id", "uuid"), ("partitions", ["i32"])]]),
                               ("rack_id", "str")]
FETCH13_RESP = FETCH_RESP[:3] + [("responses", [[("topic_id", "uuid"), FETCH_RESP[3][1][0][1]]])]

# ListOffsets v8.
LIST_OFFSETS_V = 8
LIST_OFFSETS_REQ = [("replica_id", "i32"), ("isolation_level", "i8"),
                    ("topics", [[("name", "str"), ("partitions", [[("partition_index", "i32"),
                                                                   ("current_leader_epoch", "i32"),
                                                                   ("timestamp", "i64")]])]])]
LIST_OFFSETS_RESP = [
    ("throttle_time_ms", "i32"),
    ("topics", [[("name", "str"), ("partitions", [[("partition_index", "i32"), ("error_code", "i16"),
                                                   ("timestamp", "i64"), ("offset", "i64"),
                                                   ("leader_epoch", "i32")]])]])]


def create_topics(conn, topics, validate_only=False, timeout_ms=10000):
    """topics: dicts with name and optionally num_partitions (default 1), replication_factor
    (1), assignments ([]), configs ({name: value})."""
    req = [dict(name=t["name"], num_partitions=t.get("num_partitions", 1),
                replication_factor=t.get("replication_factor", 1), assignments=t.get("assignments", []),
                configs=[dict(name=k, value=v) for k, v in t.get("configs", {}).items()]) for t in topics]
    return call(conn, K.CREATE_TOPICS, CREATE_TOPICS_V, CREATE_TOPICS_REQ, CREATE_TOPICS_RESP,
                dict(topics=req, timeout_ms=timeout_ms, validate_only=validate_only))


def delete_topics(conn, names=(), ids=(), timeout_ms=10000):
    topics = [dict(name=n, topic_id=bytes(16)) for n in names] + [dict(name=None, topic_id=i) for i in ids]
    return call(conn, K.DELETE_TOPICS, DELETE_TOPICS_V, DELETE_TOPICS_REQ, DELETE_TOPICS_RESP,
                dict(topics=topics, timeout_ms=timeout_ms))


def metadata(conn, names, authorized_operations=False):
    topics = None if names is None else [dict(topic_id=bytes(16), name=n) for n in names]
    return call(conn, K.METADATA, METADATA_V, METADATA_REQ, METADATA_RESP,
                dict(topics=topics, allow_auto_topic_creation=False,
                     include_topic_authorized_operations=authorized_operations))


def produce(conn, topic, partition, records, acks=-1, timeout_ms=10000, transactional_id=None):
    return call(conn, K.PRODUCE, PRODUCE_V, PRODUCE_REQ, PRODUCE_RESP,
                dict(transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms,
                     topic_data=[dict(name=topic, partition_data=[dict(index=partition, records=records)])]))


def fetch(conn, topic, partition, offset, max_bytes=1 << 20, max_wait_ms=0):
    part = dict(partition=partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                log_start_offset=-1, partition_max_bytes=max_bytes)
    return call(conn, K.FETCH, FETCH_V, FETCH_REQ, FETCH_RESP,
                dict(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=0, max_bytes=max_bytes,
                     isolation_level=0, session_id=0, session_epoch=-1,
                     topics=[dict(topic=topic, partitions=[part])], forgotten_topics_data=[], rack_id=""))


def list_offsets(conn, topic, timestamps, isolation_level=0):
    """timestamps: [(partition, timestamp)] in request order."""
    parts = [dict(partition_index=p, current_leader_epoch=-1, timestamp=ts) for p, ts in timestamps]
    return call(conn, K.LIST_OFFSETS, LIST_OFFSETS_V, LIST_OFFSETS_REQ, LIST_OFFSETS_RESP,
                dict(replica_id=-1, isolation_level=isolation_level,
                     topics=[dict(name=topic, partitions=parts)]))


# InitProducerId v4 (flexible from v2).
INIT_PRODUCER_ID = 22
INIT_PRODUCER_ID_V = 4
INIT_PRODUCER_ID_REQ = [("transactional_id", "str"), ("transaction_timeout_ms", "i32"),
                        ("producer_id", "i64"), ("producer_epoch", "i16")]
INIT_PRODUCER_ID_RESP = [("throttle_time_ms", "i32"), ("error_code", "i16"), ("producer_id", "i64"),
                         ("producer_epoch", "i16")]


def init_producer_id(conn, producer_id=-1, producer_epoch=-1, transactional_id=None):
    """A new idempotent producer id, or (given its id and epoch) the same id, epoch bumped."""
    return call(conn, INIT_PRODUCER_ID, INIT_PRODUCER_ID_V, INIT_PRODUCER_ID_REQ, INIT_PRODUCER_ID_RESP,
                dict(transactional_id=transactional_id, transaction_timeout_ms=60000,
                     producer_id=producer_id, producer_epoch=producer_epoch))
