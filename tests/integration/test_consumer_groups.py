"""Kafka 4's consumer group protocol (KIP-848) with the Java client (kafka-clients 4.3.1,
group.protocol=consumer): the broker computes the assignment (the `uniform` assignor)
and moves partitions incrementally.

Three members spread six partitions two each; one leaves and its partitions go to the
other two, with every record consumed exactly once (commits after processing, checked
against the values produced). AdminClient describes the group as a CONSUMER group with
its epochs (ConsumerGroupDescribe) and ListGroups v5 filters it by type. A broker
restart (SIGTERM) keeps the group: the members keep their partitions and member epoch,
see no rebalance, and go on consuming.
"""

import socket

import java_client_helpers as JC
import sluice_helpers as H
import sql_helpers as S
from test_java_client import consumed, produce_values

CONSUMER = ["group.protocol=consumer"]


def shares(members, partitions, each):
    owned = [m.assignment() for m in members]
    union = set().union(*owned)
    return union == set(range(partitions)) and sum(len(o) for o in owned) == partitions \
        and all(len(o) == each for o in owned)


def describe(bootstrap, group):
    out = JC.run("DescribeConsumerGroup", bootstrap, group)
    return JC.one(out, "group"), JC.by_kind(out, "member"), JC.by_kind(out, "listed")


def test_three_members_spread_then_one_leaves(broker, topic_name, procs):
    partitions = 6
    H.create_topic(broker.bootstrap, topic_name, partitions)
    group = "kip848-" + topic_name
    want = produce_values(broker.bootstrap, topic_name, partitions, 20, "before")
    members = [JC.Member(procs, broker.bootstrap, group, topic_name, name, *CONSUMER) for name in "ABC"]
    JC.wait_for("three members to own two partitions each",
                lambda: shares(members, partitions, 2), timeout=120)
    JC.wait_for("the first records to be consumed", lambda: set(consumed(members)) >= want)

    g, ms, listed = describe(broker.bootstrap, group)
    assert g["type"].upper() == "CONSUMER" and g["state"].upper() == "STABLE", g
    assert g["assignor"] == "uniform", g
    assert g["group_epoch"] == g["target_assignment_epoch"] == 3, g
    assert sorted(p for m in ms for p in m["partitions"]) == list(range(partitions)), ms
    assert all(m["member_epoch"] == 3 and m["partitions"] == m["target"] for m in ms), ms
    by_type = {x["type"].upper(): {y["group_id"]: y for y in x["groups"]} for x in listed}
    assert by_type["CONSUMER"][group]["state"].upper() == "STABLE", listed
    assert by_type["CONSUMER"][group]["type"].upper() == "CONSUMER", listed
    assert group not in by_type["CLASSIC"], listed

    a, b, c = members
    c_parts = c.assignment()
    kept = {m.name: m.assignment() for m in (a, b)}
    seen = {m.name: len(m.snapshot()) for m in (a, b)}
    c.stop(leave=True)  # ConsumerGroupHeartbeat with member epoch -1
    JC.wait_for("A and B to take over C's partitions", lambda: shares([a, b], partitions, 3), timeout=120)
    for m in (a, b):
        # Incremental: each kept what it had and only gained.
        assert kept[m.name] <= m.assignment(), (m.name, kept[m.name], m.assignment())
        later = [e["kind"] for e in m.snapshot()[seen[m.name]:]]
        assert "revoked" not in later and "lost" not in later, m.describe()
    assert a.assignment() | b.assignment() >= c_parts
    more = produce_values(broker.bootstrap, topic_name, partitions, 10, "after")
    JC.wait_for("the new records to be consumed", lambda: set(consumed(members)) >= want | more, timeout=90)
    g, ms, _ = describe(broker.bootstrap, group)
    assert g["group_epoch"] == 4 and len(ms) == 2, (g, ms)
    a.stop(leave=True)
    b.stop(leave=True)
    got = consumed(members)
    assert sorted(got) == sorted(want | more), "each record exactly once"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_broker_restart_keeps_the_assignment(broker_factory, topic_name, procs):
    partitions = 4
    b = broker_factory(listen="127.0.0.1:%d" % free_port(), extra_args=S.SQL_ARGS)
    H.create_topic(b.bootstrap, topic_name, partitions)
    group = "kip848-restart-" + topic_name
    want = produce_values(b.bootstrap, topic_name, partitions, 10, "before")
    members = [JC.Member(procs, b.bootstrap, group, topic_name, name, *CONSUMER) for name in "AB"]
    JC.wait_for("A and B to share", lambda: shares(members, partitions, 2), timeout=120)
    JC.wait_for("the first records to be consumed", lambda: set(consumed(members)) >= want)
    before = {m.name: m.assignment() for m in members}
    events = {m.name: len(m.snapshot()) for m in members}
    g_before, ms_before, _ = describe(b.bootstrap, group)
    epochs = {x["member_id"]: x["member_epoch"] for x in ms_before}
    assert len(set(epochs.values())) == 1, ms_before  # settled: every member at one epoch
    sql_before = S.http_rows(b.http, "SELECT type, state, protocol, members, generation FROM "
                             "system.groups WHERE group_id = '%s'" % group)
    assert sql_before == [["consumer", "Stable", "uniform", 2, g_before["group_epoch"]]], sql_before
    members_before = S.http_rows(b.http, "SELECT member_id, epoch, subscribed_topics, assigned, target "
                                 "FROM system.group_members WHERE group_id = '%s' ORDER BY member_id" % group)
    assert len(members_before) == 2 and all(r[2] == topic_name and r[3] == r[4] for r in members_before), \
        members_before
    assert sorted(len(r[3].split(":")[1].split(",")) for r in members_before) == [2, 2], members_before

    b.restart()  # SIGTERM, then the same data dir and port

    more = produce_values(b.bootstrap, topic_name, partitions, 10, "after")
    JC.wait_for("the records produced after the restart to be consumed",
                lambda: set(consumed(members)) >= want | more, timeout=120)
    g_after, ms, _ = describe(b.bootstrap, group)
    assert g_after["group_epoch"] == g_before["group_epoch"], (g_before, g_after)
    assert g_after["state"].upper() == "STABLE", g_after
    for m in members:
        parts = before[m.name]
        assert m.assignment() == parts, m.describe()
        # No rebalance: nothing assigned, revoked or lost since the restart.
        later = [e["kind"] for e in m.snapshot()[events[m.name]:] if e["kind"] not in ("record", "committed")]
        assert later == [], m.describe()
        # The same member epoch carries on: commits after the restart are made with it.
        after = [e for e in m.snapshot()[events[m.name]:] if e["kind"] == "committed"]
        assert after and all(e["generation"] in epochs.values() for e in after), m.describe()
        for (p, _, v) in m.values():
            if v.startswith("after"):
                assert p in parts, (m.name, p, v)
    assert {x["member_id"]: x["member_epoch"] for x in ms} == epochs, (ms_before, ms)
    members_after = S.http_rows(b.http, "SELECT member_id, epoch, subscribed_topics, assigned, target "
                                "FROM system.group_members WHERE group_id = '%s' ORDER BY member_id" % group)
    assert members_after == members_before, (members_before, members_after)
    for m in members:
        m.stop(leave=True)
    assert sorted(consumed(members)) == sorted(want | more), "each record exactly once"
