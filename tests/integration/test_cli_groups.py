"""`sluice group`, `produce`, `consume`, `cluster info` and `topic alter-config` against one
broker shared by the module: output (table and --format json), effects read back with
confluent-kafka, and exit codes (2 for a usage error, 1 for what the broker refuses)."""

import base64
import json
import signal
import subprocess
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource

import conftest
import security_helpers as S
import sluice_helpers as H

TS0 = 1_700_000_000_000  # record timestamps of the consume tests: TS0, TS0 + 1000, ...


@pytest.fixture(scope="module")
def b(module_broker_factory):
    return module_broker_factory()


def run(args, stdin=b"", timeout=30):
    proc = subprocess.run([conftest.require_binary()] + args, input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def ok(args, stdin=b""):
    rc, out, err = run(args, stdin)
    assert rc == 0, "sluice %s exited %d\nstdout:\n%s\nstderr:\n%s" % (" ".join(args), rc, out, err)
    return out, err


def exits(code, args, stdin=b""):
    rc, out, err = run(args, stdin)
    assert rc == code, "sluice %s exited %d, not %d\nstdout:\n%s\nstderr:\n%s" % (
        " ".join(args), rc, code, out, err)
    assert err.strip(), "exit %d without a message on stderr" % rc
    return err


def json_lines(out):
    return [json.loads(ln) for ln in out.splitlines() if ln.strip()]


def produce(bootstrap, topic, records):
    """records: (partition, key, value, headers, timestamp) tuples, sent in order."""
    p = Producer(H.producer_conf(bootstrap))
    for part, key, value, headers, ts in records:
        d = H.produce_one(p, topic, key, value, partition=part, headers=headers, timestamp=ts)
        assert d.err is None, d


def committed(bootstrap, group, topic, partitions):
    c = Consumer(H.consumer_conf(bootstrap, **{"group.id": group}))
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=15)
        return {tp.partition: tp.offset for tp in got}
    finally:
        c.close()


