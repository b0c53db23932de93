"""The Apache Kafka Java client (kafka-clients 4.3.1, tests/jvm) against Sluice.

The producer runs with its defaults (enable.idempotence=true, acks=all, five requests
in flight), one producer per codec (none, gzip, snappy, lz4, zstd); every record is
compared with what the test set up (key, value, headers, timestamp), offsets are
contiguous with no duplicate, the stored batches carry the codec and the producer id
that DescribeProducers (AdminClient.describeProducers) reports with its epoch and last
sequence, and librdkafka reads the same records. offsetsForTimes and a seek there find
the first record at or after the time. Consumer groups use group.protocol=classic with
the range and cooperative-sticky assignors, and static membership (group.instance.id):
a member that restarts gets its partitions back without the other member rebalancing.
Transactions: test_transactions.py.
"""

import json

from confluent_kafka import Producer

import pytest

import cluster_mode as CM
import java_client_helpers as JC
import sluice_helpers as H
from test_compression import stored

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
PARTITIONS = 3
PER_TOPIC = 1500
BASE_TS = 1_700_000_000_000


def spec_records(topic, n):
    """Keys (some null, one empty), values (one null, one empty, UTF-8, up to 2 KB),
    headers (repeated keys, null values) and explicit, non-monotonic timestamps."""
    out = []
    for i in range(n):
        key = None if i % 97 == 0 else ("" if i == 1 else "k-%d-é" % i)
        value = None if i == 5 else ("" if i == 6 else ("v%d✓" % i) * (1 + i % 60))
        # Null header values stay rare: confluent-kafka 1.7, the cross-check below, drops a
        # reference to None for each one it reads, and thousands abort the interpreter.
        headers = [["idx", str(i)], ["dup", "a"], ["dup", None if i % 150 == 0 else "b%d" % i]]
        ts = BASE_TS + i * 1000 + (500 if i % 10 == 3 else 0)
        out.append(dict(topic=topic, partition=i % PARTITIONS, key=key, value=value, headers=headers, timestamp=ts))
    return out


def enc(s):
    return None if s is None else s.encode()


def expected_at(records, sent):
    """{(topic, partition, offset): record as librdkafka reports it} from the sent lines."""
    return {(s["topic"], s["partition"], s["offset"]): dict(
        key=enc(records[s["index"]]["key"]), value=enc(records[s["index"]]["value"]),
        headers=[(k, enc(v)) for k, v in records[s["index"]]["headers"]],
        timestamp=records[s["index"]]["timestamp"]) for s in sent}


def java_as_librdkafka(r):
    return dict(partition=r["partition"], offset=r["offset"], key=enc(r["key"]), value=enc(r["value"]),
                headers=[(k, enc(v)) for k, v in r["headers"]], timestamp=r["timestamp"],
                timestamp_type=1 if r["timestamp_type"] == "CreateTime" else 2)


@pytest.fixture(scope="module")
def producer_check(module_broker_factory, tmp_path_factory):
    """ProducerCheck's run over five topics, one per codec: (bootstrap, topics, records,
    its output lines, the time queried). DescribeProducers is asked unless the run skips
    the test that reads it (a shared-mode cluster: cluster_mode.py)."""
    bootstrap = module_broker_factory().bootstrap
    topics = {"java-%s" % c: c for c in CODECS}
    records = []
    for t in topics:
        H.create_topic(bootstrap, t, PARTITIONS)
        records += spec_records(t, PER_TOPIC)
    query_ts = BASE_TS + 700 * 1000 + 1  # just after record 700's time: record 703 (p1) is next
    times = [[t, 1, query_ts] for t in topics]
    spec = tmp_path_factory.mktemp("producer-check") / "spec.json"
    spec.write_text(json.dumps(dict(codecs=topics, records=records, times=times,
                                    partitions={t: PARTITIONS for t in topics},
                                    describe_producers=not CM.skipped_feature("describe_producers"))))
    out = JC.run("ProducerCheck", bootstrap, spec, timeout=300)
    return bootstrap, topics, records, out, query_ts


