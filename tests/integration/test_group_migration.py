"""Online migration between the classic protocol and consumer groups (KIP-848), with the
Java client (kafka-clients 4.3.1): a group of three classic consumers is upgraded one
member at a time to group.protocol=consumer, as a rolling upgrade does.

The first consumer-protocol member converts the classic group into a consumer group;
the classic members carry on in it (JoinGroup / SyncGroup / Heartbeat, the broker
assigning their partitions) until they are replaced. Records produced between the steps
are each consumed exactly once (commits after processing). When the last
consumer-protocol member leaves a group whose other members are classic, it becomes a
classic group again (group.consumer.migration.policy, bidirectional by default).
"""

import java_client_helpers as JC
import sluice_helpers as H
from test_consumer_groups import describe
from test_java_client import consumed, produce_values

CONSUMER = ["group.protocol=consumer"]
PARTITIONS = 6


def spread(members, each=None):
    owned = [m.assignment() for m in members]
    union = set().union(*owned)
    ok = union == set(range(PARTITIONS)) and sum(len(o) for o in owned) == PARTITIONS
    return ok and (each is None or all(len(o) == each for o in owned))


def test_rolling_upgrade_then_downgrade(broker, topic_name, procs):
    H.create_topic(broker.bootstrap, topic_name, PARTITIONS)
    group = "migrate-" + topic_name
    want = produce_values(broker.bootstrap, topic_name, PARTITIONS, 10, "classic")
    members = {n: JC.Member(procs, broker.bootstrap, group, topic_name, n) for n in "ABC"}
    everyone = list(members.values())
    JC.wait_for("three classic members to share", lambda: spread(list(members.values()), 2), timeout=120)
    JC.wait_for("the first records", lambda: set(consumed(everyone)) >= want)
    g, _, _ = describe(broker.bootstrap, group)
    assert g["type"].upper() == "CLASSIC", g

    for step, name in enumerate("ABC"):
        members.pop(name).stop(leave=True)
        new = JC.Member(procs, broker.bootstrap, group, topic_name, name + "2", *CONSUMER)
        members[name + "2"] = new
        everyone.append(new)
        JC.wait_for("%s2 (consumer protocol) to share with the others" % name,
                    lambda: spread(list(members.values()), 2), timeout=120)
        g, ms, _ = describe(broker.bootstrap, group)
        assert g["type"].upper() == "CONSUMER", (step, g)
        assert len(ms) == 3 and sorted(p for m in ms for p in m["partitions"]) == list(range(PARTITIONS)), ms
        more = produce_values(broker.bootstrap, topic_name, PARTITIONS, 5, "step%d" % step)
        want |= more
        JC.wait_for("the records of step %d" % step, lambda: set(consumed(everyone)) >= want, timeout=90)

    # A classic member joins the consumer group, then every consumer-protocol member
    # leaves: the last one leaving hands the group back to the classic protocol.
    d = JC.Member(procs, broker.bootstrap, group, topic_name, "D")
    everyone.append(d)
    JC.wait_for("D (classic) to get partitions in the consumer group", lambda: d.assignment(), timeout=120)
    for name in ["A2", "B2"]:
        members.pop(name).stop(leave=True)
    # Settled first, so that D's generation is the group's when C2 leaves.
    JC.wait_for("C2 and D to split the partitions", lambda: spread([members["C2"], d], 3), timeout=120)
    members.pop("C2").stop(leave=True)
    JC.wait_for("D to own everything", lambda: d.assignment() == set(range(PARTITIONS)), timeout=120)
    g, _, _ = describe(broker.bootstrap, group)
    assert g["type"].upper() == "CLASSIC" and g["state"].upper() == "STABLE", g
    last = produce_values(broker.bootstrap, topic_name, PARTITIONS, 5, "downgraded")
    want |= last
    JC.wait_for("the records after the downgrade", lambda: set(consumed(everyone)) >= want, timeout=90)
    d.stop(leave=True)
    got = consumed(everyone)
    assert sorted(got) == sorted(want), "each record exactly once"
