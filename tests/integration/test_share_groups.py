"""Share groups (KIP-932) with the Java client's KafkaShareConsumer (kafka-clients 4.3.1,
ShareGroupHeartbeat, ShareFetch and ShareAcknowledge), explicit acknowledgement
(tests/jvm's ShareMember).

Three consumers share one partition and every record is accepted exactly once; a
released record comes back with its delivery count raised, a rejected one never does,
a record released at every delivery stops at group.share.delivery.count.limit; the
records of a consumer killed with its records locked come back to another once the
lock expires; acknowledged records stay acknowledged across a broker kill -9.
"""

import collections
import time

import java_client_helpers as JC
import kproto as K
import sluice_helpers as H
import sql_helpers as S
from confluent_kafka import Producer

LOCK_MS = 4000
LIMIT = 3
SHARE_ARGS = ["--share-auto-offset-reset", "earliest",
              "--group-share-record-lock-duration-ms", str(LOCK_MS),
              "--group-share-delivery-count-limit", str(LIMIT),
              "--group-share-heartbeat-interval-ms", "1000"]


def produce(bootstrap, topic, values):
    p = Producer(H.producer_conf(bootstrap))
    for v in values:
        p.produce(topic, value=v.encode(), partition=0)
    assert p.flush(30) == 0
    return list(values)


def share_member(procs, bootstrap, group, topic, name, *props):
    return JC.Member(procs, bootstrap, group, topic, name, *props, main="ShareMember")


def deliveries(members):
    """(value, delivery count, what the member did, member) of every delivery."""
    return [(e["value"], e["delivery_count"], e["ack"], m.name)
            for m in members for e in m.snapshot("record")]


def accepted(members):
    return collections.Counter(v for (v, _, ack, _) in deliveries(members) if ack == "ACCEPT")


def commit_failures(members):
    return [f for m in members for e in m.snapshot("commit") for f in e["failed"]]


def test_three_consumers_share_one_partition(broker_factory, topic_name, procs):
    b = broker_factory(extra_args=SHARE_ARGS)
    H.create_topic(b.bootstrap, topic_name, 1)
    group = "share-" + topic_name
    want = produce(b.bootstrap, topic_name, ["v-%03d" % i for i in range(90)])
    members = [share_member(procs, b.bootstrap, group, topic_name, n, "max.poll.records=5",
                            "sluice.delay.ms=20") for n in "ABC"]
    JC.wait_for("every record to be accepted", lambda: set(accepted(members)) >= set(want),
                timeout=120)
    counts = accepted(members)
    assert all(counts[v] == 1 for v in want), [v for v in want if counts[v] != 1]
    assert set(counts) == set(want), counts
    by_member = collections.Counter(m for (_, _, _, m) in deliveries(members))
    assert len(by_member) >= 2, ("one partition, shared by several consumers", by_member)
    assert all(c == 1 for (_, c, _, _) in deliveries(members)), "no redelivery was needed"
    assert commit_failures(members) == []
    with K.Conn(b.bootstrap) as conn:  # ListGroups v4 lists every type of group
        err, groups = K.list_groups(conn, 4)
    assert err == 0 and groups[group] == {"protocol_type": "share", "state": "Stable"}, groups
    for m in members:
        m.stop()


def test_release_reject_and_delivery_limit(broker_factory, topic_name, procs):
    b = broker_factory(extra_args=SHARE_ARGS)
    H.create_topic(b.bootstrap, topic_name, 1)
    group = "share-acks-" + topic_name
    produce(b.bootstrap, topic_name, ["release-once-1", "reject-1", "poison-1", "ok-1"])
    m = share_member(procs, b.bootstrap, group, topic_name, "A", "max.poll.records=1")

    def settled():
        d = deliveries([m])
        return accepted([m])["release-once-1"] == 1 and accepted([m])["ok-1"] == 1 and \
            sum(1 for x in d if x[0] == "poison-1") == LIMIT
    JC.wait_for("released records to come back and the poison record to stop", settled, timeout=90)
    # Long enough for a lock to expire and for a further delivery to show.
    time.sleep(LOCK_MS / 1000 + 2)
    d = deliveries([m])
    by_value = collections.defaultdict(list)
    for (v, count, ack, _) in d:
        by_value[v].append((count, ack))
    assert by_value["release-once-1"] == [(1, "RELEASE"), (2, "ACCEPT")], by_value
    assert by_value["reject-1"] == [(1, "REJECT")], by_value
    assert by_value["poison-1"] == [(i, "RELEASE") for i in range(1, LIMIT + 1)], by_value
    assert by_value["ok-1"] == [(1, "ACCEPT")], by_value
    assert commit_failures([m]) == []
    m.stop()


def test_killed_consumer_records_come_back_after_the_lock(broker_factory, topic_name, procs):
    b = broker_factory(extra_args=SHARE_ARGS)
    H.create_topic(b.bootstrap, topic_name, 1)
    group = "share-kill-" + topic_name
    want = produce(b.bootstrap, topic_name, ["held-%d" % i for i in range(10)])
    holder = share_member(procs, b.bootstrap, group, topic_name, "H", "sluice.hold=true")
    JC.wait_for("H to hold records", lambda: holder.snapshot("holding"), timeout=90)
    held = {e["value"] for e in holder.snapshot("record")}
    assert held, holder.describe()
    H.kill_group(holder.proc)  # kill -9: no acknowledgement, no leave
    killed_at = time.monotonic()
    other = share_member(procs, b.bootstrap, group, topic_name, "B")
    JC.wait_for("B to get every record", lambda: set(accepted([other])) >= set(want), timeout=120)
    took = time.monotonic() - killed_at
    again = {v: c for (v, c, _, _) in deliveries([other])}
    assert all(again[v] == 2 for v in held), ("held records are a second delivery", again, held)
    assert took >= LOCK_MS / 1000 - 1, ("the lock was kept until it expired", took)
    assert accepted([other]) == collections.Counter(want), accepted([other])
    other.stop()


def test_broker_kill_keeps_acknowledged_records(broker_factory, topic_name, procs):
    b = broker_factory(extra_args=SHARE_ARGS + S.SQL_ARGS)
    H.create_topic(b.bootstrap, topic_name, 1)
    group = "share-restart-" + topic_name
    first = produce(b.bootstrap, topic_name, ["before-%d" % i for i in range(20)])
    a = share_member(procs, b.bootstrap, group, topic_name, "A")
    JC.wait_for("A to accept the first records", lambda: set(accepted([a])) >= set(first), timeout=90)
    JC.wait_for("A's acknowledgements", lambda: a.snapshot("commit"), timeout=30)
    a.stop()
    b.kill9()
    b.start()
    second = produce(b.bootstrap, topic_name, ["after-%d" % i for i in range(10)])
    c = share_member(procs, b.bootstrap, group, topic_name, "C")
    JC.wait_for("C to accept the new records", lambda: set(accepted([c])) >= set(second), timeout=120)
    time.sleep(2)
    got = [v for (v, _, _, _) in deliveries([c])]
    assert sorted(got) == sorted(second), ("nothing acknowledged before the kill comes back", got)
    query = ("SELECT state, members, topic, partition, start_offset, end_offset, in_flight, acquired "
             "FROM system.share_groups WHERE group_id = '%s'" % group)
    JC.wait_for("the window to close over every record", lambda: S.http_rows(b.http, query) ==
                [["Stable", 1, topic_name, 0, 30, 30, 0, 0]], timeout=30)
    c.stop()
