"""KIP-848 consumer groups through librdkafka (confluent-kafka 2.16.1 from PyPI, which
bundles librdkafka 2.16; group.protocol=consumer needs 2.12 or newer): tests.cmake runs
this file under .venv-ck-2.16, and it skips under an older librdkafka.

Members join and leave (two, a third, one closes): the broker moves partitions between
them incrementally, and every record produced is consumed exactly once (commits after
each batch, group_helpers.GroupMember). A broker kill -9 with consumer-protocol members:
they carry on with their partitions after the restart, the group keeps its epoch (no
rebalance), and nothing is consumed twice (every batch was committed before the kill).
The same with a classic member inside the consumer group (after online migration): it
keeps its generation and partitions, stored with its protocols (catalog version 11).
In shared mode (scripts/cluster, two stateless brokers over PostgreSQL and s3proxy):
members bootstrapped at different brokers share one group, whose state is in the
database, and every record is consumed exactly once as members join and leave.
"""

import socket
import time

import confluent_kafka
import pytest
from confluent_kafka import Producer

import cluster_helpers as CL
import group_helpers as G
import sluice_helpers as H
import sql_helpers as S

if tuple(int(x) for x in confluent_kafka.libversion()[0].split(".")[:2]) < (2, 12):
    pytest.skip("group.protocol=consumer needs librdkafka 2.12+ (have %s)" % confluent_kafka.libversion()[0],
                allow_module_level=True)

PARTITIONS = 6


def consumer_conf(bootstrap, group):
    conf = G.group_consumer_conf(bootstrap, group, **{"group.protocol": "consumer"})
    # Classic-protocol settings: with group.protocol=consumer the broker decides them
    # (group.consumer.session.timeout.ms, group.consumer.heartbeat.interval.ms).
    for key in ("session.timeout.ms", "heartbeat.interval.ms"):
        conf.pop(key, None)
    return conf


def produce(bootstrap, topic, salt, per=20):
    p = Producer(H.producer_conf(bootstrap))
    want = set()
    for part in range(PARTITIONS):
        for i in range(per):
            v = "%s-%d-%d" % (salt, part, i)
            p.produce(topic, value=v.encode(), partition=part)
            want.add(v)
    assert p.flush(30) == 0
    return want


def values(members):
    return [v.decode() for m in members for (_, _, _, v) in m.handled()]


def split(members, each=None):
    owned = [m.assignment() for m in members]
    ok = set().union(*owned) == set(range(PARTITIONS)) and sum(len(o) for o in owned) == PARTITIONS
    return ok and (each is None or all(len(o) == each for o in owned))


def no_errors(members):
    for m in members:
        assert not m.errors_snapshot() and not m.commit_failures, (m.name, m.errors_snapshot(), m.commit_failures)


def test_members_join_and_leave(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, PARTITIONS)
    group = "ck848-" + topic_name
    view = G.GroupView()
    conf = consumer_conf(broker.bootstrap, group)
    want = produce(broker.bootstrap, topic_name, "first")
    everyone = []
    try:
        a, b = (G.GroupMember(view, n, conf, topic_name) for n in "AB")
        everyone += [a, b]
        G.wait_for(lambda: split([a, b], 3), 60, lambda: "A and B to split the partitions: %r" % (
            [sorted(m.assignment()) for m in everyone]))
        G.wait_for(lambda: set(values(everyone)) >= want, 60, "the first records")

        c = G.GroupMember(view, "C", conf, topic_name)
        everyone.append(c)
        G.wait_for(lambda: split([a, b, c], 2), 60, lambda: "C to get its share: %r" % (
            [sorted(m.assignment()) for m in everyone]))
        want |= produce(broker.bootstrap, topic_name, "three")
        G.wait_for(lambda: set(values(everyone)) >= want, 60, "the records read by three")

        b.close()  # ConsumerGroupHeartbeat with epoch -1: its partitions go to A and C
        G.wait_for(lambda: split([a, c], 3), 60, lambda: "A and C to take B's partitions: %r" % (
            [sorted(m.assignment()) for m in (a, c)]))
        want |= produce(broker.bootstrap, topic_name, "two")
        G.wait_for(lambda: set(values(everyone)) >= want, 60, "the records after B left")
    finally:
        G.close_all(everyone)
    no_errors(everyone)
    got = values(everyone)
    assert sorted(got) == sorted(want), "each record exactly once"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def group_row(b, group):
    rows = S.http_rows(b.http, "SELECT type, state, members, generation FROM system.groups "
                       "WHERE group_id = '%s'" % group)
    return rows[0] if rows else None


def test_broker_kill9_keeps_the_group(broker_factory, topic_name):
    b = broker_factory(listen="127.0.0.1:%d" % free_port(), extra_args=S.SQL_ARGS)
    H.create_topic(b.bootstrap, topic_name, PARTITIONS)
    group = "ck848-kill-" + topic_name
    view = G.GroupView()
    conf = consumer_conf(b.bootstrap, group)
    want = produce(b.bootstrap, topic_name, "before")
    members = []
    try:
        members = [G.GroupMember(view, n, conf, topic_name) for n in "AB"]
        G.wait_for(lambda: split(members, 3), 60, "A and B to split the partitions")
        G.wait_for(lambda: set(values(members)) >= want, 60, "the first records")
        G.wait_for(lambda: all(not m.pending for m in members) and (group_row(b, group) or [0, ""])[1] == "Stable",
                   30, lambda: "every batch committed and the group stable: %r" % (group_row(b, group),))
        before = group_row(b, group)
        assert before[0] == "consumer" and before[2] == 2, before
        owned = [m.assignment() for m in members]

        b.kill9()
        b.start()
        want |= produce(b.bootstrap, topic_name, "after")
        G.wait_for(lambda: set(values(members)) >= want, 90, "the records produced after the restart")
        after = group_row(b, group)
        assert after == before, (before, after)  # the same epoch: no rebalance
        assert [m.assignment() for m in members] == owned
    finally:
        G.close_all(members)
    no_errors(members)
    assert sorted(values(members)) == sorted(want), "each record exactly once"


