"""Kafka Connect's three internal topics on a compacted broker (issue 4).

Connect's distributed worker creates its topics with the AdminClient (CreateTopics with
cleanup.policy=compact and a replication factor, -1 meaning the broker's default; here one
request creates all three), checks cleanup.policy with DescribeConfigs, and rebuilds its
state by reading each topic from the beginning, keeping the last value of every key. The
documented layout is:

    connect-configs  1 partition   connector-<c>, task-<c>-<i>, commit-<c>, target-state-<c>
    connect-offsets  25 partitions ["<connector>",{<source partition>}] -> {<source offset>}
    connect-status   5 partitions  status-connector-<c>, status-task-<c>-<i>

This test writes keyed JSON records shaped like Connect's (several rounds of updates,
connectors deleted with tombstones, one re-created), lets the broker's cleaner run, and
checks that a consumer from the beginning reads, per partition, exactly the latest
record of each key at its original offset, in offset order.

Determinism. segment.ms=1 rolls a segment at every append that comes a millisecond or
more after the segment was created, and every phase ends with one "tail" record per
partition written after a pause, so every record the test asserts on lies in a sealed
(cleanable) segment and only the tail is in the active one. The broker logs one
`cleaner:` line per pass with the offset it cleaned up to; the test waits until that
offset reaches each partition's tail before it reads, so it never compares against a
half-compacted log.

Tombstones. Phase 1 runs with the default delete.retention.ms (one day): a tombstone
that is the latest record of its key stays. Phase 2 sets delete.retention.ms=0 (as an
operator would, with AlterConfigs) and writes a second tail per partition: the next pass
removes the tombstones (an earlier pass saw them and they are older than 0 ms) and keeps
every other record as it was, the first tails included (the second tails, which share
their key, are in the active segment, which a pass neither cleans nor reads for its key
map, as in Kafka).
"""

import json
import re
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import ConfigResource, ConfigSource, NewTopic

import sluice_helpers as H

# Connect's documented partition counts (config topic: exactly one partition).
TOPICS = {"connect-configs": 1, "connect-offsets": 25, "connect-status": 5}
# segment.ms=1: every append a millisecond after a segment's creation rolls it.
# min.cleanable.dirty.ratio=0.01: a pass runs as soon as a sealed segment is dirty.
TEST_CONFIGS = {"segment.ms": "1", "min.cleanable.dirty.ratio": "0.01"}
CONNECTORS = ["foo", "bar", "baz"]
TASKS = 2
ROUNDS = 6
SOURCE_PARTITIONS = 40  # offsets-topic keys: enough to reach most of the 25 partitions
TAIL_KEY = b"tail"
# Longer than segment.ms plus clock granularity, so the next append rolls the segment.
ROLL_PAUSE_S = 0.02
CLEAN_TIMEOUT_S = 25.0

CLEANED_RE = re.compile(r" cleaner: (.+)-(\d+): dirty ratio .*; clean up to offset (\d+)$")


def js(obj):
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()


# --------------------------------------------------------------------------
# Connect-shaped records, round by round
# --------------------------------------------------------------------------


def live_connectors(rnd):
    """bar is deleted in round 3; baz is deleted in round 3 and re-created in round 5."""
    return [c for c in CONNECTORS if not (c == "bar" and rnd >= 3) and not (c == "baz" and rnd in (3, 4))]


def config_records(rnd):
    out = []
    for c in live_connectors(rnd):
        props = {"connector.class": "FileStreamSource", "tasks.max": str(TASKS),
                 "file": "/data/%s.txt" % c, "topic": "t-%s" % c, "rev": str(rnd)}
        out.append((b"connector-" + c.encode(), js({"properties": props})))
        out.append((b"target-state-" + c.encode(), js({"state": "PAUSED" if rnd == 2 else "STARTED"})))
        for t in range(TASKS):
            tprops = dict(props, **{"task.class": "FileStreamSourceTask", "task": str(t)})
            out.append((b"task-%s-%d" % (c.encode(), t), js({"properties": tprops})))
        out.append((b"commit-" + c.encode(), js({"tasks": TASKS})))
    if rnd == 3:  # Connect deletes a connector: tombstones for its config and target state
        for c in ("bar", "baz"):
            out += [(b"connector-" + c.encode(), None), (b"target-state-" + c.encode(), None)]
    return out


def offset_key(i):
    return js(["conn-%d" % (i % 3), {"filename": "/data/f%02d.txt" % i}])


def offset_records(rnd):
    out = []
    for i in range(SOURCE_PARTITIONS):
        if rnd == ROUNDS - 1 and i % 7 == 0:
            out.append((offset_key(i), None))  # offsets reset for this source partition
        elif i % 5 != 4 or rnd < 2:  # every fifth source partition stops after round 1
            out.append((offset_key(i), js({"position": 1000 * rnd + i, "line": rnd})))
    return out


