"""Log compaction with a real client (confluent-kafka / librdkafka): a topic with
cleanup.policy=compact keeps the latest record of each key at its offset, consumers
read across the gaps, the result survives a restart, and a record without a key is
refused with INVALID_RECORD."""

import time

from confluent_kafka import KafkaError, Producer

import sluice_helpers as H


def produce_one(p, topic, key, value):
    result = {}

    def done(err, msg):
        result["err"] = err
        result["offset"] = None if err else msg.offset()

    p.produce(topic, key=key, value=value, partition=0, on_delivery=done)
    p.flush(30)
    return result


def survivors(bootstrap, topic, end):
    return [(r["offset"], r["key"], r["value"]) for r in H.consume_all(bootstrap, topic, {0: end})]


def test_compacted_topic_keeps_latest_value_per_key(broker_factory, topic_name):
    b = broker_factory(extra_args=["--log-cleaner-backoff-ms", "200"])
    # segment.ms=1: every produce rolls the segment, so all but the last are cleanable.
    H.create_topic(b.bootstrap, topic_name, 1, {
        "cleanup.policy": "compact", "segment.ms": "1", "min.cleanable.dirty.ratio": "0.01"})
    p = Producer(H.producer_conf(b.bootstrap, **{"linger.ms": 0}))
    for i in range(30):
        r = produce_one(p, topic_name, b"k%d" % (i % 5), b"v%d" % i)
        assert r["err"] is None and r["offset"] == i, r
        time.sleep(0.005)
    assert produce_one(p, topic_name, b"k0", None)["offset"] == 30  # tombstone
    time.sleep(0.005)
    assert produce_one(p, topic_name, b"tail", b"t")["offset"] == 31

    keyless = produce_one(p, topic_name, None, b"no key")
    assert keyless["err"] is not None and keyless["err"].code() == KafkaError.INVALID_RECORD, keyless

    want = [(26, b"k1", b"v26"), (27, b"k2", b"v27"), (28, b"k3", b"v28"), (29, b"k4", b"v29"),
            (30, b"k0", None), (31, b"tail", b"t")]
    deadline = time.monotonic() + 30
    got = survivors(b.bootstrap, topic_name, 32)
    while got != want and time.monotonic() < deadline:
        time.sleep(0.3)
        got = survivors(b.bootstrap, topic_name, 32)
    assert got == want, b.stderr_tail()
    assert "cleaner:" in b.stderr_tail(200)

    b.kill9()
    b.start()
    assert survivors(b.bootstrap, topic_name, 32) == want
