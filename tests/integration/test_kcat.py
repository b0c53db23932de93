"""kcat (librdkafka CLI) metadata, produce and consume."""

import json
import shutil
import subprocess

import pytest

import sluice_helpers as H

KCAT = shutil.which("kcat") or "/usr/bin/kcat"
KCAT_COMMON = ["-X", "broker.address.family=v4"]


def kcat(args, input_bytes=None, timeout=60):
    if not shutil.which(KCAT):
        pytest.fail("kcat is not installed", pytrace=False)
    proc = subprocess.run([KCAT] + args, input=input_bytes, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=None if input_bytes is not None else subprocess.DEVNULL, timeout=timeout)
    return proc


def kcat_ok(args, input_bytes=None, timeout=60):
    proc = kcat(args, input_bytes, timeout)
    assert proc.returncode == 0, "kcat %s exited %d\nstderr:\n%s" % (
        " ".join(args), proc.returncode, proc.stderr.decode("utf-8", "replace")[-3000:])
    return proc.stdout.decode("utf-8", "replace")


def test_kcat_metadata_lists_topic(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 3)
    md = json.loads(kcat_ok(["-L", "-J", "-b", broker.bootstrap] + KCAT_COMMON))
    assert len(md["brokers"]) == 1
    node_id = md["brokers"][0]["id"]
    assert md["brokers"][0]["name"] == "127.0.0.1:%d" % broker.port
    topics = {t["topic"]: t for t in md["topics"]}
    assert topic_name in topics
    t = topics[topic_name]
    assert "error" not in t, t
    assert sorted(p["partition"] for p in t["partitions"]) == [0, 1, 2]
    for p in t["partitions"]:
        assert p["leader"] == node_id
        assert [r["id"] for r in p["replicas"]] == [node_id]
        assert [r["id"] for r in p["isrs"]] == [node_id]

    text = kcat_ok(["-L", "-b", broker.bootstrap, "-t", topic_name] + KCAT_COMMON)
    assert 'topic "%s" with 3 partitions:' % topic_name in text, text
    for p in range(3):
        assert "partition %d, leader %d, replicas: %d, isrs: %d" % (p, node_id, node_id, node_id) in text, text


def test_kcat_produce_consume(broker, topic_name):
    parts = 3
    H.create_topic(broker.bootstrap, topic_name, parts)
    sent = {}
    for p in range(parts):
        # Values may contain the delimiter: only the first ':' splits key from value.
        lines = ["key-%d-%04d:value %d/%04d with:colons and spaces" % (p, i, p, i) for i in range(200 + 50 * p)]
        sent[p] = lines
        kcat_ok(["-P", "-b", broker.bootstrap, "-t", topic_name, "-p", str(p), "-K:", "-X", "acks=all"]
                + KCAT_COMMON, input_bytes=("\n".join(lines) + "\n").encode())

    for p in range(parts):
        out = kcat_ok(["-C", "-b", broker.bootstrap, "-t", topic_name, "-p", str(p), "-o", "beginning", "-e",
                       "-q", "-f", "%k:%s:%o\n"] + KCAT_COMMON)
        got = out.splitlines()
        want = ["%s:%d" % (line, i) for i, line in enumerate(sent[p])]
        assert len(got) == len(want), "partition %d: kcat read %d lines, produced %d" % (p, len(got), len(want))
        assert got == want

    # Everything at once, with partition numbers, through librdkafka's consumer path in kcat.
    out = kcat_ok(["-C", "-b", broker.bootstrap, "-t", topic_name, "-o", "beginning", "-e", "-q",
                   "-f", "%p|%o|%k\n"] + KCAT_COMMON)
    got = sorted(tuple(line.split("|")) for line in out.splitlines())
    want = sorted((str(p), str(i), line.split(":", 1)[0]) for p in range(parts) for i, line in enumerate(sent[p]))
    assert got == want


def test_kcat_consume_from_offset(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1)
    lines = ["k%03d:v%03d" % (i, i) for i in range(100)]
    kcat_ok(["-P", "-b", broker.bootstrap, "-t", topic_name, "-p", "0", "-K:"] + KCAT_COMMON,
            input_bytes=("\n".join(lines) + "\n").encode())
    out = kcat_ok(["-C", "-b", broker.bootstrap, "-t", topic_name, "-p", "0", "-o", "37", "-e", "-q",
                   "-f", "%k:%s:%o\n"] + KCAT_COMMON)
    assert out.splitlines() == ["%s:%d" % (lines[i], i) for i in range(37, 100)]
    out = kcat_ok(["-C", "-b", broker.bootstrap, "-t", topic_name, "-p", "0", "-o", "-5", "-e", "-q",
                   "-f", "%k:%o\n"] + KCAT_COMMON)
    assert out.splitlines() == ["k%03d:%d" % (i, i) for i in range(95, 100)]