def status_records(rnd):
    out = []
    for c in live_connectors(rnd):
        state = {"state": "RUNNING", "trace": None, "worker_id": "10.0.0.%d:8083" % (rnd % 2 + 1),
                 "generation": rnd}
        out.append((b"status-connector-" + c.encode(), js(state)))
        for t in range(TASKS):
            out.append((b"status-task-%s-%d" % (c.encode(), t), js(dict(state, generation=rnd + t))))
        out.append((b"status-topic-t-%s:connector-%s" % (c.encode(), c.encode()),
                    js({"topic": {"name": "t-" + c, "connector": c, "task": 0, "discoverTimestamp": rnd}})))
    if rnd == 3:
        for c in ("bar", "baz"):
            out.append((b"status-connector-" + c.encode(), None))
            out += [(b"status-task-%s-%d" % (c.encode(), t), None) for t in range(TASKS)]
    return out


GENERATORS = {"connect-configs": config_records, "connect-offsets": offset_records,
              "connect-status": status_records}


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def produce(producer, topic, pairs, partition=None):
    """Produce (key, value) pairs; returns [(partition, offset, key, value)] from the delivery reports."""
    recs = [dict(key=k, value=v, partition=partition) for k, v in pairs]
    dr = H.produce_all(producer, topic, recs)
    return [(d.partition, d.offset, k, v) for d, (k, v) in zip(dr, pairs)]


def latest_per_key(written):
    """{partition: [(offset, key, value)]}: the last record of each key, in offset order."""
    by_part = {}
    for p, o, k, v in written:
        by_part.setdefault(p, []).append((o, k, v))
    out = {}
    for p, recs in by_part.items():
        recs.sort()
        last = {k: o for o, k, _ in recs}
        out[p] = [(o, k, v) for o, k, v in recs if last[k] == o]
    return out


def cleaned_offsets(broker):
    """{(topic, partition): highest `clean up to offset` the broker's cleaner has logged}."""
    out = {}
    with open(broker.stderr_paths[-1], "r", encoding="utf-8", errors="replace") as f:
        for line in f:
            m = CLEANED_RE.search(line.rstrip("\n"))
            if m:
                tp = (m.group(1), int(m.group(2)))
                out[tp] = max(out.get(tp, -1), int(m.group(3)))
    return out


def wait_cleaned(broker, wanted):
    """Wait (bounded) until the cleaner has cleaned each (topic, partition) up to wanted[tp]."""
    deadline = time.monotonic() + CLEAN_TIMEOUT_S
    while True:
        got = cleaned_offsets(broker)
        behind = {tp: (got.get(tp), off) for tp, off in wanted.items() if got.get(tp, -1) < off}
        if not behind:
            return
        broker.assert_alive()
        assert time.monotonic() < deadline, (
            "cleaner did not reach the tails within %.0fs; (topic, partition): (cleaned to, wanted): %r"
            % (CLEAN_TIMEOUT_S, dict(sorted(behind.items())[:10])))
        time.sleep(0.2)


def read_back(bootstrap, topic, ends):
    """{partition: [(offset, key, value)]} read from the beginning up to ends[partition]."""
    out = {p: [] for p in ends}
    for r in H.consume_all(bootstrap, topic, ends, timeout=30):
        out[r["partition"]].append((r["offset"], r["key"], r["value"]))
    return out


def write_tails(producer, ends, value):
    """One tail record per partition of every topic, after a pause so that it rolls the
    partition's segment; updates ends. Returns {topic: [(partition, offset, key, value)]}."""
    time.sleep(ROLL_PAUSE_S)
    out = {t: [] for t in TOPICS}
    for topic, parts in TOPICS.items():
        for p in range(parts):
            d = H.produce_one(producer, topic, TAIL_KEY, value, partition=p)
            assert d.err is None and d.partition == p and d.offset == ends.get((topic, p), 0), (
                topic, p, d, ends.get((topic, p)))
            out[topic].append((p, d.offset, TAIL_KEY, value))
            ends[(topic, p)] = d.offset + 1
    return out


def tail_offsets(tails):
    return {(t, p): o for t, recs in tails.items() for p, o, _, _ in recs}


def source(entry):
    return int(getattr(entry.source, "value", entry.source))


def compare(topic, want, got):
    bad = []
    for p in sorted(want):
        if got[p] != want[p]:
            w, g = set(want[p]), set(got[p])
            bad.append("%s-%d: %d records expected, %d read; missing %r; unexpected %r" % (
                topic, p, len(want[p]), len(got[p]), sorted(w - g)[:4], sorted(g - w)[:4]))
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------
# The test
# --------------------------------------------------------------------------


@pytest.mark.single_node("waits on the cleaner's log lines of its one broker process (--log-cleaner-backoff-ms); "
                         "shared mode's compaction: test_shared_faults.py")
