"""A share group (KIP-932) whose coordinator moves in shared mode
(docs/shared-mode.md#share-groups): two brokers of scripts/cluster, the Java client's
KafkaShareConsumer (tests/jvm's ShareMember) and a raw member.

The group is placed on broker 1 while both brokers live. With broker 1 down, broker 0
coordinates it: two Java consumers and a raw member join there, the raw member holding
records of a topic of its own. Broker 1 starts again and the group moves to it: broker 0
drops the members at once (its heartbeats answer NOT_COORDINATOR, system.share_groups
there no longer lists the group) without releasing their records, so the raw member
still releases what it held (its acknowledgement succeeds; the records come back with
delivery count 2), and every member rejoins at broker 1 (UNKNOWN_MEMBER_ID, then epoch
0). Every record produced before and after the move is accepted by the Java consumers,
at least once, each delivery of a record with the next delivery count, and no
acknowledgement fails.
"""

import collections
import time

import pytest

import java_client_helpers as JC
import kproto as K
from cluster_helpers import cluster_cmd, kafka, state, wait_for
from sql_helpers import http_query
from test_differential_share_groups import (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, RELEASE,
                                            UNKNOWN_MEMBER_ID, ShareMember)
from test_share_groups import accepted, commit_failures, deliveries, share_member
from test_shared_share_groups import create_topic, produce, share_cluster

# Long enough that the raw member's records stay locked from before the move until it
# releases them after (a broker start and a poll on a loaded machine: seconds).
LOCK_MS = 20000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from share_cluster(tmp_path_factory, LOCK_MS)


def coordinator(d, group, at=0):
    with K.Conn(kafka(d, at)) as c:
        (found,) = K.find_coordinator(c, 4, [group])
    return found["node_id"] if found["error"] == 0 else None


def share_groups_at(d, i, group):
    """system.share_groups at broker i: (members, topic, partition) of the group's rows."""
    http = next(b["http"] for b in state(d)["brokers"] if b["id"] == i)
    doc = http_query(http, "SELECT members, topic, partition FROM system.share_groups "
                           "WHERE group_id = '%s' ORDER BY topic, partition" % group)
    return [tuple(r) for r in doc["rows"]]


def test_members_of_a_moved_share_group_rejoin_and_every_record_is_delivered(cluster, procs):
    topic, held_topic = "share-move", "share-move-held"
    create_topic(cluster, topic, 2)
    create_topic(cluster, held_topic, 1)
    group = next(g for g in ("share-move-%d" % i for i in range(64)) if coordinator(cluster, g) == 1)
    cluster_cmd("kill", cluster, 1)
    wait_for(lambda: coordinator(cluster, group) == 0, timeout=30, what="broker 0 to coordinate the group")
    first = produce(kafka(cluster, 0), topic, ["first-%02d" % i for i in range(40)], 2)
    members = [share_member(procs, kafka(cluster, 0), group, topic, n, "max.poll.records=5", "sluice.delay.ms=20")
               for n in "AB"]
    JC.wait_for("A and B to accept the first records", lambda: set(accepted(members)) >= set(first), timeout=90)
    with K.Conn(kafka(cluster, 0)) as conn:
        raw = ShareMember(conn, group, "raw-member", held_topic)
        assert raw.join()[1]["assignment"] == {held_topic: [0]}
        produce(kafka(cluster, 0), held_topic, ["held-%d" % i for i in range(3)], 1)
        got = raw.acquire()
        (part,) = got["responses"][0]["partitions"]
        assert [(a["first_offset"], a["last_offset"], a["delivery_count"]) for a in part["acquired_records"]] == \
            [(0, 2, 1)], got
        assert share_groups_at(cluster, 0, group)[0][0] == 3  # A, B and the raw member

        # Broker 1 comes back: the group moves to it.
        cluster_cmd("start", cluster, 1)
        second = produce(kafka(cluster, 0), topic, ["second-%02d" % i for i in range(40)], 2)
        wait_for(lambda: raw.beat()["error_code"] == NOT_COORDINATOR, timeout=60,
                 what="broker 0 to answer NOT_COORDINATOR")
        # Dropped at broker 0, the members' records stay theirs: nothing was released.
        assert share_groups_at(cluster, 0, group) == []
        released = raw.acknowledge([(0, 2, [RELEASE])])
        assert released["error_code"] == 0, released
        assert [p["error_code"] for t in released["responses"] for p in t["partitions"]] == [0], released
        again = raw.acquire()
        (part,) = again["responses"][0]["partitions"]
        assert [(a["first_offset"], a["last_offset"], a["delivery_count"]) for a in part["acquired_records"]] == \
            [(0, 2, 2)], again
        raw.acknowledge([(0, 2, [1])])  # ACCEPT

    # The raw member rejoins at the new coordinator: not known there, it joins again.
    wait_for(lambda: coordinator(cluster, group) == 1, timeout=30, what="FindCoordinator to name broker 1")
    with K.Conn(kafka(cluster, 1)) as conn:
        at_new = ShareMember(conn, group, "raw-member", held_topic)
        at_new.epoch = raw.epoch
        refused = at_new.beat()
        while refused["error_code"] == COORDINATOR_LOAD_IN_PROGRESS:
            time.sleep(0.1)
            refused = at_new.beat()
        assert refused["error_code"] == UNKNOWN_MEMBER_ID, refused
        first_beat, settled = at_new.join()
        assert first_beat["error_code"] == 0 and settled["assignment"] == {held_topic: [0]}, settled

        # The Java consumers rejoined there too and get every record.
        want = first + second
        JC.wait_for("A and B to accept every record", lambda: set(accepted(members)) >= set(want), timeout=120)
        wait_for(lambda: {r[0] for r in share_groups_at(cluster, 1, group)} == {3}, timeout=30,
                 what="broker 1 to hold the three members")
        at_new.beat(epoch=-1)
    for m in members:
        m.stop()
    by_value = collections.defaultdict(list)
    for (v, count, ack, _) in deliveries(members):
        by_value[v].append(count)
    assert set(by_value) == set(want), set(by_value) ^ set(want)
    # At least once; a record delivered again carries the next delivery count (KIP-932).
    assert all(sorted(c) == list(range(1, len(c) + 1)) for c in by_value.values()), by_value
    assert commit_failures(members) == []
    assert set(accepted(members)) == set(want)
