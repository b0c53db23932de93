"""Consumer-group administration.

python3-confluent-kafka 1.7 on this machine has only AdminClient.list_groups
(librdkafka's ListGroups v0 + DescribeGroups v0); kafka-python 2.0.2's
KafkaAdminClient adds list/describe/delete_consumer_groups and
list_consumer_group_offsets.  What neither exposes is sent raw (kproto):
ListGroups v4 with a states filter, and altering offsets, which is the
OffsetCommit (generation -1, empty member id) that Kafka's own
AdminClient.alterConsumerGroupOffsets sends.
"""

import time

from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition
from kafka.errors import GroupIdNotFoundError, NoError, NonEmptyGroupError

import group_helpers as G
import kproto as K
import sluice_helpers as H


def kp_admin(bootstrap):
    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="sluice-it-kp-admin",
                            request_timeout_ms=15000, api_version_auto_timeout_ms=10000)


def raw_commit(bootstrap, grp, offsets, metadata=None, version=8):
    """offsets {topic: {p: off}}; returns {(topic, p): error}."""
    with K.Conn(bootstrap) as conn:
        return K.offset_commit(conn, version, grp, {t: [(p, o, metadata) for p, o in sorted(po.items())]
                                                     for t, po in offsets.items()})


def start_members(bootstrap, grp, topic, names, partitions):
    view = G.GroupView()
    conf = G.group_consumer_conf(bootstrap, grp)
    members = [G.GroupMember(view, n, conf, topic) for n in names]
    snap = G.wait_for(lambda: view.covered(names, set(range(partitions))), 30,
                      lambda: "members %r to cover %d partitions (%r)" % (names, partitions, view.snapshot()))
    return view, members, snap


def test_list_and_describe_consumer_groups(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 4)
    active = "adm-active-" + topic_name
    simple = "adm-simple-" + topic_name
    unknown = "adm-unknown-" + topic_name
    assert raw_commit(broker.bootstrap, simple, {topic_name: {0: 1, 3: 2}}) == {
        (topic_name, 0): 0, (topic_name, 3): 0}
    expected = produce_per_partition(broker.bootstrap, topic_name, {p: 10 for p in range(4)}, b"list")
    view, members, snap = start_members(broker.bootstrap, active, topic_name, ["adm-A", "adm-B"], 4)
    try:
        G.wait_for(lambda: sum(len(m.committed) for m in members) == 4, 30,
                   lambda: "both members to commit their partitions (%r)" % [m.committed for m in members])
        adm = kp_admin(broker.bootstrap)
        try:
            listed = set(adm.list_consumer_groups())
            assert (active, "consumer") in listed, listed
            assert (simple, "") in listed, listed
            assert not any(g == unknown for g, _ in listed)

            (info,) = adm.describe_consumer_groups([active])
            assert (info.error_code, info.group, info.state, info.protocol_type, info.protocol) == (
                0, active, "Stable", "consumer", "range"), info
            assert len(info.members) == 2, info.members
            got = {}
            for m in info.members:
                assert m.member_metadata.subscription == [topic_name], m.member_metadata
                assignment = dict(m.member_assignment.assignment)
                assert set(assignment) == {topic_name}, assignment
                got[m.client_id] = frozenset(assignment[topic_name])
                assert "127.0.0.1" in m.client_host, m.client_host
            assert got == snap, "kafka-python describe %r, consumers report %r" % (got, snap)
            assert len({m.member_id for m in info.members}) == 2

            (dead,) = adm.describe_consumer_groups([unknown])
            assert (dead.error_code, dead.group, dead.state, dead.members) == (0, unknown, "Dead", []), dead
            (empty,) = adm.describe_consumer_groups([simple])
            assert (empty.error_code, empty.state, empty.members) == (0, "Empty", []), empty
        finally:
            adm.close()

        # librdkafka's list_groups (ListGroups v0 + DescribeGroups v0).
        cadm = H.admin_client(broker.bootstrap)
        groups = {g.id: g for g in cadm.list_groups(timeout=15)}
        assert active in groups and simple in groups, sorted(groups)
        g = groups[active]
        assert (g.error, g.state, g.protocol_type, g.protocol) == (None, "Stable", "consumer", "range"), vars(g)
        assert {m.client_id for m in g.members} == {"adm-A", "adm-B"}
        for m in g.members:
            parts = K.parse_consumer_assignment(m.assignment)
            assert frozenset(parts[topic_name]) == snap[m.client_id], (m.client_id, parts)
            assert K.parse_consumer_subscription(m.metadata)["topics"] == [topic_name]
        (one,) = cadm.list_groups(group=simple, timeout=15)
        assert (one.id, one.state, one.protocol_type, list(one.members)) == (simple, "Empty", "", []), vars(one)

        # States filter (ListGroups v4), raw: neither client sends it.
        def states_of(states):
            return {gid: d["state"] for gid, d in G.list_groups_raw(broker.bootstrap, 4, states).items()
                    if gid in (active, simple)}

        assert states_of(None) == {active: "Stable", simple: "Empty"}
        assert states_of(["Stable"]) == {active: "Stable"}
        assert states_of(["Empty"]) == {simple: "Empty"}
        assert states_of(["Stable", "Empty"]) == {active: "Stable", simple: "Empty"}
        assert states_of(["PreparingRebalance", "Dead"]) == {}
    finally:
        G.close_all(members)
    G.assert_exact_records(expected, members[0].handled() + members[1].handled(), "group members")
    # After both members left, the group (it has committed offsets) is Empty and still listed,
    # as a consumer group.
    G.wait_for(lambda: (G.list_groups_raw(broker.bootstrap).get(active) or {}).get("state") == "Empty", 10,
               lambda: "group %s to be listed as Empty (%r)" % (active, G.list_groups_raw(broker.bootstrap).get(active)))
    assert G.list_groups_raw(broker.bootstrap)[active] == dict(protocol_type="consumer", state="Empty")


