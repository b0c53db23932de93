"""Consumer groups through kafka-python (KafkaConsumer with group_id) and kafkajs
(node/group_consume.js): end-to-end consumption compared record by record,
commits, and a second member of the same group resuming at the committed
position."""

import base64
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition

import group_helpers as G
import sluice_helpers as H

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE = "/usr/bin/node" if os.path.exists("/usr/bin/node") else shutil.which("node")


def produce_with_headers(bootstrap, topic, parts, per_part, salt, start=0):
    """Keyed records with headers and explicit timestamps, round-robin over partitions.

    Returns {(p, o): dict(key, value, headers, timestamp)}."""
    base = H.now_ms() - 60_000
    recs = []
    for i in range(start, start + parts * per_part):
        recs.append(dict(key=H.key_for(i), value=H.value_for(i, salt), headers=H.headers_for(i, salt),
                         timestamp=base + i, partition=i % parts))
    dr = H.produce_all(Producer(H.producer_conf(bootstrap)), topic, recs)
    out = {}
    for r, d in zip(recs, dr):
        assert d.partition == r["partition"]
        out[(d.partition, d.offset)] = r
    return out


def ends_of(expected):
    ends = {}
    for p, o in expected:
        ends[p] = max(ends.get(p, 0), o + 1)
    return ends


# --------------------------------------------------------------------------
# kafka-python
# --------------------------------------------------------------------------


def kp_consumer(bootstrap, topic, grp, client_id):
    return KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=grp, client_id=client_id,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         session_timeout_ms=6000, heartbeat_interval_ms=1000, fetch_max_wait_ms=100,
                         request_timeout_ms=30000, api_version_auto_timeout_ms=10000)


def kp_consume(consumer, n, timeout=45.0):
    """Poll until n records arrived; returns them as dicts, in arrival order."""
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        assert time.monotonic() < deadline, "kafka-python consumer got %d of %d records in %.0fs" % (
            len(out), n, timeout)
        for tp, recs in consumer.poll(timeout_ms=200, max_records=1000).items():
            for r in recs:
                out.append(dict(partition=r.partition, offset=r.offset, key=r.key, value=r.value,
                                headers=[(k, v) for k, v in r.headers], timestamp=r.timestamp,
                                timestamp_type=r.timestamp_type, topic=r.topic))
    return out


def assert_kp_records(expected, got, what):
    seen = {}
    for r in got:
        pos = (r["partition"], r["offset"])
        assert pos not in seen, "%s: %r delivered twice" % (what, pos)
        seen[pos] = r
    assert set(seen) == set(expected), "%s: positions differ: missing %r, unexpected %r" % (
        what, sorted(set(expected) - set(seen))[:10], sorted(set(seen) - set(expected))[:10])
    for pos, e in expected.items():
        g = seen[pos]
        assert (g["key"], g["value"], g["headers"], g["timestamp"], g["timestamp_type"]) == (
            e["key"], e["value"], e["headers"], e["timestamp"], 0), "%s: record %r differs" % (what, pos)


def test_kafka_python_group_consumes_commits_and_next_member_resumes(broker, topic_name):
    parts = 3
    H.create_topic(broker.bootstrap, topic_name, parts)
    grp = "kp-" + topic_name
    expected = produce_with_headers(broker.bootstrap, topic_name, parts, 400, b"kp1")

    c1 = kp_consumer(broker.bootstrap, topic_name, grp, "kp-one")
    try:
        got = kp_consume(c1, len(expected))
        # Nothing beyond what was produced shows up.
        extra = c1.poll(timeout_ms=300)
        assert not any(extra.values()), "unexpected extra records %r" % extra
        assert {tp.partition for tp in c1.assignment()} == set(range(parts))
        c1.commit()
        ends = ends_of(expected)
        for p in range(parts):
            assert c1.committed(KTopicPartition(topic_name, p)) == ends[p]
    finally:
        c1.close()
    assert all(r["topic"] == topic_name for r in got)
    assert_kp_records(expected, got, "kafka-python first member")
    # Within a partition, offsets arrive in order.
    last = {}
    for r in got:
        assert r["offset"] > last.get(r["partition"], -1)
        last[r["partition"]] = r["offset"]
    # The commit is visible to every client: raw OffsetFetch.
    raw = G.committed_raw(broker.bootstrap, grp, topic_name, range(parts))
    assert {p: o for p, (o, _) in raw.items()} == ends

    # A second member of the same group, after the first one left, starts from the commit.
    expected2 = produce_with_headers(broker.bootstrap, topic_name, parts, 50, b"kp2", start=10_000)
    assert min(o for _, o in expected2) == min(ends.values())
    c2 = kp_consumer(broker.bootstrap, topic_name, grp, "kp-two")
    try:
        got2 = kp_consume(c2, len(expected2))
        extra = c2.poll(timeout_ms=300)
        assert not any(extra.values()), "unexpected extra records %r" % extra
        c2.commit()
    finally:
        c2.close()
    firsts = {}
    for r in got2:
        firsts.setdefault(r["partition"], r["offset"])
    assert firsts == ends, "second member started at %r, the group had committed %r" % (firsts, ends)
    assert_kp_records(expected2, got2, "kafka-python second member")
    raw = G.committed_raw(broker.bootstrap, grp, topic_name, range(parts))
    assert {p: o for p, (o, _) in raw.items()} == ends_of({**expected, **expected2})


