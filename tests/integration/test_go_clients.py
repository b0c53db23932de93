"""Go clients against Sluice, each a program of the Go module in go/ (pinned in go.sum)
printing JSON lines: franz-go v1.22.3 with kadm v1.20.0 at its defaults (idempotent,
batching), segmentio/kafka-go v0.4.51 (acks=all) and IBM/sarama v1.61.1 (SyncProducer,
ConsumerGroup, ClusterAdmin). For each: topics created through its
admin API (a second create answers TOPIC_ALREADY_EXISTS), keyed records with headers in
every codec, read back by librdkafka record by record and checked stored with their
codec; a two-member consumer group that reads everything with disjoint partitions and
commits; a third member that resumes at the commits; the admin reads (groups, offsets,
configs, topics)."""

import json
import subprocess
from pathlib import Path

import pytest

import kproto as K
import sluice_helpers as H

GO_DIR = Path(__file__).resolve().parent / "go"
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
PARTITIONS = 3


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    out = tmp_path_factory.mktemp("gobin")
    built = {}
    for name in ("franz", "kafkago", "saramagroup"):
        r = subprocess.run(["go", "build", "-o", str(out / name), "./cmd/" + name], cwd=GO_DIR,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, "go build of %s failed:\n%s" % (name, r.stderr[-3000:])
        built[name] = out / name
    return built


def run(program, b, topic, group, per, extra=()):
    r = subprocess.run([str(program), "-bootstrap", b.bootstrap, "-topic", topic, "-group", group,
                        "-partitions", str(PARTITIONS), "-per-codec", str(per), *extra],
                       capture_output=True, text=True, timeout=200)
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert r.returncode == 0, (r.stderr[-3000:], lines[-3:], b.stderr_tail())
    by = {}
    for x in lines:
        by.setdefault(x["kind"], []).append(x)
    return by


def key_of(r):
    return (r["partition"], r["offset"], r["key"], r["value"], tuple(sorted(r["headers"].items())))


def expected_records(per, modulus):
    want = {}
    for codec in CODECS:
        for i in range(per):
            want["%s-v%d" % (codec, i)] = ("%s-k%d" % (codec, i % modulus), {"codec": codec, "i": str(i)})
    return want


# franz-next-gen: franz-go's group members with kgo.ServerSideBalancer(), its opt-in to
# KIP-848 consumer groups (v1.22 keeps the classic protocol by default).
@pytest.mark.parametrize("client,per,modulus", [("franz", 200, 17), ("franz-next-gen", 200, 17),
                                                ("kafkago", 100, 13), ("saramagroup", 100, 11)])
def test_go_client(programs, broker, topic_name, client, per, modulus):
    topic, group = topic_name.replace("_", "-"), "group-" + topic_name
    next_gen = client.endswith("-next-gen")
    client = client.split("-")[0]
    out = run(programs[client], broker, topic, group, per, ["-next-gen"] if next_gen else [])
    assert out["created"][0]["err"] is None
    # Each client words TOPIC_ALREADY_EXISTS its own way.
    assert "already exists" in (out["created-again"][0]["err"] or "").lower(), out["created-again"]
    for p in out["produced"]:
        assert p.get("errors") in (None, []) and p.get("err") is None, p
    total = per * len(CODECS)

    # librdkafka reads back what the client wrote: every record once, contiguous offsets.
    hw_late = H.high_watermarks(broker.bootstrap, topic, PARTITIONS)
    got = H.consume_all(broker.bootstrap, topic, hw_late)
    written = [r for r in got if r["key"] != b"late"]
    assert len(written) == total
    want = expected_records(per, modulus)
    by_value = {}
    for r in written:
        v = r["value"].decode()
        assert v not in by_value, "duplicate %s" % v
        by_value[v] = r
        key, headers = want[v]
        assert r["key"].decode() == key and dict((k, x.decode()) for k, x in r["headers"]) == headers, r
    assert set(by_value) == set(want)
    for p in range(PARTITIONS):
        offs = sorted(r["offset"] for r in got if r["partition"] == p)
        assert offs == list(range(hw_late[p])), (p, offs[:10])
    if client == "franz":
        acked = {}
        for p in out["produced"]:
            acked.update(p["acked"])
        assert {v: (r["partition"], r["offset"]) for v, r in by_value.items()} == {v: tuple(x) for v, x in acked.items()}
    # Each codec stored as sent (the batch attributes), none recompressed.
    seen_codecs = {}
    for p in range(PARTITIONS):
        recs, batches, _ = K.stored_batches(broker.bootstrap, topic, p)
        offsets_codec = {}
        for bt in batches:
            for o in range(bt["base_offset"], bt["base_offset"] + bt["last_offset_delta"] + 1):
                offsets_codec[o] = bt["attributes"] & 7
            if client == "franz":
                assert bt["producer_id"] >= 0, bt  # idempotent by default
        for r in recs:
            v = r.value.decode()
            if not v.startswith("late"):
                seen_codecs.setdefault(v.split("-")[0], set()).add(offsets_codec[r.offset])
    assert seen_codecs == {c: {n} for c, n in CODECS.items()}, seen_codecs

    # The group: two members, disjoint partitions covering all, everything read once.
    members = out["consumed"]
    assert len(members) == 2
    parts = [set(r["partition"] for r in m["records"]) for m in members]
    assert all(parts) and not (parts[0] & parts[1]) and parts[0] | parts[1] == set(range(PARTITIONS)), parts
    consumed = sorted(key_of(r) for m in members for r in m["records"])
    assert consumed == sorted(key_of(dict(partition=r["partition"], offset=r["offset"], key=r["key"].decode(),
                                          value=r["value"].decode(),
                                          headers={k: x.decode() for k, x in r["headers"]})) for r in written)
    committed = {int(p): o for p, o in out["committed"][0]["offsets"].items()}
    late = sorted((r["partition"], r["offset"], r["value"]) for r in out["resumed"][0]["records"])
    assert [x[2] for x in sorted(late, key=lambda x: x[2])] == ["late-%d" % i for i in range(5)]
    # The commits were the ends before the late records; the third member read from them.
    for p in range(PARTITIONS):
        n_late = sum(1 for x in late if x[0] == p)
        assert committed[p] == hw_late[p] - n_late, (p, committed, hw_late)
    assert all(o >= committed[p] for p, o, _ in late)

    if next_gen:
        # While both members were in: a consumer group of two consumer-protocol members
        # (ConsumerGroupDescribe member type 1) splitting the partitions.
        cg = out["consumer-group"][0]
        assert cg["err"] is None and cg["assignor"] == "uniform" and len(cg["members"]) == 2, cg
        assert all(m["type"] == 1 and m["epoch"] == cg["epoch"] for m in cg["members"]), cg
        split = [set(m["partitions"] or []) for m in cg["members"]]
        assert not (split[0] & split[1]) and split[0] | split[1] == set(range(PARTITIONS)), cg
    g = out["group"][0]
    assert (g["group"], g["state"], g["members"], g["err"]) == (group, "Empty", 0, None), g
    assert group in out["groups"][0]["names"]
    assert {int(p): o for p, o in out["ends"][0]["offsets"].items()} == hw_late
    assert out["configs"][0]["values"]["retention.ms"] == "3600000"