def stored_producer_ids(bootstrap, topics):
    """{topic: the producer ids of its stored batches}, with each partition's batches
    checked for the topic's codec and count."""
    ids = {}
    for t, codec in topics.items():
        for p in range(PARTITIONS):
            recs, batches, _ = stored(bootstrap, t, p)
            assert {b["compression"] for b in batches} == {CODEC_IDS[codec]}, (t, p, batches[:3])
            assert len(recs) == PER_TOPIC // PARTITIONS
            ids.setdefault(t, set()).update(b["producer_id"] for b in batches)
    return ids


def test_default_producer_every_codec_record_by_record(producer_check):
    bootstrap, topics, records, out, query_ts = producer_check
    for c in JC.by_kind(out, "config"):
        assert (c["enable.idempotence"], c["acks"], c["max.in.flight.requests.per.connection"]) == (True, "-1", 5), c
    assert sorted(c["compression.type"] for c in JC.by_kind(out, "config")) == sorted(CODECS)

    sent = JC.by_kind(out, "sent")
    assert sorted(s["index"] for s in sent) == list(range(len(records)))
    for s in sent:
        r = records[s["index"]]
        assert (s["topic"], s["partition"], s["timestamp"]) == (r["topic"], r["partition"], r["timestamp"]), s
    expected = expected_at(records, sent)
    for t in topics:
        # Acknowledged offsets per partition: 0..n-1 in the order sent (five in flight keep order).
        for p in range(PARTITIONS):
            offs = [s["offset"] for s in sent if s["topic"] == t and s["partition"] == p]
            assert offs == list(range(PER_TOPIC // PARTITIONS)), (t, p, offs[:10])

    got = JC.by_kind(out, "record")
    assert all(r["timestamp_type"] == "CreateTime" for r in got)
    for t in topics:
        mine = {(p, o): e for (tt, p, o), e in expected.items() if tt == t}
        H.assert_records_match(mine, [java_as_librdkafka(r) for r in got if r["topic"] == t])
        # librdkafka reads the same records.
        H.assert_records_match(mine, H.consume_all(bootstrap, t, {p: PER_TOPIC // PARTITIONS
                                                                   for p in range(PARTITIONS)}))

    # Stored as sent: each topic's codec, one producer id per topic (in every partition),
    # each topic its own.
    ids = stored_producer_ids(bootstrap, topics)
    assert all(len(v) == 1 and min(v) >= 0 for v in ids.values()), ids
    assert len({min(v) for v in ids.values()}) == len(topics), ids

    found = {x["topic"]: x for x in JC.by_kind(out, "time")}
    assert sorted(found) == sorted(topics)
    for t, x in found.items():
        in_p1 = sorted((s["offset"], records[s["index"]]["timestamp"]) for s in sent
                       if s["topic"] == t and s["partition"] == 1)
        want = next((o, ts) for o, ts in in_p1 if ts >= query_ts)
        assert (x["offset"], x["timestamp"]) == want, (x, want)
        assert (x["first_offset"], x["first_timestamp"]) == want, x


@pytest.mark.shared_missing("describe_producers")
def test_describe_producers_after_the_default_producer(producer_check):
    """AdminClient.describeProducers: in each partition the topic's producer, as its
    stored batches carry it, with its epoch, last sequence and last timestamp."""
    bootstrap, topics, records, out, _ = producer_check
    producers = JC.by_kind(out, "producers")
    assert sorted((x["topic"], x["partition"]) for x in producers) == sorted(
        (t, p) for t in topics for p in range(PARTITIONS)), producers
    ids = {}
    for x in producers:
        in_partition = [r for r in records if r["topic"] == x["topic"] and r["partition"] == x["partition"]]
        assert (x["epoch"], x["coordinator_epoch"], x["txn_start_offset"]) == (0, -1, -1), x
        assert x["last_sequence"] == len(in_partition) - 1, x
        assert x["last_timestamp"] == max(r["timestamp"] for r in in_partition), x
        ids.setdefault(x["topic"], set()).add(x["producer_id"])
    assert ids == stored_producer_ids(bootstrap, topics)


def produce_values(bootstrap, topic, partitions, per_partition, salt):
    p = Producer(H.producer_conf(bootstrap))
    want = set()
    for part in range(partitions):
        for i in range(per_partition):
            v = "%s-%d-%d" % (salt, part, i)
            p.produce(topic, value=v.encode(), partition=part)
            want.add(v)
    assert p.flush(30) == 0
    return want


def consumed(members):
    return [v for m in members for (_, _, v) in m.values()]


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_group_assignors(broker, topic_name, procs, assignor):
    partitions = 6
    H.create_topic(broker.bootstrap, topic_name, partitions)
    strategy = {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
                "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}[assignor]
    props = ["partition.assignment.strategy=" + strategy]
    group = "java-" + assignor + "-" + topic_name
    want = produce_values(broker.bootstrap, topic_name, partitions, 20, "before")
    a = JC.Member(procs, broker.bootstrap, group, topic_name, "A", *props)
    JC.wait_for("A to own every partition", lambda: a.assignment() == set(range(partitions)))
    JC.wait_for("A to read the first records", lambda: len(consumed([a])) == len(want))
    b = JC.Member(procs, broker.bootstrap, group, topic_name, "B", *props)
    JC.wait_for("A and B to share the partitions",
                lambda: a.assignment() | b.assignment() == set(range(partitions))
                and not a.assignment() & b.assignment() and len(b.assignment()) == 3,
                timeout=120)
    if assignor == "range":
        # Members sorted by id (client ids A..., B...): A takes the first half.
        assert (a.assignment(), b.assignment()) == ({0, 1, 2}, {3, 4, 5}), (a.describe(), b.describe())
        # Eager: A gave up everything before the second assignment.
        assert set(a.snapshot("revoked")[-1]["partitions"]) == set(range(partitions)), a.describe()
    else:
        # Cooperative: A gave up only the three that moved, and kept the others throughout.
        revoked = [set(e["partitions"]) for e in a.snapshot("revoked")]
        assert revoked == [b.assignment()], a.describe()
        assert not a.snapshot("lost"), a.describe()
    more = produce_values(broker.bootstrap, topic_name, partitions, 10, "after")
    JC.wait_for("the new records to be consumed",
                lambda: set(consumed([a, b])) >= want | more, timeout=90)
    for m in (a, b):
        for (p, _, v) in m.values():
            if v.startswith("after"):
                assert p in m.assignment(), (m.name, p, v)
    a.stop(leave=True)
    b.stop(leave=True)
    got = consumed([a, b])
    assert sorted(got) == sorted(want | more), "each record once, with commits after processing"


def test_static_member_restart_keeps_its_partitions_without_rebalance(broker, topic_name, procs):
    partitions = 4
    H.create_topic(broker.bootstrap, topic_name, partitions)
    group = "java-static-" + topic_name
    props = ["session.timeout.ms=30000", "heartbeat.interval.ms=1000"]
    a = JC.Member(procs, broker.bootstrap, group, topic_name, "A", "group.instance.id=inst-a", *props)
    JC.wait_for("A to own every partition", lambda: a.assignment() == set(range(partitions)))
    b = JC.Member(procs, broker.bootstrap, group, topic_name, "B", "group.instance.id=inst-b", *props)
    JC.wait_for("A and B to share", lambda: len(b.assignment()) == 2 and not a.assignment() & b.assignment()
                and a.assignment() | b.assignment() == set(range(partitions)), timeout=120)
    a_events = len(a.snapshot())
    b_parts = b.assignment()
    generation = b.snapshot("assigned")[-1]["generation"]
    b.stop()  # a static member's close sends no LeaveGroup: the group keeps its slot
    b2 = JC.Member(procs, broker.bootstrap, group, topic_name, "B2", "group.instance.id=inst-b", *props)
    JC.wait_for("B2 to get B's partitions", lambda: b2.snapshot("assigned"), timeout=60)
    got = b2.snapshot("assigned")[0]
    assert set(got["partitions"]) == b_parts, (got, b_parts)
    assert got["generation"] == generation, (got, generation)  # no new generation
    assert got["member_id"] != b.snapshot("assigned")[-1]["member_id"]
    want = produce_values(broker.bootstrap, topic_name, partitions, 10, "static")
    JC.wait_for("both to consume", lambda: set(consumed([a, b2])) >= want, timeout=90)
    # A saw no rebalance: nothing revoked or assigned since B left and came back.
    assert [e["kind"] for e in a.snapshot()[a_events:] if e["kind"] not in ("record", "committed")] == [], a.describe()
    assert all(p in b_parts for (p, _, _) in b2.values()), b2.describe()
    a.stop(leave=True)
    b2.stop(leave=True)