# --------------------------------------------------------------------------
# kafkajs
# --------------------------------------------------------------------------


def run_group_consume(bootstrap, topic, grp, expected_n, timeout=150):
    if NODE is None:
        pytest.fail("node is not installed (expected /usr/bin/node)", pytrace=False)
    if not (NODE_DIR / "node_modules" / "kafkajs" / "package.json").exists():
        pytest.fail("kafkajs is not installed: run `npm ci` in %s first" % NODE_DIR, pytrace=False)
    proc = subprocess.run([NODE, str(NODE_DIR / "group_consume.js"), bootstrap, topic, grp, str(expected_n)],
                          cwd=str(NODE_DIR), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, "group_consume.js exited %d\nstderr:\n%s" % (proc.returncode, err[-5000:])
    lines = [ln for ln in proc.stdout.decode().splitlines() if ln.strip()]
    assert lines, "group_consume.js printed nothing\nstderr:\n%s" % err[-5000:]
    return json.loads(lines[-1])


def decode_js(rec):
    return dict(partition=rec["partition"], offset=int(rec["offset"]),
                key=base64.b64decode(rec["key"]) if rec["key"] is not None else None,
                value=base64.b64decode(rec["value"]) if rec["value"] is not None else None,
                headers=[(k, base64.b64decode(v)) for k, v in rec["headers"].items()],
                timestamp=int(rec["timestamp"]), timestamp_type=0, topic=None)


def check_js_run(out, topic, expected, parts, what):
    got = [decode_js(r) for r in out["records"]]
    assert out["crashes"] == [], out["crashes"]
    assert_kp_records(expected, got, what)
    ends = ends_of(expected)
    committed = {int(p): int(o) for p, o in out["committedBeforeLeave"].items()}
    assert committed == ends, "%s: committed %r, expected the partition ends %r" % (what, committed, ends)
    after = {int(p): int(o) for p, o in out["committedAfterLeave"].items()}
    assert after == ends, "%s: after leaving, committed %r" % (what, after)
    d = out["describe"]
    assert (d["errorCode"], d["state"], d["protocolType"]) == (0, "Stable", "consumer"), d
    assert d["protocol"] == out["join"]["groupProtocol"], (d["protocol"], out["join"])
    assert len(d["members"]) == 1 and d["members"][0]["memberId"] == out["join"]["memberId"], d
    assert d["members"][0]["clientId"] == "sluice-it-kafkajs-group", d
    assert {t: sorted(ps) for t, ps in d["members"][0]["assignment"].items()} == {topic: list(range(parts))}, d
    assert out["join"]["isLeader"] and out["join"]["leaderId"] == out["join"]["memberId"], out["join"]
    assert {t: sorted(ps) for t, ps in out["join"]["memberAssignment"].items()} == {
        topic: list(range(parts))}, out["join"]
    return got


def test_kafkajs_group_consumes_end_to_end_and_resumes(broker, topic_name):
    parts = 3
    H.create_topic(broker.bootstrap, topic_name, parts)
    grp = "js-" + topic_name
    expected = produce_with_headers(broker.bootstrap, topic_name, parts, 300, b"js1")
    out = run_group_consume(broker.bootstrap, topic_name, grp, len(expected))
    check_js_run(out, topic_name, expected, parts, "kafkajs first run")
    raw = G.committed_raw(broker.bootstrap, grp, topic_name, range(parts))
    assert {p: o for p, (o, _) in raw.items()} == ends_of(expected)

    # Same group again: only the new records, starting at the committed offsets.
    expected2 = produce_with_headers(broker.bootstrap, topic_name, parts, 40, b"js2", start=10_000)
    out2 = run_group_consume(broker.bootstrap, topic_name, grp, len(expected2))
    got2 = check_js_run(out2, topic_name, expected2, parts, "kafkajs second run")
    firsts = {}
    for r in got2:
        firsts.setdefault(r["partition"], r["offset"])
    assert firsts == ends_of(expected), firsts
    assert out2["join"]["memberId"] != out["join"]["memberId"]
    listed = G.list_groups_raw(broker.bootstrap)
    assert listed.get(grp) == dict(protocol_type="consumer", state="Empty"), listed.get(grp)