def test_broker_kill9_keeps_classic_members(broker_factory, topic_name):
    """A classic member inside a consumer group (after online migration) keeps its
    partitions and generation across a broker kill -9: no rebalance callback runs after
    the restart, and the group's epoch is unchanged."""
    b = broker_factory(listen="127.0.0.1:%d" % free_port(), extra_args=S.SQL_ARGS)
    H.create_topic(b.bootstrap, topic_name, PARTITIONS)
    group = "ck848-mixed-kill-" + topic_name
    view = G.GroupView()
    want = produce(b.bootstrap, topic_name, "before")
    members = []
    try:
        members.append(G.GroupMember(view, "classic", G.group_consumer_conf(b.bootstrap, group), topic_name))
        G.wait_for(lambda: split(members), 60, "the classic member to own everything")
        members.append(G.GroupMember(view, "new", consumer_conf(b.bootstrap, group), topic_name))
        G.wait_for(lambda: split(members, 3), 90, lambda: "the two members to split the partitions: %r" % (
            [sorted(m.assignment()) for m in members]))
        G.wait_for(lambda: set(values(members)) >= want, 60, "the first records")
        G.wait_for(lambda: all(not m.pending for m in members) and (group_row(b, group) or [0, ""])[1] == "Stable",
                   30, lambda: "every batch committed and the group stable: %r" % (group_row(b, group),))
        before = group_row(b, group)
        assert before[0] == "consumer" and before[2] == 2, before
        rows = "SELECT client_id, type, member_id, epoch, assigned FROM system.group_members " \
               "WHERE group_id = '%s' ORDER BY client_id" % group
        members_before = S.http_rows(b.http, rows)
        assert [r[0] for r in members_before] == ["classic", "new"], members_before
        owned = [m.assignment() for m in members]
        events = len(view.events)

        b.kill9()
        b.start()
        want |= produce(b.bootstrap, topic_name, "after")
        G.wait_for(lambda: set(values(members)) >= want, 90, "the records produced after the restart")
        # Longer than the classic member's session (6 s): it was heartbeating all along.
        time.sleep(8)
        after = group_row(b, group)
        assert after == before, (before, after)  # the same epoch: no rebalance
        assert S.http_rows(b.http, rows) == members_before, members_before
        assert [m.assignment() for m in members] == owned
        assert view.events[events:] == [], view.events[events:]
    finally:
        G.close_all(members)
    no_errors(members)
    assert sorted(values(members)) == sorted(want), "each record exactly once"


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory):
    yield from CL.running_cluster(tmp_path_factory.mktemp("kip848-cluster"), "--brokers", "2")


def test_shared_mode_members_on_two_brokers(shared_cluster):
    boots = [CL.kafka(shared_cluster, i) for i in (0, 1)]
    topic = "ck848-shared"
    H.create_topic(boots[0], topic, PARTITIONS)
    # Both brokers read the topic list from the database (every 500 ms). Each is asked
    # itself: an AdminClient bootstrapped at broker 1 may send its Metadata to broker 0,
    # and a ListOffsets at a broker that has not read the topic yet answers
    # UNKNOWN_TOPIC_OR_PARTITION, which the consumers would report.
    CL.wait_topic_known(shared_cluster, topic, timeout=30)
    group = "ck848-shared-group"
    view = G.GroupView()
    want = produce(boots[0], topic, "first")
    everyone = []
    try:
        a = G.GroupMember(view, "A", consumer_conf(boots[0], group), topic)
        b = G.GroupMember(view, "B", consumer_conf(boots[1], group), topic)
        everyone += [a, b]
        G.wait_for(lambda: split([a, b], 3), 60, lambda: "A and B to split the partitions: %r" % (
            [sorted(m.assignment()) for m in everyone]))
        G.wait_for(lambda: set(values(everyone)) >= want, 60, "the first records")
        c = G.GroupMember(view, "C", consumer_conf(boots[1], group), topic)
        everyone.append(c)
        G.wait_for(lambda: split([a, b, c], 2), 60, lambda: "C to get its share: %r" % (
            [sorted(m.assignment()) for m in everyone]))
        want |= produce(boots[1], topic, "three")
        G.wait_for(lambda: set(values(everyone)) >= want, 60, "the records read by three")
        a.close()  # its partitions go to B and C, bootstrapped at the other broker
        G.wait_for(lambda: split([b, c], 3), 60, lambda: "B and C to take A's partitions: %r" % (
            [sorted(m.assignment()) for m in (b, c)]))
        want |= produce(boots[0], topic, "two")
        G.wait_for(lambda: set(values(everyone)) >= want, 60, "the records after A left")
    finally:
        G.close_all(everyone)
    no_errors(everyone)
    assert sorted(values(everyone)) == sorted(want), "each record exactly once"