def test_delete_consumer_groups(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 2)
    grp = "adm-del-" + topic_name
    unknown = "adm-del-unknown-" + topic_name
    produce_per_partition(broker.bootstrap, topic_name, {0: 5, 1: 5}, b"del")
    view, members, snap = start_members(broker.bootstrap, grp, topic_name, ["D1"], 2)
    G.wait_for(lambda: members[0].committed == {0: 5, 1: 5}, 30, lambda: "D1 to commit (%r)" % members[0].committed)
    assert raw_commit(broker.bootstrap, grp + "-other", {topic_name: {0: 4}}) == {(topic_name, 0): 0}
    adm = kp_admin(broker.bootstrap)
    try:
        try:
            res = dict(adm.delete_consumer_groups([grp, unknown]))
            assert res == {grp: NonEmptyGroupError, unknown: GroupIdNotFoundError}, res
            (info,) = adm.describe_consumer_groups([grp])
            assert (info.state, len(info.members)) == ("Stable", 1), info
        finally:
            G.close_all(members)
        # The member left: the group (it has offsets) is Empty, and can be deleted.
        G.wait_for(lambda: (G.list_groups_raw(broker.bootstrap).get(grp) or {}).get("state") == "Empty", 10,
                   lambda: "group to be Empty after its member left (%r)" % G.list_groups_raw(broker.bootstrap).get(grp))
        assert {tp.partition: om.offset for tp, om in adm.list_consumer_group_offsets(grp).items()} == {0: 5, 1: 5}
        assert raw_commit(broker.bootstrap, grp, {topic_name: {0: 7, 1: 9}}, metadata="before delete") == {
            (topic_name, 0): 0, (topic_name, 1): 0}
        res = adm.delete_consumer_groups([grp])
        assert res == [(grp, NoError)], res
        listed = {g for g, _ in adm.list_consumer_groups()}
        assert grp not in listed and grp + "-other" in listed, listed
        (info,) = adm.describe_consumer_groups([grp])
        assert (info.error_code, info.state, info.members) == (0, "Dead", []), info
        assert adm.list_consumer_group_offsets(grp) == {}
        got = G.committed_raw(broker.bootstrap, grp, topic_name, [0, 1])
        assert got == {0: (-1, got[0][1]), 1: (-1, got[1][1])}, got
        # Deleting it again: GROUP_ID_NOT_FOUND.
        assert adm.delete_consumer_groups([grp]) == [(grp, GroupIdNotFoundError)]
        # The other group is untouched.
        other = adm.list_consumer_group_offsets(grp + "-other")
        assert {tp: om.offset for tp, om in other.items()} == {KTopicPartition(topic_name, 0): 4}
    finally:
        adm.close()
    # Raw DeleteGroups v2 (flexible) agrees.
    with K.Conn(broker.bootstrap) as conn:
        assert K.delete_groups(conn, 2, [grp + "-other", unknown]) == {grp + "-other": 0, unknown: 69}
    assert grp + "-other" not in G.list_groups_raw(broker.bootstrap)


def produce_per_partition(bootstrap, topic, counts, salt):
    recs = [dict(key=H.key_for(i), value=H.value_for(i, salt), partition=p)
            for p, n in sorted(counts.items()) for i in range(p * 100_000, p * 100_000 + n)]
    dr = H.produce_all(Producer(H.producer_conf(bootstrap)), topic, recs)
    return {(d.partition, d.offset): (r["key"], r["value"]) for r, d in zip(recs, dr)}