def test_connect_internal_topics_compact_to_latest_per_key(broker_factory):
    b = broker_factory(extra_args=["--log-cleaner-backoff-ms", "200"])
    adm = H.admin_client(b.bootstrap)

    # Created as Connect's TopicAdmin does: partitions per topic, replication factor -1 (the
    # broker's default), cleanup.policy=compact; plus the test's fast-cleaning settings.
    new = [NewTopic(t, num_partitions=n, replication_factor=-1,
                    config=dict(TEST_CONFIGS, **{"cleanup.policy": "compact"})) for t, n in TOPICS.items()]
    fs = adm.create_topics(new, request_timeout=15.0, operation_timeout=10.0)
    assert sorted(fs) == sorted(TOPICS)
    for t, f in fs.items():
        assert f.result(timeout=30) is None, t
    for t, n in TOPICS.items():
        H.wait_topic(b.bootstrap, t, n)

    # What Connect verifies before using the topics: partition counts and cleanup.policy.
    md = adm.list_topics(timeout=10)
    assert {t: len(md.topics[t].partitions) for t in TOPICS} == TOPICS
    res = adm.describe_configs([ConfigResource("topic", t) for t in TOPICS])
    described = {r.name: f.result(timeout=15) for r, f in res.items()}
    for t in TOPICS:
        cfg = described[t]
        assert (cfg["cleanup.policy"].value, source(cfg["cleanup.policy"])) == (
            "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG.value), (t, cfg["cleanup.policy"])
        assert cfg["segment.ms"].value == "1" and cfg["min.cleanable.dirty.ratio"].value == "0.01", t
        # Phase 1's tombstone expectation rests on the one-day default.
        assert (cfg["delete.retention.ms"].value, source(cfg["delete.retention.ms"])) == (
            "86400000", ConfigSource.DEFAULT_CONFIG.value), (t, cfg["delete.retention.ms"])

    # murmur2_random is the Java client's default partitioner: keys land where Connect's would.
    prod = Producer(H.producer_conf(b.bootstrap, **{"linger.ms": 2, "partitioner": "murmur2_random"}))
    written = {t: [] for t in TOPICS}
    for rnd in range(ROUNDS):
        for t, gen in GENERATORS.items():
            written[t] += produce(prod, t, gen(rnd))
        time.sleep(ROLL_PAUSE_S)  # the next round starts new segments
    ends = {}
    for t, recs in written.items():
        assert all(r[2] != TAIL_KEY for r in recs)
        for p, o, _, _ in recs:
            ends[(t, p)] = max(ends.get((t, p), 0), o + 1)
    # The keys reach most partitions of the offsets topic, and every status partition.
    assert len({p for p, _, _, _ in written["connect-offsets"]}) >= 15
    assert len({p for p, _, _, _ in written["connect-status"]}) == TOPICS["connect-status"]

    # Phase 1: default delete.retention.ms; latest record of each key, tombstones included.
    tails = write_tails(prod, ends, b"tail-1")
    # A partition holding only its tail has nothing sealed and is never cleaned.
    wait_cleaned(b, {tp: o for tp, o in tail_offsets(tails).items() if o > 0})
    for t, n in TOPICS.items():
        want = latest_per_key(written[t] + tails[t])
        got = read_back(b.bootstrap, t, {p: ends[(t, p)] for p in range(n)})
        compare(t, want, got)
        kept = sum(len(v) for v in got.values())
        assert kept < len(written[t]), (t, kept, len(written[t]))
        # Tombstones that are the latest of their key are still there.
        assert sum(1 for v in want.values() for r in v if r[2] is None) > 0, t

    # Spot checks in Connect's terms: bar is gone (tombstoned), baz is back at its round 5 config.
    cfg = {k: v for _, k, v in read_back(b.bootstrap, "connect-configs", {0: ends[("connect-configs", 0)]})[0]}
    assert cfg[b"connector-bar"] is None and cfg[b"target-state-bar"] is None
    assert json.loads(cfg[b"connector-baz"])["properties"]["rev"] == str(ROUNDS - 1)
    assert json.loads(cfg[b"commit-foo"]) == {"tasks": TASKS}

    # Phase 2: delete.retention.ms=0 (AlterConfigs replaces a topic's whole set, so the rest is
    # restated); a second tail per partition makes the first one cleanable, and the next pass
    # drops the tombstones (seen by an earlier pass, older than 0 ms).
    alter = [ConfigResource("topic", t, set_config=dict(
        TEST_CONFIGS, **{"cleanup.policy": "compact", "delete.retention.ms": "0"})) for t in TOPICS]
    for r, f in adm.alter_configs(alter).items():
        assert f.result(timeout=15) is None, r
    for r, f in adm.describe_configs([ConfigResource("topic", t) for t in TOPICS]).items():
        cfg = f.result(timeout=15)
        assert (cfg["delete.retention.ms"].value, cfg["cleanup.policy"].value) == ("0", "compact"), r
    time.sleep(0.01)  # tombstone timestamps strictly older than the pass's clock
    tails2 = write_tails(prod, ends, b"tail-2")
    wait_cleaned(b, tail_offsets(tails2))
    for t, n in TOPICS.items():
        # The first tail stays: only the second, in the active segment, supersedes it, and the
        # active segment is not part of a pass (nor of its key map).
        latest = latest_per_key(written[t] + tails[t])
        want = {p: [r for r in latest[p] if r[2] is not None] for p in range(n)}
        for p, o, k, v in tails2[t]:
            want[p].append((o, k, v))
        got = read_back(b.bootstrap, t, {p: ends[(t, p)] for p in range(n)})
        compare(t, want, got)
    b.assert_alive()
