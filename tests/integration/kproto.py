"""Minimal hand-written Kafka wire-protocol helpers for the raw-socket tests.

Only what the tests need: primitive encoders/decoders, request header v1/v2,
a blocking connection with frame read/write, a magic-v2 record batch encoder
(with CRC-32C) and decoder (verifying CRC-32C), plus a few request/response
codecs (ApiVersions v0, Metadata v1, Produce v3, Fetch v4, DescribeCluster v0).

Everything is written from the public protocol description; no client library
is involved, so these tests see exactly the bytes the broker sends.
"""

import gzip
import socket
import struct
import time

import crcmod.predefined

# --------------------------------------------------------------------------
# API keys and error codes used by the tests
# --------------------------------------------------------------------------
PRODUCE = 0
FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
CREATE_TOPICS = 19
DELETE_TOPICS = 20
API_VERSIONS = 18
DESCRIBE_CLUSTER = 60

NONE = 0
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87

# --------------------------------------------------------------------------
# CRC-32C (Castagnoli): crcmod's C extension (Debian's python3-crcmod, which
# `scripts/install-deps.sh test` installs); a table-driven loop in Python took seconds
# for the batches of several MiB that some tests send.
# --------------------------------------------------------------------------
crc32c = crcmod.predefined.mkCrcFun("crc-32c")

assert crc32c(b"123456789") == 0xE3069283  # standard check value

# --------------------------------------------------------------------------
# Primitive encoders
# --------------------------------------------------------------------------


def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def u32(v):
    return struct.pack(">I", v)


def string(s):
    b = s.encode() if isinstance(s, str) else s
    return i16(len(b)) + b


def nullable_string(s):
    if s is None:
        return i16(-1)
    return string(s)


def kbytes(b):
    if b is None:
        return i32(-1)
    return i32(len(b)) + b


def array(items, enc):
    if items is None:
        return i32(-1)
    return i32(len(items)) + b"".join(enc(x) for x in items)


def uvarint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(v):
    # zig-zag, works for 32 and 64 bit values
    return uvarint((v << 1) ^ (v >> 63))


def compact_string(s):
    if s is None:
        return uvarint(0)
    b = s.encode() if isinstance(s, str) else s
    return uvarint(len(b) + 1) + b


EMPTY_TAGS = uvarint(0)