def test_group_list_describe_reset_delete(b):
    topic, group = H.unique_topic("grp"), H.unique_topic("g")
    H.create_topic(b.bootstrap, topic, 2)
    produce(b.bootstrap, topic, [(0, b"k", b"v%d" % i, None, None) for i in range(10)] +
            [(1, b"k", b"w%d" % i, None, None) for i in range(6)])
    member = Consumer(H.consumer_conf(b.bootstrap, **{"group.id": group, "auto.offset.reset": "earliest",
                                                       "enable.partition.eof": False}))
    member.subscribe([topic])
    seen, deadline = 0, time.time() + 30
    while seen < 16 and time.time() < deadline:
        m = member.poll(0.5)
        if m is not None and m.error() is None:
            seen += 1
    assert seen == 16, "the group member read %d of 16 records" % seen
    member.commit(offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 6)], asynchronous=False)
    try:
        out, _ = ok(["group", "list", "-b", b.bootstrap, "--format", "json"])
        listed = {g["group"]: g for g in json_lines(out)}
        assert listed[group]["state"] == "Stable" and listed[group]["protocol_type"] == "consumer", listed
        table, _ = ok(["group", "list", "-b", b.bootstrap])
        assert any(ln.split("|")[0].strip() == group for ln in table.splitlines()), table

        out, err = ok(["group", "describe", group, "-b", b.bootstrap, "--format", "json"])
        rows = {r["partition"]: r for r in json_lines(out)}
        assert set(rows) == {0, 1}, out
        assert (rows[0]["current_offset"], rows[0]["log_end_offset"], rows[0]["lag"]) == (4, 10, 6), rows[0]
        assert (rows[1]["current_offset"], rows[1]["log_end_offset"], rows[1]["lag"]) == (6, 6, 0), rows[1]
        assert rows[0]["consumer_id"] and rows[0]["consumer_id"] == rows[1]["consumer_id"], rows
        assert "Stable, 1 member" in err, err
        table, _ = ok(["group", "describe", group, "-b", b.bootstrap])
        assert "log_end_offset" in table and "(2 rows)" in table, table

        err = exits(1, ["group", "reset-offsets", group, "-b", b.bootstrap, "--to-earliest", "--execute"])
        assert "active member" in err, err
    finally:
        member.close()

    # Dry run: the plan, nothing committed.
    out, err = ok(["group", "reset-offsets", group, "-b", b.bootstrap, "--to-earliest", "--format", "json"])
    assert [(r["partition"], r["current_offset"], r["new_offset"]) for r in json_lines(out)] == [(0, 4, 0), (1, 6, 0)]
    assert "dry run" in err, err
    assert committed(b.bootstrap, group, topic, 2) == {0: 4, 1: 6}
    # --execute, to an offset (kept within each partition: 7 is past partition 1's end, 6).
    ok(["group", "reset-offsets", group, "-b", b.bootstrap, "--topic", topic, "--to-offset", "7", "--execute"])
    assert committed(b.bootstrap, group, topic, 2) == {0: 7, 1: 6}
    ok(["group", "reset-offsets", group, "-b", b.bootstrap, "--to-latest", "--execute"])
    assert committed(b.bootstrap, group, topic, 2) == {0: 10, 1: 6}

    # A time: before every record gives the first offsets, after every record the ends.
    out, _ = ok(["group", "reset-offsets", group, "-b", b.bootstrap, "--to-datetime", "2000-01-01T00:00:00Z",
                 "--format", "json"])
    assert [r["new_offset"] for r in json_lines(out)] == [0, 0], out
    out, _ = ok(["group", "reset-offsets", group, "-b", b.bootstrap, "--to-datetime",
                 str(H.now_ms() + 3_600_000), "--format", "json"])
    assert [r["new_offset"] for r in json_lines(out)] == [10, 6], out
    exits(2, ["group", "reset-offsets", group, "-b", b.bootstrap, "--to-datetime", "soon"])
    exits(2, ["group", "reset-offsets", group, "-b", b.bootstrap])  # no target
    exits(2, ["group", "reset-offsets", group, "-b", b.bootstrap, "--to-earliest", "--to-latest"])
    out, _ = ok(["group", "delete", group, "-b", b.bootstrap])
    assert out.strip() == "deleted group '%s'" % group
    err = exits(1, ["group", "describe", group, "-b", b.bootstrap])
    assert "does not exist" in err, err
    exits(1, ["group", "delete", group, "-b", b.bootstrap])


def test_produce_reads_lines_with_keys_and_headers(b):
    topic = H.unique_topic("prod")
    H.create_topic(b.bootstrap, topic, 1)
    _, err = ok(["produce", topic, "-b", b.bootstrap, "--key-separator", "::", "--header", "src=cli",
                 "--header", "n=1"], stdin=b"k1::v1\nk2::v2 with :: inside\nno key here\n")
    assert "produced 3 records" in err, err
    c = H.make_consumer(b.bootstrap)
    c.assign([TopicPartition(topic, 0, 0)])
    msgs = []
    deadline = time.time() + 20
    while len(msgs) < 3 and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            msgs.append(m)
    c.close()
    assert [(m.key(), m.value()) for m in msgs] == [(b"k1", b"v1"), (b"k2", b"v2 with :: inside"),
                                                     (None, b"no key here")]
    assert all(m.headers() == [("src", b"cli"), ("n", b"1")] for m in msgs), [m.headers() for m in msgs]

    # Keys land where the Java client (murmur2) puts them.
    spread = H.unique_topic("spread")
    H.create_topic(b.bootstrap, spread, 3)
    keys = [b"key-%d" % i for i in range(12)]
    ok(["produce", spread, "-b", b.bootstrap, "-K", "\t"], stdin=b"".join(k + b"\tv\n" for k in keys))
    out, _ = ok(["consume", spread, "-b", b.bootstrap, "--from-beginning", "--format", "json"])
    placed = {r["key"].encode(): r["partition"] for r in json_lines(out)}
    java = Producer(H.producer_conf(b.bootstrap, partitioner="murmur2_random"))
    expected = {k: H.produce_one(java, spread, k, b"v").partition for k in keys}
    assert placed == expected and len(set(placed.values())) > 1, (placed, expected)

    err = exits(1, ["produce", "no-such-topic-x", "-b", b.bootstrap], stdin=b"a\n")
    assert "does not exist" in err, err
    exits(2, ["produce", topic, "-b", b.bootstrap, "--header", "novalue"], stdin=b"a\n")


