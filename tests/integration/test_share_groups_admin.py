"""Share groups (KIP-932) from the operator's side and at their edges: Kafka's
`kafka-share-groups` tool (4.3.1 jars through scripts/kafka-tool, i.e. ListGroups,
ShareGroupDescribe, DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets and DeleteGroups from the Java Admin client) with what a
KafkaShareConsumer (tests/jvm's ShareMember) receives after a reset;
--share-isolation-level read_committed with a transactional producer that aborts one
transaction and commits another; and a broker kill -9 while a share consumer is in the
middle of a topic.
"""

import collections
import socket
import time

from confluent_kafka import Producer

import java_client_helpers as JC
import jvm_helpers as J
import kproto as K
import kproto_flex as F
import sluice_helpers as H

LOCK_MS = 4000
SHARE_ARGS = ["--share-auto-offset-reset", "earliest",
              "--group-share-record-lock-duration-ms", str(LOCK_MS),
              "--group-share-heartbeat-interval-ms", "1000"]


def share_tool(b, *args, check=True):
    proc = J.run_tool("kafka-share-groups", "--bootstrap-server", b.bootstrap, *args)
    if check and proc.returncode != 0:
        raise AssertionError("kafka-share-groups %s exited %d:\n%s\n%s" % (
            " ".join(args), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc.stdout + proc.stderr


def rows_of(out, topic):
    """The whitespace-split lines of the tool's table that name the topic."""
    return [ln.split() for ln in out.splitlines() if topic in ln.split()]


def produce(bootstrap, topic, values, producer=None):
    p = producer if producer is not None else Producer(H.producer_conf(bootstrap))
    for v in values:
        p.produce(topic, value=v.encode(), partition=0)
    assert p.flush(30) == 0
    return list(values)


def share_member(procs, b, group, topic, name, *props):
    return JC.Member(procs, b.bootstrap, group, topic, name, *props, main="ShareMember")


def accepted(m):
    return collections.Counter(e["value"] for e in m.snapshot("record") if e["ack"] == "ACCEPT")


def consume_exactly(procs, b, group, topic, name, want, settle=3):
    """A member that must receive exactly `want` (and nothing else), then leaves."""
    m = share_member(procs, b, group, topic, name)
    JC.wait_for("%s to accept %d records" % (name, len(want)),
                lambda: set(accepted(m)) >= set(want), timeout=120)
    time.sleep(settle)
    assert accepted(m) == collections.Counter(want), (want, accepted(m))
    m.stop()


# The offset APIs, declared from Kafka's schemas (kproto_flex).
DESCRIBE_REQ = [("groups", [[("group_id", "str"), ("topics", [[("topic_name", "str"),
                                                                ("partitions", ["i32"])]])]])]
DESCRIBE_RESP = [("throttle_time_ms", "i32"),
                 ("groups", [[("group_id", "str"),
                              ("topics", [[("topic_name", "str"), ("topic_id", "uuid"),
                                           ("partitions", [[("partition_index", "i32"),
                                                            ("start_offset", "i64"),
                                                            ("leader_epoch", "i32"), ("lag", "i64"),
                                                            ("error_code", "i16"),
                                                            ("error_message", "str")]])]]),
                              ("error_code", "i16"), ("error_message", "str")]])]
ALTER_REQ = [("group_id", "str"), ("topics", [[("topic_name", "str"),
                                               ("partitions", [[("partition_index", "i32"),
                                                                ("start_offset", "i64")]])]])]
ALTER_RESP = [("throttle_time_ms", "i32"), ("error_code", "i16"), ("error_message", "str"),
              ("responses", [[("topic_name", "str"), ("topic_id", "uuid"),
                              ("partitions", [[("partition_index", "i32"), ("error_code", "i16"),
                                               ("error_message", "str")]])]])]
DELETE_REQ = [("group_id", "str"), ("topics", [[("topic_name", "str")]])]
DELETE_RESP = [("throttle_time_ms", "i32"), ("error_code", "i16"), ("error_message", "str"),
               ("responses", [[("topic_name", "str"), ("topic_id", "uuid"), ("error_code", "i16"),
                               ("error_message", "str")]])]
NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_OR_PARTITION = 68, 69, 3


def raw_alter(b, group, topic, partition, offset):
    with K.Conn(b.bootstrap) as conn:
        return F.call(conn, 91, 0, ALTER_REQ, ALTER_RESP, dict(group_id=group, topics=[dict(
            topic_name=topic, partitions=[dict(partition_index=partition, start_offset=offset)])]))


def raw_describe(b, group, topics=None):
    with K.Conn(b.bootstrap) as conn:
        return F.call(conn, 90, 1, DESCRIBE_REQ, DESCRIBE_RESP,
                      dict(groups=[dict(group_id=group, topics=topics)]))["groups"][0]


def raw_delete(b, group, topic):
    with K.Conn(b.bootstrap) as conn:
        return F.call(conn, 92, 0, DELETE_REQ, DELETE_RESP,
                      dict(group_id=group, topics=[dict(topic_name=topic)]))


def utc_datetime(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + ".%03dZ" % int(ts * 1000 % 1000)


def test_kafka_share_groups_tool(broker_factory, topic_name, procs):
    b = broker_factory(extra_args=SHARE_ARGS)
    H.create_topic(b.bootstrap, topic_name, 1)
    group = "share-tool-" + topic_name
    first = produce(b.bootstrap, topic_name, ["v-%d" % i for i in range(5)])
    time.sleep(1.5)
    middle = time.time()
    time.sleep(1.5)
    second = produce(b.bootstrap, topic_name, ["v-%d" % i for i in range(5, 10)])
    values = first + second

    a = share_member(procs, b, group, topic_name, "A")
    JC.wait_for("A to accept every record", lambda: set(accepted(a)) >= set(values), timeout=120)
    assert group in share_tool(b, "--list").split()
    out = share_tool(b, "--describe", "--group", group, "--members")
    assert rows_of(out, group) and "sluice-java-share-A" in out and topic_name + ":0" in out, out
    out = share_tool(b, "--reset-offsets", "--group", group, "--topic", topic_name,
                     "--to-earliest", "--execute", check=False)
    assert "is not empty" in out, out  # a group with members is not reset
    # ... and the broker refuses it too, as Kafka does.
    assert raw_alter(b, group, topic_name, 0, 0)["error_code"] == NON_EMPTY_GROUP
    assert raw_delete(b, group, topic_name)["error_code"] == NON_EMPTY_GROUP
    assert raw_describe(b, "no-such-" + group)["error_code"] == GROUP_ID_NOT_FOUND

    def described():
        d = raw_describe(b, group, [dict(topic_name=topic_name, partitions=[0, 7]),
                                    dict(topic_name="no-such-topic", partitions=[0])])
        return {(t["topic_name"], p["partition_index"]): (p["error_code"], p["start_offset"], p["lag"])
                for t in d["topics"] for p in t["partitions"]}
    want = {(topic_name, 0): (0, 10, 0), (topic_name, 7): (UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
            ("no-such-topic", 0): (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)}
    JC.wait_for("A's acknowledgements to move the start offset", lambda: described() == want, timeout=30)
    a.stop()

    out = share_tool(b, "--describe", "--group", group, "--state")
    assert rows_of(out, group)[0][-2:] == ["Empty", "0"], out
    out = share_tool(b, "--describe", "--group", group)
    assert rows_of(out, topic_name) == [[group, topic_name, "0", "10", "0"]], out

    # --dry-run shows and changes nothing (Kafka 4.3's tool has no --to-offset: the
    # Admin client's alterShareGroupOffsets, here AlterShareGroupOffsets itself, does it).
    for how, want in (("--to-earliest", "0"), ("--to-latest", "10")):
        out = share_tool(b, "--reset-offsets", "--group", group, "--topic", topic_name, how,
                         "--dry-run")
        assert rows_of(out, topic_name)[0][-1] == want, (how, out)
    out = share_tool(b, "--describe", "--group", group)
    assert rows_of(out, topic_name)[0][3:] == ["10", "0"], out
    r = raw_alter(b, group, topic_name, 0, 3)
    assert r["error_code"] == 0 and r["responses"][0]["partitions"][0]["error_code"] == 0, r
    out = share_tool(b, "--describe", "--group", group)
    assert rows_of(out, topic_name)[0][3:] == ["3", "7"], out
    consume_exactly(procs, b, group, topic_name, "B", values[3:])

    out = share_tool(b, "--reset-offsets", "--group", group, "--topic", topic_name,
                     "--to-datetime", utc_datetime(middle), "--execute")
    assert rows_of(out, topic_name)[0][-1] == "5", out
    consume_exactly(procs, b, group, topic_name, "C", second)

    out = share_tool(b, "--delete-offsets", "--group", group, "--topic", topic_name)
    assert rows_of(out, topic_name) == [[topic_name, "Successful"]], out
    out = share_tool(b, "--describe", "--group", group)
    assert "has no offset information" in out, out
    out = share_tool(b, "--delete-offsets", "--group", group, "--topic", "no-such-topic")
    assert "Error" in out and "no-such-topic" in out, out
    # Without state the group starts again at share.auto.offset.reset (earliest here).
    consume_exactly(procs, b, group, topic_name, "D", values)

    out = share_tool(b, "--delete", "--group", group)
    assert "Deletion of requested share groups ('%s') was successful." % group in out, out
    assert group not in share_tool(b, "--list").split()
    out = share_tool(b, "--describe", "--group", group, check=False)
    assert "does not exist" in out or "GroupIdNotFound" in out or "not found" in out, out


def transactional_producer(b, tid):
    p = Producer(H.producer_conf(b.bootstrap, **{"transactional.id": tid, "enable.idempotence": True}))
    p.init_transactions(20)
    return p


def test_read_committed_share_consumer(broker_factory, topic_name, procs):
    b = broker_factory(extra_args=SHARE_ARGS + ["--share-isolation-level", "read_committed"])
    H.create_topic(b.bootstrap, topic_name, 1)
    group = "share-rc-" + topic_name
    plain = Producer(H.producer_conf(b.bootstrap))
    produce(b.bootstrap, topic_name, ["plain-0"], plain)
    t1 = transactional_producer(b, "share-rc-1-" + topic_name)
    t1.begin_transaction()
    produce(b.bootstrap, topic_name, ["aborted-%d" % i for i in range(3)], t1)
    t1.abort_transaction(30)
    t1.begin_transaction()
    committed = produce(b.bootstrap, topic_name, ["committed-%d" % i for i in range(3)], t1)
    t1.commit_transaction(30)
    # An open transaction holds back everything after it (the last stable offset).
    t2 = transactional_producer(b, "share-rc-2-" + topic_name)
    t2.begin_transaction()
    produce(b.bootstrap, topic_name, ["open-0"], t2)
    produce(b.bootstrap, topic_name, ["after-open"], plain)

    m = share_member(procs, b, group, topic_name, "A")
    want = ["plain-0"] + committed
    JC.wait_for("the committed records", lambda: set(accepted(m)) >= set(want), timeout=120)
    time.sleep(3)
    got = [(e["offset"], e["value"]) for e in m.snapshot("record")]
    assert accepted(m) == collections.Counter(want), got
    t2.commit_transaction(30)
    want += ["open-0", "after-open"]
    JC.wait_for("the records of the committed transaction and after it",
                lambda: set(accepted(m)) >= set(want), timeout=60)
    time.sleep(2)
    assert accepted(m) == collections.Counter(want), accepted(m)
    # Every delivery was a first one: nothing was handed out and then taken back.
    assert all(e["delivery_count"] == 1 for e in m.snapshot("record")), m.snapshot("record")
    m.stop()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_broker_kill_mid_consumption(broker_factory, topic_name, procs):
    """The broker dies (kill -9) while a share consumer is acquiring and acknowledging;
    on the same port it comes back, the consumer rejoins on its own and every record is
    accepted; none whose acknowledgement the broker had confirmed comes again."""
    b = broker_factory(extra_args=SHARE_ARGS, listen="127.0.0.1:%d" % free_port())
    H.create_topic(b.bootstrap, topic_name, 1)
    group = "share-kill9-" + topic_name
    want = produce(b.bootstrap, topic_name, ["k-%03d" % i for i in range(60)])
    m = share_member(procs, b, group, topic_name, "A", "max.poll.records=5", "sluice.delay.ms=40")
    JC.wait_for("A to accept the first records", lambda: len(accepted(m)) >= 15, timeout=120)
    b.kill9()
    before = len(m.snapshot())
    b.start()
    JC.wait_for("A to accept every record", lambda: set(accepted(m)) >= set(want), timeout=180)
    time.sleep(LOCK_MS / 1000 + 2)
    events = m.snapshot()
    # A record comes again only if the acknowledgement of its delivery was not confirmed
    # (the commit after it failed, or had not happened when the broker died).
    confirmed = set()
    pending = []
    for e in events:
        if e["kind"] == "record":
            assert e["value"] not in confirmed, ("delivered again after a confirmed acceptance", e)
            pending.append(e["value"])
        elif e["kind"] == "commit":
            if not e["failed"]:
                confirmed.update(pending)
            pending = []
    assert set(accepted(m)) == set(want)
    assert len(events) > before
    m.stop()