class Reader:
    """Sequential decoder over a bytes object; raises ValueError on underrun."""

    def __init__(self, data, pos=0):
        self.data = data
        self.pos = pos

    def remaining(self):
        return len(self.data) - self.pos

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("buffer underrun: want %d at %d of %d" % (n, self.pos, len(self.data)))
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def u32(self):
        return struct.unpack(">I", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def boolean(self):
        return self.take(1) != b"\x00"

    def string(self):
        n = self.i16()
        if n < 0:
            return None
        return self.take(n).decode()

    def kbytes(self):
        n = self.i32()
        if n < 0:
            return None
        return self.take(n)

    def array(self, dec):
        n = self.i32()
        if n < 0:
            return None
        return [dec(self) for _ in range(n)]

    def uvarint(self):
        shift = 0
        result = 0
        while True:
            b = self.take(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def varint(self):
        v = self.uvarint()
        return (v >> 1) ^ -(v & 1)

    def compact_string(self):
        n = self.uvarint()
        if n == 0:
            return None
        return self.take(n - 1).decode()

    def compact_array(self, dec):
        n = self.uvarint()
        if n == 0:
            return None
        return [dec(self) for _ in range(n - 1)]

    def tagged_fields(self):
        n = self.uvarint()
        for _ in range(n):
            self.uvarint()  # tag
            size = self.uvarint()
            self.take(size)


# --------------------------------------------------------------------------
# Connection
# --------------------------------------------------------------------------


def request_header_v1(api_key, api_version, correlation_id, client_id="sluice-it-raw"):
    return i16(api_key) + i16(api_version) + i32(correlation_id) + nullable_string(client_id)


def request_header_v2(api_key, api_version, correlation_id, client_id="sluice-it-raw"):
    return request_header_v1(api_key, api_version, correlation_id, client_id) + EMPTY_TAGS


class ConnectionClosed(Exception):
    pass


class Conn:
    """A blocking client connection; every read is bounded by `timeout`."""

    def __init__(self, bootstrap, timeout=15.0):
        # A bootstrap list (a shared-mode cluster, cluster_mode.py): the first broker.
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.timeout = timeout
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.next_corr = 1

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send_frame(self, payload):
        self.sock.sendall(i32(len(payload)) + payload)

    def send_request(self, api_key, api_version, body, header_version=1, correlation_id=None):
        if correlation_id is None:
            correlation_id = self.next_corr
            self.next_corr += 1
        if header_version == 2:
            hdr = request_header_v2(api_key, api_version, correlation_id)
        else:
            hdr = request_header_v1(api_key, api_version, correlation_id)
        self.send_frame(hdr + body)
        return correlation_id

    def _recv_exact(self, n, deadline):
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("timed out reading %d bytes (got %d)" % (n, len(buf)))
            self.sock.settimeout(left)
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionClosed("connection closed after %d of %d bytes" % (len(buf), n))
            buf += chunk
        return bytes(buf)

    def recv_frame(self, timeout=None):
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        size = struct.unpack(">i", self._recv_exact(4, deadline))[0]
        if size < 4 or size > 256 * 1024 * 1024:
            raise ValueError("implausible response frame size %d" % size)
        return self._recv_exact(size, deadline)

    def recv_response(self, correlation_id, header_version=0, timeout=None):
        """Return a Reader positioned at the response body."""
        frame = self.recv_frame(timeout)
        r = Reader(frame)
        corr = r.i32()
        if corr != correlation_id:
            raise AssertionError("correlation id mismatch: sent %d got %d" % (correlation_id, corr))
        if header_version == 1:
            r.tagged_fields()
        return r

    def roundtrip(self, api_key, api_version, body, header_version=1, response_header_version=0, timeout=None):
        corr = self.send_request(api_key, api_version, body, header_version)
        return self.recv_response(corr, response_header_version, timeout)

    def wait_closed(self, timeout=10.0):
        """Read until EOF; returns the bytes received before EOF. Raises on timeout."""
        deadline = time.monotonic() + timeout
        got = bytearray()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("connection was not closed by the broker within %.1fs" % timeout)
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                return bytes(got)
            except socket.timeout:
                continue
            if not chunk:
                return bytes(got)
            got += chunk


# --------------------------------------------------------------------------
# Record batches (magic v2)
# --------------------------------------------------------------------------


class Rec:
    __slots__ = ("offset", "timestamp", "key", "value", "headers", "timestamp_type")

    def __init__(self, offset, timestamp, key, value, headers, timestamp_type=0):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp_type = timestamp_type

    def __repr__(self):
        return "Rec(offset=%r, ts=%r, key=%r, value=%r..., headers=%r, tstype=%r)" % (
            self.offset, self.timestamp, self.key, (self.value or b"")[:20], self.headers, self.timestamp_type)


def encode_record(offset_delta, ts_delta, key, value, headers):
    body = i8(0) + varint(ts_delta) + varint(offset_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(len(headers))
    for hk, hv in headers:
        hkb = hk.encode()
        body += varint(len(hkb)) + hkb
        body += varint(-1) if hv is None else varint(len(hv)) + hv
    return varint(len(body)) + body


GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
CODEC_NAMES = {0: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}


def compress(codec, data, xerial=False):
    """Compresses records as Kafka's clients do (Debian's python3-snappy, -lz4, -zstandard);
    snappy raw (librdkafka, kafkajs) or, with xerial, framed as the Java client writes it."""
    if codec == GZIP:
        return gzip.compress(data)
    if codec == SNAPPY:
        if xerial:
            from kafka.codec import snappy_encode
            return snappy_encode(data, xerial_compatible=True)
        import snappy
        return snappy.compress(data)
    if codec == LZ4:
        import lz4.frame
        return lz4.frame.compress(data)
    if codec == ZSTD:
        import zstandard
        return zstandard.ZstdCompressor().compress(data)
    raise ValueError("codec %d" % codec)


def decompress(codec, data):
    if codec == GZIP:
        return gzip.decompress(data)
    if codec == SNAPPY:
        from kafka.codec import snappy_decode  # raw or xerial
        return snappy_decode(data)
    if codec == LZ4:
        import lz4.frame
        return lz4.frame.decompress(data)
    if codec == ZSTD:
        import zstandard
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    raise AssertionError("unknown codec %d" % codec)


def encode_batch(records, base_offset=0, compression=0, timestamp_type=0, corrupt_crc=False,
                 xerial=False, body=None, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                 transactional=False):
    """records: list of (timestamp_ms, key, value, headers[(str, bytes)]); compression: a codec
    (GZIP, SNAPPY, LZ4, ZSTD); body, when given, replaces the (compressed) records bytes; the
    producer fields make an idempotent (or, with transactional, a transactional) batch."""
    assert records
    base_ts = records[0][0]
    max_ts = max(r[0] for r in records)
    if body is not None:
        recs = body
    else:
        recs = b"".join(
            encode_record(i, ts - base_ts, k, v, h) for i, (ts, k, v, h) in enumerate(records))
        if compression:
            recs = compress(compression, recs, xerial)
    attributes = (compression & 0x7) | (0x8 if timestamp_type else 0) | (0x10 if transactional else 0)
    after_crc = (i16(attributes) + i32(len(records) - 1) + i64(base_ts) + i64(max_ts)
                 + i64(producer_id) + i16(producer_epoch) + i32(base_sequence) + i32(len(records))
                 + recs)
    crc = crc32c(after_crc)
    if corrupt_crc:
        crc ^= 0xDEADBEEF
    after_len = i32(0) + i8(2) + u32(crc) + after_crc  # partition leader epoch, magic, crc
    return i64(base_offset) + i32(len(after_len)) + after_len


def decode_batches(data, check_crc=True, allow_compressed=False):
    """Decode a record set (possibly ending in a partial batch) into Rec objects.

    Returns (records, batches) where batches is a list of dicts describing each
    complete batch header (its codec in "compression").  A compressed batch raises unless
    allow_compressed, which decompresses it.
    """
    out = []
    batches = []
    pos = 0
    while len(data) - pos >= 12:
        base_offset, batch_len = struct.unpack(">qi", data[pos:pos + 12])
        if batch_len < 0 or pos + 12 + batch_len > len(data):
            break  # partial trailing batch is allowed by the protocol
        r = Reader(data[pos + 12:pos + 12 + batch_len])
        r.i32()  # partition leader epoch
        magic = r.i8()
        if magic != 2:
            raise AssertionError("unexpected magic %d at batch offset %d" % (magic, base_offset))
        crc = r.u32()
        crc_region = r.data[r.pos:]
        if check_crc and crc32c(crc_region) != crc:
            raise AssertionError("CRC-32C mismatch in batch at base offset %d" % base_offset)
        attributes = r.i16()
        last_offset_delta = r.i32()
        base_ts = r.i64()
        max_ts = r.i64()
        producer_id = r.i64()
        r.i16()
        r.i32()
        count = r.i32()
        compression = attributes & 0x7
        ts_type = (attributes >> 3) & 1
        control = bool(attributes & 0x20)
        if compression != 0 and not allow_compressed:
            raise AssertionError("broker returned a compressed batch (attributes %#x)" % attributes)
        if compression != 0:
            r = Reader(decompress(compression, r.data[r.pos:]))
        batches.append(dict(base_offset=base_offset, count=count, attributes=attributes,
                            compression=compression,
                            last_offset_delta=last_offset_delta, base_timestamp=base_ts,
                            max_timestamp=max_ts, producer_id=producer_id, control=control))
        for _ in range(count):
            length = r.varint()
            rr = Reader(r.take(length))
            rr.i8()
            ts_delta = rr.varint()
            off_delta = rr.varint()
            klen = rr.varint()
            key = None if klen < 0 else rr.take(klen)
            vlen = rr.varint()
            value = None if vlen < 0 else rr.take(vlen)
            hdrs = []
            for _ in range(rr.varint()):
                hk = rr.take(rr.varint()).decode()
                hvl = rr.varint()
                hdrs.append((hk, None if hvl < 0 else rr.take(hvl)))
            ts = max_ts if ts_type == 1 else base_ts + ts_delta
            if not control:
                out.append(Rec(base_offset + off_delta, ts, key, value, hdrs, ts_type))
        pos += 12 + batch_len
    return out, batches


# --------------------------------------------------------------------------
# Request / response codecs
# --------------------------------------------------------------------------


def parse_api_versions_v0(r):
    err = r.i16()
    apis = r.array(lambda x: (x.i16(), x.i16(), x.i16()))
    return err, {k: (lo, hi) for k, lo, hi in (apis or [])}


def api_versions_v0(conn):
    r = conn.roundtrip(API_VERSIONS, 0, b"")
    return parse_api_versions_v0(r)


def metadata_v1_body(topics):
    if topics is None:
        return i32(-1)
    return array(topics, string)


def parse_metadata_v1(r):
    brokers = r.array(lambda x: dict(node_id=x.i32(), host=x.string(), port=x.i32(), rack=x.string()))
    controller_id = r.i32()

    def part(x):
        return dict(error=x.i16(), partition=x.i32(), leader=x.i32(),
                    replicas=x.array(lambda y: y.i32()), isr=x.array(lambda y: y.i32()))

    def topic(x):
        return dict(error=x.i16(), name=x.string(), internal=x.boolean(), partitions=x.array(part))

    topics = r.array(topic)
    return dict(brokers=brokers, controller_id=controller_id, topics={t["name"]: t for t in topics})


def metadata_v1(conn, topics):
    r = conn.roundtrip(METADATA, 1, metadata_v1_body(topics))
    return parse_metadata_v1(r)


def produce_v3(conn, topic, partition, batch_bytes, acks=-1, timeout_ms=10000):
    body = (nullable_string(None) + i16(acks) + i32(timeout_ms)
            + i32(1) + string(topic) + i32(1) + i32(partition) + kbytes(batch_bytes))
    r = conn.roundtrip(PRODUCE, 3, body)
    topics = r.array(lambda x: (x.string(), x.array(
        lambda y: dict(partition=y.i32(), error=y.i16(), base_offset=y.i64(), log_append_time=y.i64()))))
    r.i32()  # throttle
    assert len(topics) == 1 and topics[0][0] == topic, topics
    parts = topics[0][1]
    assert len(parts) == 1 and parts[0]["partition"] == partition, parts
    return parts[0]


def fetch_v4(conn, topic, partition, offset, max_bytes=4 * 1024 * 1024, max_wait_ms=200):
    body = (i32(-1) + i32(max_wait_ms) + i32(1) + i32(max_bytes) + i8(0)
            + i32(1) + string(topic) + i32(1) + i32(partition) + i64(offset) + i32(max_bytes))
    r = conn.roundtrip(FETCH, 4, body)
    r.i32()  # throttle

    def part(x):
        return dict(partition=x.i32(), error=x.i16(), high_watermark=x.i64(), last_stable_offset=x.i64(),
                    aborted=x.array(lambda y: (y.i64(), y.i64())), records=x.kbytes())

    topics = r.array(lambda x: (x.string(), x.array(part)))
    assert len(topics) == 1 and topics[0][0] == topic, topics
    parts = topics[0][1]
    assert len(parts) == 1 and parts[0]["partition"] == partition, parts
    return parts[0]


def fetch_all_v4(conn, topic, partition, timeout=20.0):
    """Fetch a partition from offset 0 up to its high watermark; returns (records, hw)."""
    deadline = time.monotonic() + timeout
    offset = 0
    out = []
    while True:
        p = fetch_v4(conn, topic, partition, offset)
        assert p["error"] == NONE, "fetch error %d" % p["error"]
        recs, _ = decode_batches(p["records"] or b"")
        recs = [x for x in recs if x.offset >= offset]
        out.extend(recs)
        if recs:
            offset = recs[-1].offset + 1
        if offset >= p["high_watermark"]:
            return out, p["high_watermark"]
        if time.monotonic() > deadline:
            raise AssertionError("fetch did not reach high watermark %d (at %d)" % (p["high_watermark"], offset))


def stored_batches(bootstrap, topic, partition=0, timeout=20.0):
    """Every stored batch of the partition through raw Fetch v4: (records, batches, raw
    batch bytes), decompressed here (kproto) whatever their codec."""
    deadline = time.monotonic() + timeout
    recs, batches, raw, offset = [], [], [], 0
    with Conn(bootstrap) as conn:
        while True:
            p = fetch_v4(conn, topic, partition, offset)
            assert p["error"] == 0, p
            data = p["records"] or b""
            r, bs = decode_batches(data, allow_compressed=True)
            pos = 0
            for bt in bs:
                size = 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
                raw.append(data[pos:pos + size])
                pos += size
            recs += [x for x in r if x.offset >= offset]
            batches += bs
            if bs:
                offset = bs[-1]["base_offset"] + bs[-1]["last_offset_delta"] + 1
            if offset >= p["high_watermark"]:
                return recs, batches, raw
            assert time.monotonic() < deadline, "fetch did not reach the high watermark"


def describe_cluster_v0(conn):
    body = i8(0) + EMPTY_TAGS  # include_cluster_authorized_operations=false
    r = conn.roundtrip(DESCRIBE_CLUSTER, 0, body, header_version=2, response_header_version=1)
    throttle = r.i32()
    err = r.i16()
    err_msg = r.compact_string()
    cluster_id = r.compact_string()
    controller = r.i32()

    def broker(x):
        d = dict(node_id=x.i32(), host=x.compact_string(), port=x.i32(), rack=x.compact_string())
        x.tagged_fields()
        return d

    brokers = r.compact_array(broker)
    r.i32()  # authorized operations
    r.tagged_fields()
    return dict(throttle=throttle, error=err, error_message=err_msg, cluster_id=cluster_id,
                controller_id=controller, brokers=brokers)


# ==========================================================================
# Group coordination APIs (classic protocol): FindCoordinator, JoinGroup,
# SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups,
# DescribeGroups, DeleteGroups, OffsetDelete.
#
# Every encoder/decoder takes the API version and switches between the
# classic encoding and the flexible one (compact strings/arrays/bytes, tagged
# fields, request header v2 / response header v1) at the version Kafka's
# schemas name as "flexibleVersions".
# ==========================================================================
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
DELETE_GROUPS = 42
OFFSET_DELETE = 47

OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86

# First flexible version of each API (Kafka's "flexibleVersions"); None: never.
GROUP_API_FLEXIBLE_FROM = {
    OFFSET_COMMIT: 8, OFFSET_FETCH: 6, FIND_COORDINATOR: 3, JOIN_GROUP: 6, HEARTBEAT: 4,
    LEAVE_GROUP: 4, SYNC_GROUP: 4, DESCRIBE_GROUPS: 5, LIST_GROUPS: 3, DELETE_GROUPS: 2,
    OFFSET_DELETE: None,
}


def is_flexible(api_key, version):
    first = GROUP_API_FLEXIBLE_FROM[api_key]
    return first is not None and version >= first


# -- encoders that follow the flexible flag ---------------------------------


def f_string(s, flex):
    return compact_string(s) if flex else string(s)


def f_nullable_string(s, flex):
    if flex:
        return compact_string(s)
    return nullable_string(s)


def f_bytes(b, flex):
    if not flex:
        return kbytes(b)
    if b is None:
        return uvarint(0)
    return uvarint(len(b) + 1) + b


def f_array(items, enc, flex):
    if not flex:
        return array(items, enc)
    if items is None:
        return uvarint(0)
    return uvarint(len(items) + 1) + b"".join(enc(x) for x in items)


def f_tags(flex):
    return EMPTY_TAGS if flex else b""


# -- decoders that follow the flexible flag ---------------------------------


def r_string(r, flex):
    return r.compact_string() if flex else r.string()


def r_bytes(r, flex):
    if not flex:
        return r.kbytes()
    n = r.uvarint()
    if n == 0:
        return None
    return r.take(n - 1)


def r_array(r, dec, flex):
    return r.compact_array(dec) if flex else r.array(dec)


def r_tags(r, flex):
    if flex:
        r.tagged_fields()


class Pending:
    """A request sent on a connection whose answer has not been read yet.

    JoinGroup and SyncGroup answers are held back by the coordinator until the
    rebalance step completes, so tests send on several connections first and
    read the answers afterwards."""

    def __init__(self, conn, api_key, version, corr, parser):
        self.conn = conn
        self.api_key = api_key
        self.version = version
        self.corr = corr
        self.parser = parser

    def result(self, timeout=None):
        flex = is_flexible(self.api_key, self.version)
        r = self.conn.recv_response(self.corr, 1 if flex else 0, timeout)
        out = self.parser(r, self.version)
        if r.remaining() != 0:
            raise AssertionError("api %d v%d: %d unread bytes at the end of the response"
                                 % (self.api_key, self.version, r.remaining()))
        return out


def send_api(conn, api_key, version, body, parser):
    flex = is_flexible(api_key, version)
    corr = conn.send_request(api_key, version, body, header_version=2 if flex else 1)
    return Pending(conn, api_key, version, corr, parser)


# -- FindCoordinator v0-v4 ----------------------------------------------------


def find_coordinator_body(version, keys, key_type=0):
    flex = is_flexible(FIND_COORDINATOR, version)
    if version >= 4:
        body = i8(key_type) + f_array(keys, lambda k: f_string(k, flex), flex)
    else:
        assert len(keys) == 1
        body = f_string(keys[0], flex)
        if version >= 1:
            body += i8(key_type)
    return body + f_tags(flex)


def parse_find_coordinator(r, version):
    """Returns a list of dicts (one per key; key None before v4)."""
    flex = is_flexible(FIND_COORDINATOR, version)
    if version >= 1:
        r.i32()  # throttle
    if version >= 4:
        def coord(x):
            d = dict(key=x.compact_string(), node_id=x.i32(), host=x.compact_string(), port=x.i32(),
                     error=x.i16(), error_message=x.compact_string())
            x.tagged_fields()
            return d
        out = r.compact_array(coord)
    else:
        err = r.i16()
        msg = r_string(r, flex) if version >= 1 else None
        out = [dict(key=None, error=err, error_message=msg, node_id=r.i32(), host=r_string(r, flex), port=r.i32())]
    r_tags(r, flex)
    return out


def find_coordinator(conn, version, keys, key_type=0):
    return send_api(conn, FIND_COORDINATOR, version, find_coordinator_body(version, keys, key_type),
                    parse_find_coordinator).result()


# -- JoinGroup v0-v9 -------------------------------------------------------------


def join_group_body(version, group, member_id, protocol_type, protocols, session_timeout_ms=10000,
                    rebalance_timeout_ms=10000, group_instance_id=None, reason=None):
    """protocols: list of (name, metadata bytes)."""
    flex = is_flexible(JOIN_GROUP, version)
    body = f_string(group, flex) + i32(session_timeout_ms)
    if version >= 1:
        body += i32(rebalance_timeout_ms)
    body += f_string(member_id, flex)
    if version >= 5:
        body += f_nullable_string(group_instance_id, flex)
    body += f_string(protocol_type, flex)
    body += f_array(protocols, lambda p: f_string(p[0], flex) + f_bytes(p[1], flex) + f_tags(flex), flex)
    if version >= 8:
        body += f_nullable_string(reason, flex)
    return body + f_tags(flex)


def parse_join_group(r, version):
    flex = is_flexible(JOIN_GROUP, version)
    d = {}
    d["throttle_ms"] = r.i32() if version >= 2 else 0
    d["error"] = r.i16()
    d["generation"] = r.i32()
    d["protocol_type"] = r_string(r, flex) if version >= 7 else None
    d["protocol_name"] = r_string(r, flex)
    d["leader"] = r_string(r, flex)
    d["skip_assignment"] = r.boolean() if version >= 9 else False
    d["member_id"] = r_string(r, flex)

    def member(x):
        m = dict(member_id=r_string(x, flex))
        m["group_instance_id"] = r_string(x, flex) if version >= 5 else None
        m["metadata"] = r_bytes(x, flex)
        r_tags(x, flex)
        return m

    d["members"] = r_array(r, member, flex)
    r_tags(r, flex)
    return d


def send_join_group(conn, version, group, member_id, protocol_type, protocols, **kw):
    return send_api(conn, JOIN_GROUP, version,
                    join_group_body(version, group, member_id, protocol_type, protocols, **kw), parse_join_group)


def join_group(conn, version, group, member_id, protocol_type, protocols, timeout=None, **kw):
    return send_join_group(conn, version, group, member_id, protocol_type, protocols, **kw).result(timeout)


# -- SyncGroup v0-v5 -------------------------------------------------------------


def sync_group_body(version, group, generation, member_id, assignments, group_instance_id=None,
                    protocol_type=None, protocol_name=None):
    """assignments: list of (member_id, bytes)."""
    flex = is_flexible(SYNC_GROUP, version)
    body = f_string(group, flex) + i32(generation) + f_string(member_id, flex)
    if version >= 3:
        body += f_nullable_string(group_instance_id, flex)
    if version >= 5:
        body += f_nullable_string(protocol_type, flex) + f_nullable_string(protocol_name, flex)
    body += f_array(assignments, lambda a: f_string(a[0], flex) + f_bytes(a[1], flex) + f_tags(flex), flex)
    return body + f_tags(flex)


def parse_sync_group(r, version):
    flex = is_flexible(SYNC_GROUP, version)
    d = dict(throttle_ms=r.i32() if version >= 1 else 0, error=r.i16())
    d["protocol_type"] = r_string(r, flex) if version >= 5 else None
    d["protocol_name"] = r_string(r, flex) if version >= 5 else None
    d["assignment"] = r_bytes(r, flex)
    r_tags(r, flex)
    return d


def send_sync_group(conn, version, group, generation, member_id, assignments, **kw):
    return send_api(conn, SYNC_GROUP, version,
                    sync_group_body(version, group, generation, member_id, assignments, **kw), parse_sync_group)


def sync_group(conn, version, group, generation, member_id, assignments, timeout=None, **kw):
    return send_sync_group(conn, version, group, generation, member_id, assignments, **kw).result(timeout)


# -- Heartbeat v0-v4 ---------------------------------------------------------------


def heartbeat_body(version, group, generation, member_id, group_instance_id=None):
    flex = is_flexible(HEARTBEAT, version)
    body = f_string(group, flex) + i32(generation) + f_string(member_id, flex)
    if version >= 3:
        body += f_nullable_string(group_instance_id, flex)
    return body + f_tags(flex)


def parse_heartbeat(r, version):
    flex = is_flexible(HEARTBEAT, version)
    if version >= 1:
        r.i32()
    err = r.i16()
    r_tags(r, flex)
    return err


def heartbeat(conn, version, group, generation, member_id, group_instance_id=None, timeout=None):
    """Returns the error code."""
    return send_api(conn, HEARTBEAT, version, heartbeat_body(version, group, generation, member_id, group_instance_id),
                    parse_heartbeat).result(timeout)


# -- LeaveGroup v0-v5 --------------------------------------------------------------


def leave_group_body(version, group, members):
    """members: list of (member_id, group_instance_id or None[, reason]); one member before v3."""
    flex = is_flexible(LEAVE_GROUP, version)
    body = f_string(group, flex)
    if version < 3:
        assert len(members) == 1
        body += f_string(members[0][0], flex)
    else:
        def member(m):
            out = f_string(m[0], flex) + f_nullable_string(m[1], flex)
            if version >= 5:
                out += f_nullable_string(m[2] if len(m) > 2 else None, flex)
            return out + f_tags(flex)
        body += f_array(members, member, flex)
    return body + f_tags(flex)


def parse_leave_group(r, version):
    flex = is_flexible(LEAVE_GROUP, version)
    if version >= 1:
        r.i32()
    d = dict(error=r.i16(), members=None)
    if version >= 3:
        def member(x):
            m = dict(member_id=r_string(x, flex), group_instance_id=r_string(x, flex), error=x.i16())
            r_tags(x, flex)
            return m
        d["members"] = r_array(r, member, flex)
    r_tags(r, flex)
    return d


def leave_group(conn, version, group, members, timeout=None):
    return send_api(conn, LEAVE_GROUP, version, leave_group_body(version, group, members),
                    parse_leave_group).result(timeout)


# -- OffsetCommit v0-v8 ------------------------------------------------------------


def offset_commit_body(version, group, offsets, generation=-1, member_id="", group_instance_id=None,
                       retention_ms=-1):
    """offsets: {topic: [(partition, offset, metadata-or-None)]}."""
    flex = is_flexible(OFFSET_COMMIT, version)
    body = f_string(group, flex)
    if version >= 1:
        body += i32(generation) + f_string(member_id, flex)
    if version >= 7:
        body += f_nullable_string(group_instance_id, flex)
    if 2 <= version <= 4:
        body += i64(retention_ms)

    def part(p):
        out = i32(p[0]) + i64(p[1])
        if version >= 6:
            out += i32(-1)  # committed leader epoch
        if version == 1:
            out += i64(-1)  # commit timestamp
        return out + f_nullable_string(p[2], flex) + f_tags(flex)

    def topic(item):
        return f_string(item[0], flex) + f_array(item[1], part, flex) + f_tags(flex)

    body += f_array(list(offsets.items()), topic, flex)
    return body + f_tags(flex)


def parse_offset_commit(r, version):
    """Returns {(topic, partition): error}."""
    flex = is_flexible(OFFSET_COMMIT, version)
    if version >= 3:
        r.i32()
    out = {}

    def part(x):
        p = (x.i32(), x.i16())
        r_tags(x, flex)
        return p

    def topic(x):
        name = r_string(x, flex)
        for p, e in r_array(x, part, flex):
            assert (name, p) not in out, "partition %s/%d answered twice" % (name, p)
            out[(name, p)] = e
        r_tags(x, flex)

    r_array(r, topic, flex)
    r_tags(r, flex)
    return out


def send_offset_commit(conn, version, group, offsets, **kw):
    return send_api(conn, OFFSET_COMMIT, version, offset_commit_body(version, group, offsets, **kw),
                    parse_offset_commit)


def offset_commit(conn, version, group, offsets, timeout=None, **kw):
    return send_offset_commit(conn, version, group, offsets, **kw).result(timeout)


# -- OffsetFetch v0-v8 -------------------------------------------------------------


def offset_fetch_body(version, groups, require_stable=False):
    """groups: list of (group_id, topics) with topics {topic: [partitions]} or None (all);
    exactly one group before v8."""
    flex = is_flexible(OFFSET_FETCH, version)

    def topics_enc(topics):
        if topics is None:
            assert version >= 2, "null topics need v2+"
            return f_array(None, None, flex)
        return f_array(list(topics.items()), lambda t: f_string(t[0], flex)
                       + f_array(t[1], i32, flex) + f_tags(flex), flex)

    if version >= 8:
        body = f_array(groups, lambda g: f_string(g[0], flex) + topics_enc(g[1]) + f_tags(flex), flex)
    else:
        assert len(groups) == 1
        body = f_string(groups[0][0], flex) + topics_enc(groups[0][1])
    if version >= 7:
        body += i8(1 if require_stable else 0)
    return body + f_tags(flex)


def parse_offset_fetch(r, version):
    """Returns {group_id (None before v8): dict(error, offsets={(topic, p): (offset, metadata, error)})}."""
    flex = is_flexible(OFFSET_FETCH, version)
    if version >= 3:
        r.i32()

    def topics_dec(x, offsets):
        def part(y):
            p = y.i32()
            off = y.i64()
            if version >= 5:
                y.i32()  # leader epoch
            meta = r_string(y, flex)
            err = y.i16()
            r_tags(y, flex)
            return p, off, meta, err

        def topic(y):
            name = r_string(y, flex)
            for p, off, meta, err in r_array(y, part, flex):
                assert (name, p) not in offsets, "partition %s/%d answered twice" % (name, p)
                offsets[(name, p)] = (off, meta, err)
            r_tags(y, flex)

        r_array(x, topic, flex)

    if version >= 8:
        out = {}

        def group(x):
            gid = r_string(x, flex)
            offsets = {}
            topics_dec(x, offsets)
            err = x.i16()
            r_tags(x, flex)
            assert gid not in out, "group %s answered twice" % gid
            out[gid] = dict(error=err, offsets=offsets)

        r_array(r, group, flex)
        r_tags(r, flex)
        return out
    offsets = {}
    topics_dec(r, offsets)
    err = r.i16() if version >= 2 else 0
    r_tags(r, flex)
    return {None: dict(error=err, offsets=offsets)}


def offset_fetch(conn, version, groups, require_stable=False, timeout=None):
    return send_api(conn, OFFSET_FETCH, version, offset_fetch_body(version, groups, require_stable),
                    parse_offset_fetch).result(timeout)


def offset_fetch_one(conn, version, group, topics):
    """Single group: returns (top-level error, {(topic, p): (offset, metadata, error)})."""
    res = offset_fetch(conn, version, [(group, topics)])
    key = group if version >= 8 else None
    assert list(res) == [key], "OffsetFetch answered for %r, asked for %r" % (list(res), group)
    return res[key]["error"], res[key]["offsets"]


# -- ListGroups v0-v4 ----------------------------------------------------------------


def list_groups_body(version, states=None):
    flex = is_flexible(LIST_GROUPS, version)
    body = b""
    if version >= 4:
        body += f_array(list(states or []), lambda s: f_string(s, flex), flex)
    return body + f_tags(flex)


def parse_list_groups(r, version):
    """Returns (error, {group_id: dict(protocol_type, state)})."""
    flex = is_flexible(LIST_GROUPS, version)
    if version >= 1:
        r.i32()
    err = r.i16()
    out = {}

    def group(x):
        gid = r_string(x, flex)
        d = dict(protocol_type=r_string(x, flex), state=r_string(x, flex) if version >= 4 else None)
        r_tags(x, flex)
        assert gid not in out, "group %s listed twice" % gid
        out[gid] = d

    r_array(r, group, flex)
    r_tags(r, flex)
    return err, out


def list_groups(conn, version, states=None, timeout=None):
    return send_api(conn, LIST_GROUPS, version, list_groups_body(version, states), parse_list_groups).result(timeout)


# -- DescribeGroups v0-v5 ------------------------------------------------------------


def describe_groups_body(version, groups):
    flex = is_flexible(DESCRIBE_GROUPS, version)
    body = f_array(groups, lambda g: f_string(g, flex), flex)
    if version >= 3:
        body += i8(0)
    return body + f_tags(flex)


def parse_describe_groups(r, version):
    """Returns a list of dicts in response order."""
    flex = is_flexible(DESCRIBE_GROUPS, version)
    if version >= 1:
        r.i32()

    def member(x):
        m = dict(member_id=r_string(x, flex))
        m["group_instance_id"] = r_string(x, flex) if version >= 4 else None
        m["client_id"] = r_string(x, flex)
        m["client_host"] = r_string(x, flex)
        m["metadata"] = r_bytes(x, flex)
        m["assignment"] = r_bytes(x, flex)
        r_tags(x, flex)
        return m

    def group(x):
        g = dict(error=x.i16(), group_id=r_string(x, flex), state=r_string(x, flex),
                 protocol_type=r_string(x, flex), protocol_data=r_string(x, flex))
        g["members"] = r_array(x, member, flex)
        if version >= 3:
            g["authorized_operations"] = x.i32()
        r_tags(x, flex)
        return g

    out = r_array(r, group, flex)
    r_tags(r, flex)
    return out


def describe_groups(conn, version, groups, timeout=None):
    return send_api(conn, DESCRIBE_GROUPS, version, describe_groups_body(version, groups),
                    parse_describe_groups).result(timeout)


# -- DeleteGroups v0-v2 ----------------------------------------------------------------


def parse_delete_groups(r, version):
    flex = is_flexible(DELETE_GROUPS, version)
    r.i32()
    out = {}

    def res(x):
        gid = r_string(x, flex)
        out[gid] = x.i16()
        r_tags(x, flex)

    r_array(r, res, flex)
    r_tags(r, flex)
    return out


def delete_groups(conn, version, groups, timeout=None):
    """Returns {group_id: error}."""
    flex = is_flexible(DELETE_GROUPS, version)
    body = f_array(groups, lambda g: f_string(g, flex), flex) + f_tags(flex)
    return send_api(conn, DELETE_GROUPS, version, body, parse_delete_groups).result(timeout)


# -- OffsetDelete v0 ------------------------------------------------------------------------


def parse_offset_delete(r, version):
    err = r.i16()
    r.i32()
    out = {}

    def topic(x):
        name = x.string()
        for p, e in x.array(lambda y: (y.i32(), y.i16())):
            out[(name, p)] = e

    r.array(topic)
    return err, out


def offset_delete(conn, group, topics, timeout=None):
    """topics: {topic: [partitions]}; returns (top-level error, {(topic, p): error})."""
    body = string(group) + array(list(topics.items()), lambda t: string(t[0]) + array(t[1], i32))
    return send_api(conn, OFFSET_DELETE, 0, body, parse_offset_delete).result(timeout)


# -- Consumer protocol payloads (ConsumerProtocolSubscription / Assignment v0) --------------


def consumer_subscription_v0(topics, user_data=None):
    return i16(0) + array(topics, string) + kbytes(user_data)


def consumer_assignment_v0(assignment, user_data=None):
    """assignment: {topic: [partitions]}."""
    return i16(0) + array(list(assignment.items()), lambda t: string(t[0]) + array(t[1], i32)) + kbytes(user_data)


def parse_consumer_assignment(data):
    """Decodes ConsumerProtocolAssignment (any version: v1+ only append fields); {topic: [partitions]}."""
    if not data:
        return {}
    r = Reader(data)
    r.i16()
    out = {}
    for name, parts in r.array(lambda x: (x.string(), x.array(lambda y: y.i32()))) or []:
        out.setdefault(name, []).extend(parts)
    return out


def parse_consumer_subscription(data):
    """Decodes ConsumerProtocolSubscription's topic list (fields after user_data are ignored)."""
    r = Reader(data)
    version = r.i16()
    topics = r.array(lambda x: x.string())
    user_data = r.kbytes()
    return dict(version=version, topics=topics, user_data=user_data)


# ==========================================================================
# Topic administration: DescribeConfigs v0-4, AlterConfigs v0-2,
# IncrementalAlterConfigs v0-1, CreatePartitions v0-3, DeleteRecords v0-2,
# plus ListOffsets v1-5 and Fetch v5 (which answers the log start offset).
#
# These reuse the group section's flexible-aware encoders and `send_api`; the
# first flexible version of each API (Kafka's "flexibleVersions") is added to
# the same table that `is_flexible` reads.
# ==========================================================================
DELETE_RECORDS = 21
DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
CREATE_PARTITIONS = 37
INCREMENTAL_ALTER_CONFIGS = 44

OFFSET_OUT_OF_RANGE = 1
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
INVALID_REQUEST = 42

# ConfigResource types.
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8

# DescribeConfigs config sources.
SOURCE_TOPIC_CONFIG = 1
SOURCE_STATIC_BROKER_CONFIG = 4
SOURCE_DEFAULT_CONFIG = 5

# IncrementalAlterConfigs operations.
OP_SET = 0
OP_DELETE = 1
OP_APPEND = 2
OP_SUBTRACT = 3

# ListOffsets special timestamps.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2

GROUP_API_FLEXIBLE_FROM.update({
    DELETE_RECORDS: 2, DESCRIBE_CONFIGS: 4, ALTER_CONFIGS: 2, CREATE_PARTITIONS: 2,
    INCREMENTAL_ALTER_CONFIGS: 1, LIST_OFFSETS: 6,
})


# -- DescribeConfigs v0-v4 ------------------------------------------------------------


def describe_configs_body(version, resources, include_synonyms=False, include_documentation=False):
    """resources: list of (resource_type, name, keys or None for all)."""
    flex = is_flexible(DESCRIBE_CONFIGS, version)

    def resource(res):
        rtype, name, keys = res
        out = i8(rtype) + f_string(name, flex)
        out += f_array(None if keys is None else list(keys), lambda k: f_string(k, flex), flex)
        return out + f_tags(flex)

    body = f_array(resources, resource, flex)
    if version >= 1:
        body += i8(1 if include_synonyms else 0)
    if version >= 3:
        body += i8(1 if include_documentation else 0)
    return body + f_tags(flex)


def parse_describe_configs(r, version):
    """Returns a list (response order) of dict(error, error_message, resource_type, resource_name,
    configs=[dict(name, value, read_only, is_default (v0 only, else None), source (v1+, else None),
    sensitive, synonyms=[(name, value, source)], config_type (v3+), documentation (v3+))])."""
    flex = is_flexible(DESCRIBE_CONFIGS, version)
    r.i32()  # throttle

    def synonym(x):
        s = (r_string(x, flex), r_string(x, flex), x.i8())
        r_tags(x, flex)
        return s

    def config(x):
        c = dict(name=r_string(x, flex), value=r_string(x, flex), read_only=x.boolean(),
                 is_default=None, source=None)
        if version == 0:
            c["is_default"] = x.boolean()
        else:
            c["source"] = x.i8()
        c["sensitive"] = x.boolean()
        c["synonyms"] = r_array(x, synonym, flex) if version >= 1 else []
        c["config_type"] = x.i8() if version >= 3 else None
        c["documentation"] = r_string(x, flex) if version >= 3 else None
        r_tags(x, flex)
        return c

    def result(x):
        d = dict(error=x.i16(), error_message=r_string(x, flex), resource_type=x.i8(),
                 resource_name=r_string(x, flex))
        d["configs"] = r_array(x, config, flex)
        r_tags(x, flex)
        return d

    out = r_array(r, result, flex)
    r_tags(r, flex)
    return out


def describe_configs(conn, version, resources, include_synonyms=False, include_documentation=False,
                     timeout=None):
    body = describe_configs_body(version, resources, include_synonyms, include_documentation)
    return send_api(conn, DESCRIBE_CONFIGS, version, body, parse_describe_configs).result(timeout)


# -- AlterConfigs v0-v2 and IncrementalAlterConfigs v0-v1 ------------------------------


def _parse_alter_configs_response(api_key):
    def parse(r, version):
        """Returns a list (response order) of dict(error, error_message, resource_type, resource_name)."""
        flex = is_flexible(api_key, version)
        r.i32()  # throttle

        def resp(x):
            d = dict(error=x.i16(), error_message=r_string(x, flex), resource_type=x.i8(),
                     resource_name=r_string(x, flex))
            r_tags(x, flex)
            return d

        out = r_array(r, resp, flex)
        r_tags(r, flex)
        return out
    return parse


parse_alter_configs = _parse_alter_configs_response(ALTER_CONFIGS)
parse_incremental_alter_configs = _parse_alter_configs_response(INCREMENTAL_ALTER_CONFIGS)


def alter_configs_body(version, resources, validate_only=False):
    """resources: list of (resource_type, name, [(key, value-or-None)]); a list, so that a key
    may be sent twice."""
    flex = is_flexible(ALTER_CONFIGS, version)

    def config(c):
        return f_string(c[0], flex) + f_nullable_string(c[1], flex) + f_tags(flex)

    def resource(res):
        return i8(res[0]) + f_string(res[1], flex) + f_array(list(res[2]), config, flex) + f_tags(flex)

    return f_array(resources, resource, flex) + i8(1 if validate_only else 0) + f_tags(flex)


def alter_configs(conn, version, resources, validate_only=False, timeout=None):
    return send_api(conn, ALTER_CONFIGS, version, alter_configs_body(version, resources, validate_only),
                    parse_alter_configs).result(timeout)


def incremental_alter_configs_body(version, resources, validate_only=False):
    """resources: list of (resource_type, name, [(key, op, value-or-None)])."""
    flex = is_flexible(INCREMENTAL_ALTER_CONFIGS, version)

    def config(c):
        return f_string(c[0], flex) + i8(c[1]) + f_nullable_string(c[2], flex) + f_tags(flex)

    def resource(res):
        return i8(res[0]) + f_string(res[1], flex) + f_array(list(res[2]), config, flex) + f_tags(flex)

    return f_array(resources, resource, flex) + i8(1 if validate_only else 0) + f_tags(flex)


def incremental_alter_configs(conn, version, resources, validate_only=False, timeout=None):
    body = incremental_alter_configs_body(version, resources, validate_only)
    return send_api(conn, INCREMENTAL_ALTER_CONFIGS, version, body, parse_incremental_alter_configs).result(timeout)


# -- CreatePartitions v0-v3 -------------------------------------------------------------


def create_partitions_body(version, topics, timeout_ms=10000, validate_only=False):
    """topics: list of (name, new total count, assignments [[broker ids]] or None)."""
    flex = is_flexible(CREATE_PARTITIONS, version)

    def assignment(a):
        return f_array(list(a), i32, flex) + f_tags(flex)

    def topic(t):
        name, count, assignments = t
        return f_string(name, flex) + i32(count) + f_array(assignments, assignment, flex) + f_tags(flex)

    return f_array(topics, topic, flex) + i32(timeout_ms) + i8(1 if validate_only else 0) + f_tags(flex)


def parse_create_partitions(r, version):
    """Returns {name: (error, error_message)}."""
    flex = is_flexible(CREATE_PARTITIONS, version)
    r.i32()  # throttle
    out = {}

    def result(x):
        name = r_string(x, flex)
        assert name not in out, "topic %s answered twice" % name
        out[name] = (x.i16(), r_string(x, flex))
        r_tags(x, flex)

    r_array(r, result, flex)
    r_tags(r, flex)
    return out


def create_partitions(conn, version, topics, timeout_ms=10000, validate_only=False, timeout=None):
    body = create_partitions_body(version, topics, timeout_ms, validate_only)
    return send_api(conn, CREATE_PARTITIONS, version, body, parse_create_partitions).result(timeout)


# -- DeleteRecords v0-v2 ------------------------------------------------------------------


def delete_records_body(version, offsets, timeout_ms=10000):
    """offsets: {topic: [(partition, offset)]}; offset -1 means the high watermark."""
    flex = is_flexible(DELETE_RECORDS, version)

    def part(p):
        return i32(p[0]) + i64(p[1]) + f_tags(flex)

    def topic(t):
        return f_string(t[0], flex) + f_array(list(t[1]), part, flex) + f_tags(flex)

    return f_array(list(offsets.items()), topic, flex) + i32(timeout_ms) + f_tags(flex)


def parse_delete_records(r, version):
    """Returns {(topic, partition): (low_watermark, error)}."""
    flex = is_flexible(DELETE_RECORDS, version)
    r.i32()  # throttle
    out = {}

    def topic(x):
        name = r_string(x, flex)

        def part(y):
            p, low, err = y.i32(), y.i64(), y.i16()
            r_tags(y, flex)
            assert (name, p) not in out, "partition %s/%d answered twice" % (name, p)
            out[(name, p)] = (low, err)

        r_array(x, part, flex)
        r_tags(x, flex)

    r_array(r, topic, flex)
    r_tags(r, flex)
    return out


def delete_records(conn, version, offsets, timeout_ms=10000, timeout=None):
    return send_api(conn, DELETE_RECORDS, version, delete_records_body(version, offsets, timeout_ms),
                    parse_delete_records).result(timeout)


# -- ListOffsets v1-v5 (classic encoding) --------------------------------------------------


def list_offsets(conn, topic, timestamps, version=2, timeout=None):
    """timestamps: {partition: timestamp (or EARLIEST_TIMESTAMP / LATEST_TIMESTAMP)}.
    Returns {partition: dict(error, timestamp, offset)}."""
    assert 1 <= version <= 5, "classic ListOffsets versions only"
    body = i32(-1)  # replica id: a consumer
    if version >= 2:
        body += i8(0)  # read uncommitted

    def part(item):
        p, ts = item
        out = i32(p)
        if version >= 4:
            out += i32(-1)  # current leader epoch
        return out + i64(ts)

    body += array([(topic, sorted(timestamps.items()))], lambda t: string(t[0]) + array(t[1], part))

    def parse(r, v):
        if v >= 2:
            r.i32()  # throttle
        out = {}

        def p_dec(x):
            p = x.i32()
            d = dict(error=x.i16(), timestamp=x.i64(), offset=x.i64())
            if v >= 4:
                x.i32()  # leader epoch
            out[p] = d

        topics = r.array(lambda x: (x.string(), x.array(p_dec)))
        assert [t[0] for t in topics] == [topic], topics
        return out

    return send_api(conn, LIST_OFFSETS, version, body, parse).result(timeout)


def log_start_offset(conn, topic, partition=0):
    """ListOffsets earliest; asserts no error."""
    d = list_offsets(conn, topic, {partition: EARLIEST_TIMESTAMP})[partition]
    assert d["error"] == NONE, "ListOffsets earliest %s/%d: error %d" % (topic, partition, d["error"])
    return d["offset"]


def high_watermark(conn, topic, partition=0):
    """ListOffsets latest; asserts no error."""
    d = list_offsets(conn, topic, {partition: LATEST_TIMESTAMP})[partition]
    assert d["error"] == NONE, "ListOffsets latest %s/%d: error %d" % (topic, partition, d["error"])
    return d["offset"]


# -- Fetch v5 (adds the log start offset to each partition) -----------------------------


def fetch_v5(conn, topic, partition, offset, max_bytes=4 * 1024 * 1024, max_wait_ms=200):
    body = (i32(-1) + i32(max_wait_ms) + i32(1) + i32(max_bytes) + i8(0)
            + i32(1) + string(topic) + i32(1) + i32(partition) + i64(offset) + i64(-1) + i32(max_bytes))
    r = conn.roundtrip(FETCH, 5, body)
    r.i32()  # throttle

    def part(x):
        return dict(partition=x.i32(), error=x.i16(), high_watermark=x.i64(), last_stable_offset=x.i64(),
                    log_start_offset=x.i64(), aborted=x.array(lambda y: (y.i64(), y.i64())), records=x.kbytes())

    topics = r.array(lambda x: (x.string(), x.array(part)))
    assert len(topics) == 1 and topics[0][0] == topic, topics
    parts = topics[0][1]
    assert len(parts) == 1 and parts[0]["partition"] == partition, parts
    return parts[0]


def batch_spans(data):
    """(base_offset, last_offset, size in bytes) of each complete batch of a record set."""
    out = []
    pos = 0
    while len(data) - pos >= 27:
        base_offset, batch_len = struct.unpack(">qi", data[pos:pos + 12])
        if batch_len < 0 or pos + 12 + batch_len > len(data):
            break
        last_delta = struct.unpack(">i", data[pos + 23:pos + 27])[0]
        out.append((base_offset, base_offset + last_delta, 12 + batch_len))
        pos += 12 + batch_len
    return out


def fetch_range_v5(conn, topic, partition, start, timeout=20.0):
    """Fetch from `start` up to the high watermark with Fetch v5.

    Returns (records at offsets >= start, spans (base, last, size) of the batches holding them,
    the last answer's partition dict: error, high_watermark, log_start_offset...)."""
    deadline = time.monotonic() + timeout
    offset = start
    out = []
    spans = []
    while True:
        p = fetch_v5(conn, topic, partition, offset)
        assert p["error"] == NONE, "fetch %s/%d at %d: error %d" % (topic, partition, offset, p["error"])
        data = p["records"] or b""
        recs, _ = decode_batches(data)
        spans.extend(s for s in batch_spans(data) if s[1] >= offset)
        recs = [x for x in recs if x.offset >= offset]
        out.extend(recs)
        if recs:
            offset = recs[-1].offset + 1
        if offset >= p["high_watermark"]:
            return out, spans, p
        if time.monotonic() > deadline:
            raise AssertionError("fetch did not reach high watermark %d (at %d)" % (p["high_watermark"], offset))