@pytest.fixture(scope="module")
def consumed_topic(b):
    topic = H.unique_topic("cons")
    H.create_topic(b.bootstrap, topic, 1)
    produce(b.bootstrap, topic, [(0, b"key%d" % i, b"value%d" % i, [("h", b"x%d" % i)], TS0 + 1000 * i)
                                 for i in range(5)] + [(0, None, b"\xff\x00", None, TS0 + 5000)])
    return topic


def test_consume_positions_and_count(b, consumed_topic):
    t = consumed_topic
    out, _ = ok(["consume", t, "-b", b.bootstrap, "--from-beginning", "--count", "3"])
    assert out.splitlines() == ["value0", "value1", "value2"]
    out, _ = ok(["consume", t, "-b", b.bootstrap, "--offset", "2", "--count", "3", "--key-separator", "="])
    assert out.splitlines() == ["key2=value2", "key3=value3", "key4=value4"]
    out, _ = ok(["consume", t, "-b", b.bootstrap, "--from-time", str(TS0 + 3000), "--format", "json"])
    assert [r["offset"] for r in json_lines(out)] == [3, 4, 5]
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((TS0 + 4000) / 1000)) + ".000Z"
    out, _ = ok(["consume", t, "-b", b.bootstrap, "--from-time", iso, "--format", "json"])
    assert [r["offset"] for r in json_lines(out)] == [4, 5]
    # Without --follow, consume stops at the end.
    out, _ = ok(["consume", t, "-b", b.bootstrap])
    assert out == ""


def test_consume_json_records(b, consumed_topic):
    out, _ = ok(["consume", consumed_topic, "-b", b.bootstrap, "--from-beginning", "--format", "json"])
    rows = json_lines(out)
    assert len(rows) == 6
    assert rows[1] == {"topic": consumed_topic, "partition": 0, "offset": 1, "timestamp": TS0 + 1000,
                       "key": "key1", "value": "value1", "headers": [{"key": "h", "value": "x1"}]}
    assert rows[5]["key"] is None and rows[5]["headers"] == []
    assert base64.b64decode(rows[5]["value"]["base64"]) == b"\xff\x00", rows[5]