def test_list_and_alter_consumer_group_offsets(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 3)
    grp = "adm-offsets-" + topic_name
    expected = produce_per_partition(broker.bootstrap, topic_name, {0: 100, 1: 100, 2: 100}, b"alter")
    view, members, snap = start_members(broker.bootstrap, grp, topic_name, ["O1"], 3)
    try:
        G.wait_for(lambda: members[0].committed == {0: 100, 1: 100, 2: 100}, 30,
                   lambda: "O1 to commit the ends (%r)" % members[0].committed)
        adm = kp_admin(broker.bootstrap)
        try:
            offs = adm.list_consumer_group_offsets(grp)
            assert {tp: om.offset for tp, om in offs.items()} == {
                KTopicPartition(topic_name, p): 100 for p in range(3)}, offs
        finally:
            adm.close()
        # Altering offsets of a group with an active member is refused (as Kafka's AdminClient sees it).
        res = raw_commit(broker.bootstrap, grp, {topic_name: {0: 1}})
        assert res == {(topic_name, 0): K.UNKNOWN_MEMBER_ID}, res
    finally:
        G.close_all(members)
    G.assert_exact_records(expected, members[0].handled(), "first consumer")

    altered = {0: 10, 1: 57, 2: 0}
    res = raw_commit(broker.bootstrap, grp, {topic_name: altered}, metadata="altered by admin")
    assert res == {(topic_name, p): 0 for p in range(3)}, res
    adm = kp_admin(broker.bootstrap)
    try:
        offs = adm.list_consumer_group_offsets(grp)
        assert {tp.partition: (om.offset, om.metadata) for tp, om in offs.items() if tp.topic == topic_name} == {
            p: (o, "altered by admin") for p, o in altered.items()}, offs
        part = adm.list_consumer_group_offsets(grp, partitions=[KTopicPartition(topic_name, 1)])
        assert {tp: om.offset for tp, om in part.items()} == {KTopicPartition(topic_name, 1): 57}
    finally:
        adm.close()

    # A new consumer of the group starts exactly at the altered offsets.
    view, members, _ = start_members(broker.bootstrap, grp, topic_name, ["O2"], 3)
    try:
        want = {pos for pos in expected if pos[1] >= altered[pos[0]]}
        G.wait_for(lambda: members[0].count() >= len(want), 30,
                   lambda: "O2 to handle %d records (%d)" % (len(want), members[0].count()))
    finally:
        G.close_all(members)
    handled = members[0].handled()
    firsts = {}
    for p, o, _, _ in handled:
        firsts.setdefault(p, o)
    assert firsts == altered, "consumer started at %r after offsets were altered to %r" % (firsts, altered)
    G.assert_exact_records({pos: expected[pos] for pos in want}, handled, "consumer after alter")


def test_deleting_topic_removes_its_committed_offsets(broker, topic_name):
    other = topic_name + "-keep"
    H.create_topic(broker.bootstrap, topic_name, 2)
    H.create_topic(broker.bootstrap, other, 1)
    grp = "adm-deltopic-" + topic_name
    res = raw_commit(broker.bootstrap, grp, {topic_name: {0: 5, 1: 7}, other: {0: 3}}, metadata="m")
    assert set(res.values()) == {0} and len(res) == 3, res
    adm = kp_admin(broker.bootstrap)
    try:
        offs = adm.list_consumer_group_offsets(grp)
        assert {(tp.topic, tp.partition): om.offset for tp, om in offs.items()} == {
            (topic_name, 0): 5, (topic_name, 1): 7, (other, 0): 3}
        resp = adm.delete_topics([topic_name], timeout_ms=10000)
        assert [(t[0], t[1]) for t in resp.topic_error_codes] == [(topic_name, 0)], resp
        deadline = time.monotonic() + 15
        while topic_name in adm.list_topics():
            assert time.monotonic() < deadline, "deleted topic still listed after 15s"
            time.sleep(0.2)
        offs = adm.list_consumer_group_offsets(grp)
        assert {(tp.topic, tp.partition): om.offset for tp, om in offs.items()} == {(other, 0): 3}, offs
    finally:
        adm.close()

    # Same name again: the group has no committed offset for the new topic.
    H.create_topic(broker.bootstrap, topic_name, 2)
    got = G.committed_raw(broker.bootstrap, grp, topic_name, [0, 1])
    assert {p: o for p, (o, _) in got.items()} == {0: -1, 1: -1}, got
    assert G.committed_raw(broker.bootstrap, grp, other, [0]) == {0: (3, "m")}
    expected = produce_per_partition(broker.bootstrap, topic_name, {0: 20, 1: 20}, b"recreated")
    view, members, _ = start_members(broker.bootstrap, grp, topic_name, ["R1"], 2)
    try:
        G.wait_for(lambda: members[0].count() >= 40, 30, lambda: "R1 to handle 40 records (%d)" % members[0].count())
    finally:
        G.close_all(members)
    handled = members[0].handled()
    firsts = {}
    for p, o, _, _ in handled:
        firsts.setdefault(p, o)
    assert firsts == {0: 0, 1: 0}, "the re-created topic was consumed from %r, not from the start" % firsts
    G.assert_exact_records(expected, handled, "consumer of the re-created topic")
