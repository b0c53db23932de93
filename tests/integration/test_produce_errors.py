"""Produce refusals carry the broker's reason: Produce v8+ answers error_message for
every refused partition, and record_errors[].batch_index names the record at fault
when one record is (as Kafka's answers do). Raw Produce v9 (flexible) requests; after
each refusal the same connection keeps producing, and only the good records are
stored."""

import kproto as K
import sluice_helpers as H
from test_flexible import produce_v9

INVALID_RECORD = 87


def refusal(p):
    """(error, message, record_errors) of a Produce v9 partition answer."""
    return p["error"], p["message"], [(i, m) for i, m, _ in p["record_errors"] or []]


def test_refusals_say_why_and_name_the_record(broker, topic_name):
    compacted = topic_name + "-compacted"
    small = topic_name + "-small"
    H.create_topic(broker.bootstrap, topic_name, 1)
    H.create_topic(broker.bootstrap, compacted, 1, config={"cleanup.policy": "compact"})
    H.create_topic(broker.bootstrap, small, 1, config={"max.message.bytes": "2000"})
    ts = H.now_ms()
    with K.Conn(broker.bootstrap) as conn:
        # The third record of a compacted topic's batch has no key.
        batch = K.encode_batch([(ts, b"a", b"1", []), (ts, b"b", b"2", []), (ts, None, b"3", [])])
        err, msg, recs = refusal(produce_v9(conn, compacted, 0, batch))
        assert err == INVALID_RECORD
        assert msg == "record 2 has no key, which a compacted topic requires", msg
        assert recs == [(2, msg)]
        ok = produce_v9(conn, compacted, 0, K.encode_batch([(ts, b"c", b"4", [])]))
        assert (ok["error"], ok["base_offset"], ok["message"], ok["record_errors"]) == (0, 0, None, [])

        # A batch whose second record claims offset delta 5.
        good = K.encode_batch([(ts, b"x", b"1", []), (ts, b"y", b"2", [])])
        body = bytearray(good)
        first_len = body[61] // 2  # zigzag varint length of record 0 (small)
        delta_at = 61 + 1 + first_len + 1 + 1 + 1  # record 1: length, attributes, ts delta
        assert body[delta_at] == 2  # zigzag(1)
        body[delta_at] = 10  # zigzag(5)
        body[17:21] = K.u32(K.crc32c(bytes(body[21:])))
        err, msg, recs = refusal(produce_v9(conn, topic_name, 0, bytes(body)))
        assert (err, msg, recs) == (INVALID_RECORD, "record 1 has offset delta 5, expected 1",
                                    [(1, "record 1 has offset delta 5, expected 1")])

        # Faults of the batch as a whole name no record, but still say why.
        err, msg, recs = refusal(produce_v9(conn, small, 0, K.encode_batch([(ts, b"big", b"b" * 5000, [])])))
        assert err == K.MESSAGE_TOO_LARGE and recs == []
        assert "above max.message.bytes 2000" in msg, msg
        err, msg, recs = refusal(produce_v9(conn, topic_name, 0,
                                            K.encode_batch([(ts, b"k", b"v", [])], corrupt_crc=True)))
        assert (err, msg, recs) == (K.CORRUPT_MESSAGE, "record batch CRC mismatch", [])
        err, msg, recs = refusal(produce_v9(conn, topic_name + "-nope", 0, good))
        assert (err, recs) == (K.UNKNOWN_TOPIC_OR_PARTITION, [])
        assert msg == "topic %s-nope does not exist" % topic_name, msg
        err, msg, recs = refusal(produce_v9(conn, topic_name, 3, good))
        assert (err, msg) == (K.UNKNOWN_TOPIC_OR_PARTITION, "topic %s has no partition 3" % topic_name)
        err, msg, recs = refusal(produce_v9(conn, topic_name, 0, K.encode_batch([(ts, b"gz", b"z", [])],
                                                                            compression=1, body=b"\x1f\x8b\x08")))
        assert (err, msg) == (K.INVALID_RECORD, "gzip batch does not decompress: truncated")
        bad_codec = bytearray(K.encode_batch([(ts, b"k", b"v", [])]))
        bad_codec[22] |= 0x6  # codec 6: none that Kafka has
        bad_codec[17:21] = K.crc32c(bytes(bad_codec[21:])).to_bytes(4, "big")
        err, msg, recs = refusal(produce_v9(conn, topic_name, 0, bytes(bad_codec)))
        assert (err, msg) == (K.UNSUPPORTED_COMPRESSION_TYPE, "compression codec 6 is unknown")

        ok = produce_v9(conn, topic_name, 0, good)
        assert (ok["error"], ok["base_offset"], ok["message"]) == (0, 0, None), ok
        recs, hw = K.fetch_all_v4(conn, topic_name, 0)
    assert hw == 2 and [(r.offset, r.key) for r in recs] == [(0, b"x"), (1, b"y")]


def test_librdkafka_reports_the_refusal(broker, topic_name):
    """What librdkafka 2.0.2 (confluent-kafka) shows of a refusal: the code, and its own
    text for it; a keyless record on a compacted topic fails its delivery with
    INVALID_RECORD, and the next record is delivered and stored."""
    from confluent_kafka import Producer
    H.create_topic(broker.bootstrap, topic_name, 1, config={"cleanup.policy": "compact"})
    producer = Producer(H.producer_conf(broker.bootstrap))
    d = H.produce_one(producer, topic_name, None, b"no key", partition=0)
    assert d.err is not None and d.err.code() == INVALID_RECORD, d
    # librdkafka 2.0.2 shows its own text for the code, not the broker's reason (that is
    # in the broker's log line and in Produce v8+ answers).
    assert d.err.str() == "Broker: Broker failed to validate record", d.err.str()
    d = H.produce_one(producer, topic_name, b"k", b"keyed", partition=0)
    assert d.err is None and d.offset == 0, d
    got = H.consume_all(broker.bootstrap, topic_name, {0: 1})
    assert [(r["key"], r["value"]) for r in got] == [(b"k", b"keyed")]