def test_consume_follow_stops_on_sigint(b):
    topic = H.unique_topic("follow")
    H.create_topic(b.bootstrap, topic, 1)
    produce(b.bootstrap, topic, [(0, None, b"first", None, None)])
    proc = subprocess.Popen([conftest.require_binary(), "consume", topic, "-b", b.bootstrap, "--from-beginning",
                             "--follow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    H.register_proc(proc)
    try:
        assert proc.stdout.readline() == b"first\n"
        produce(b.bootstrap, topic, [(0, None, b"second", None, None)])
        assert proc.stdout.readline() == b"second\n"
        assert proc.poll() is None, "consume --follow exited at the end of the topic"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        H.kill_proc(proc)


def test_consume_errors(b, consumed_topic):
    err = exits(1, ["consume", "no-such-topic-y", "-b", b.bootstrap])
    assert "does not exist" in err, err
    exits(2, ["consume", consumed_topic, "-b", b.bootstrap, "--count", "0"])
    exits(2, ["consume", consumed_topic, "-b", b.bootstrap, "--format", "xml"])
    exits(2, ["consume", consumed_topic, "-b", b.bootstrap, "--from-beginning", "--offset", "1"])
    exits(2, ["consume", consumed_topic, "-b", b.bootstrap, "--from-time", "yesterday"])


def test_cluster_info(b):
    out, _ = ok(["cluster", "info", "-b", b.bootstrap, "--format", "json"])
    rows = json_lines(out)
    assert len(rows) == 1, rows
    host, port = b.bootstrap.rsplit(":", 1)
    assert (rows[0]["host"], rows[0]["port"]) == (host, int(port)), rows
    assert rows[0]["cluster_id"] and rows[0]["broker_id"] == rows[0]["controller_id"], rows
    md = H.admin_client(b.bootstrap).list_topics(timeout=10)
    assert rows[0]["cluster_id"] == md.cluster_id
    table, _ = ok(["cluster", "info", "-b", b.bootstrap])
    assert md.cluster_id in table and "(1 row)" in table, table
    exits(1, ["cluster", "info", "-b", "127.0.0.1:1"])


def test_topic_alter_config(b):
    topic = H.unique_topic("alter")
    H.create_topic(b.bootstrap, topic, 1)
    adm = H.admin_client(b.bootstrap)

    def retention():
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        return adm.describe_configs([res])[res].result(timeout=15)["retention.ms"]

    out, _ = ok(["topic", "alter-config", topic, "-b", b.bootstrap, "--set", "retention.ms=12345"])
    assert out.strip() == "set retention.ms=12345"
    assert retention().value == "12345"
    ok(["topic", "alter-config", topic, "-b", b.bootstrap, "--delete", "retention.ms"])
    assert retention().value != "12345" and retention().is_default
    err = exits(1, ["topic", "alter-config", "no-such-topic-z", "-b", b.bootstrap, "--set", "retention.ms=1"])
    assert "UNKNOWN_TOPIC_OR_PARTITION" in err, err
    exits(2, ["topic", "alter-config", topic, "-b", b.bootstrap])
    exits(2, ["topic", "alter-config", topic, "-b", b.bootstrap, "--set", "retention.ms"])


def test_commands_reach_a_sasl_listener(secure_broker_factory):
    """produce, consume, group and cluster take the same -X properties as `sluice topic`;
    `dave` may read and write sec-* topics but has no right on any group."""
    b = secure_broker_factory(["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"], start=False)
    t = S.Target.stopped(b)
    S.grant(t, "admin", [S.allow("*", "sluice:*")], password="sec-admin-pw")
    S.grant(t, "dave", [S.allow("*", "sluice:topic:sec-*")], password="sec-dave-pw")
    b.start()
    addr = b.addr("SASL_PLAINTEXT")

    def flags(user, password):
        return ["-b", addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-256",
                "-X", "sasl.username=" + user, "-X", "sasl.password=" + password]

    admin, dave = flags("admin", "sec-admin-pw"), flags("dave", "sec-dave-pw")
    topic = H.unique_topic("sec-")
    ok(["topic", "create", topic] + admin)
    _, err = ok(["produce", topic] + dave, stdin=b"one\ntwo\n")
    assert "produced 2 records" in err, err
    out, _ = ok(["consume", topic, "--from-beginning"] + dave)
    assert out.splitlines() == ["one", "two"]
    info, _ = ok(["cluster", "info", "--format", "json"] + admin)
    assert json_lines(info)[0]["port"] == int(addr.rsplit(":", 1)[1])
    ok(["group", "list"] + admin)
    # librdkafka's reason, at once rather than after the 10 s metadata bound.
    for args, reason in ((["consume", topic, "-b", addr], "security.protocol"),
                         (["produce", topic] + flags("dave", "wrong"), "SASL authentication error")):
        start = time.time()
        err = exits(1, args, stdin=b"x\n")
        assert reason in err and time.time() - start < 5, err
    err = exits(1, ["group", "list", "-b", addr])
    assert "--command-config" in err, err
