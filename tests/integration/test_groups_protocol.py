"""The group coordinator at the protocol level (kproto): join/sync/heartbeat
flows with opaque metadata and assignments, every group error code the
broker promises, batched LeaveGroup / OffsetFetch / FindCoordinator,
OffsetDelete, session expiry, static membership, restart, and thousands of
groups.

Each member has its own connection: JoinGroup and SyncGroup answers are held
back until the rebalance step completes, and answers on one connection come
back in request order.
"""

import os
import re
import select
import time

import pytest

import group_helpers as G
import kproto as K
import sluice_helpers as H

CLIENT_ID = "sluice-it-raw"  # kproto's request header client id
JOIN_TIMEOUT = 30.0


class Member:
    def __init__(self, bootstrap, protocols, instance_id=None, session_timeout_ms=10000, rebalance_timeout_ms=10000):
        self.conn = K.Conn(bootstrap, timeout=JOIN_TIMEOUT)
        self.protocols = protocols
        self.instance_id = instance_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.member_id = ""
        self.generation = -1

    def hb(self, version=3, generation=None, member_id=None):
        return K.heartbeat(self.conn, version, self.group, self.generation if generation is None else generation,
                           self.member_id if member_id is None else member_id, self.instance_id)


@pytest.fixture
def members():
    made = []

    def make(bootstrap, group, protocols, **kw):
        m = Member(bootstrap, protocols, **kw)
        m.group = group
        made.append(m)
        return m

    yield make
    for m in made:
        m.conn.close()


def dance(m, jv, ptype="connect"):
    """JoinGroup v4+ with an empty member id: MEMBER_ID_REQUIRED carrying the id to use."""
    r = K.join_group(m.conn, jv, m.group, "", ptype, m.protocols, session_timeout_ms=m.session_timeout_ms,
                     rebalance_timeout_ms=m.rebalance_timeout_ms, group_instance_id=m.instance_id,
                     timeout=JOIN_TIMEOUT)
    assert r["error"] == K.MEMBER_ID_REQUIRED, "first JoinGroup v%d with an empty member id: %r" % (jv, r)
    assert r["member_id"], r
    assert r["generation"] == -1 and r["members"] == [], r
    m.member_id = r["member_id"]
    return r


def join_round(ms, jv, ptype="connect"):
    """All of `ms` join concurrently (after the MEMBER_ID_REQUIRED step where it applies)."""
    for m in ms:
        if jv >= 4 and not m.member_id and m.instance_id is None:
            dance(m, jv, ptype)
    pend = [K.send_join_group(m.conn, jv, m.group, m.member_id, ptype, m.protocols,
                              session_timeout_ms=m.session_timeout_ms, rebalance_timeout_ms=m.rebalance_timeout_ms,
                              group_instance_id=m.instance_id) for m in ms]
    res = [p.result(JOIN_TIMEOUT) for p in pend]
    for m, r in zip(ms, res):
        assert r["error"] == 0, "JoinGroup v%d: %r" % (jv, r)
        assert r["member_id"], r
        if m.member_id and m.instance_id is None:
            assert r["member_id"] == m.member_id, "member id changed on join: %r -> %r" % (m.member_id, r)
        m.member_id = r["member_id"]
        m.generation = r["generation"]
    assert len({r["generation"] for r in res}) == 1, res
    assert len({r["leader"] for r in res}) == 1, res
    assert len({m.member_id for m in ms}) == len(ms)
    return res


def sync_round(ms, sv, leader_id, assignments, ptype="connect", pname=None):
    """Followers send SyncGroup first (their answers wait for the leader's), then the leader."""
    order = sorted(ms, key=lambda m: m.member_id == leader_id)
    pend = []
    for m in order:
        assign = sorted(assignments.items()) if m.member_id == leader_id else []
        pend.append((m, K.send_sync_group(m.conn, sv, m.group, m.generation, m.member_id, assign,
                                          group_instance_id=m.instance_id, protocol_type=ptype,
                                          protocol_name=pname)))
    return {m.member_id: p.result(JOIN_TIMEOUT) for m, p in pend}


def form_group(ms, jv=5, sv=3, ptype="connect", payload=lambda m: b"assign:" + m.member_id.encode()):
    """Join + sync; returns (leader id, {member_id: assignment bytes})."""
    res = join_round(ms, jv, ptype)
    leader = res[0]["leader"]
    pname = res[0]["protocol_name"]
    assignments = {m.member_id: payload(m) for m in ms}
    got = sync_round(ms, sv, leader, assignments, ptype, pname)
    for mid, r in got.items():
        assert r["error"] == 0 and r["assignment"] == assignments[mid], (mid, r)
    return leader, assignments


def not_answered(conn, seconds):
    """True if nothing arrives on conn within `seconds` (a held-back JoinGroup)."""
    readable, _, _ = select.select([conn.sock], [], [], seconds)
    return not readable


def commit(conn, version, group, offsets, **kw):
    return K.offset_commit(conn, version, group, offsets, **kw)


# --------------------------------------------------------------------------
# The happy path, in old, newer non-flexible, and flexible versions
# --------------------------------------------------------------------------

VERSION_SETS = [
    # name, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups
    pytest.param(dict(join=1, sync=1, hb=1, leave=1, commit=2, fetch=1, describe=0), id="v1-classic"),
    pytest.param(dict(join=5, sync=3, hb=3, leave=3, commit=7, fetch=5, describe=4), id="v5-nonflexible"),
    pytest.param(dict(join=6, sync=4, hb=4, leave=4, commit=8, fetch=6, describe=5), id="first-flexible"),
    pytest.param(dict(join=9, sync=5, hb=4, leave=5, commit=8, fetch=8, describe=5), id="newest"),
]


@pytest.mark.parametrize("v", VERSION_SETS)
def test_connect_group_join_sync_heartbeat(broker, topic_name, members, v):
    H.create_topic(broker.bootstrap, topic_name, 2)
    grp = "connect-" + topic_name
    m1_alpha = b"m1-alpha\x00\x01\x02" + bytes(range(256))
    m2_alpha = b"m2-alpha\xff" * 50
    m1 = members(broker.bootstrap, grp, [("alpha", m1_alpha), ("beta", b"m1-beta")])
    # m2 prefers gamma, which m1 lacks: the common protocol both vote for is alpha.
    m2 = members(broker.bootstrap, grp, [("gamma", b"m2-gamma"), ("alpha", m2_alpha), ("beta", b"m2-beta")])

    res = join_round([m1, m2], v["join"])
    for r in res:
        assert r["protocol_name"] == "alpha", r
        if v["join"] >= 7:
            assert r["protocol_type"] == "connect", r
        assert r["skip_assignment"] is False
        assert r["generation"] >= 1, r
    leader = res[0]["leader"]
    assert leader in (m1.member_id, m2.member_id)
    by_member = {m.member_id: r for m, r in zip([m1, m2], res)}
    lead_res = by_member[leader]
    follower = m2 if leader == m1.member_id else m1
    assert by_member[follower.member_id]["members"] == [], "a follower got the member list"
    got_meta = {x["member_id"]: x["metadata"] for x in lead_res["members"]}
    assert got_meta == {m1.member_id: m1_alpha, m2.member_id: m2_alpha}, "leader got %r" % got_meta
    if v["join"] >= 5:
        assert all(x["group_instance_id"] is None for x in lead_res["members"])

    # The leader's opaque assignments reach each member unchanged.
    a1 = b"\x00opaque-1\x00" + os.urandom(64) + bytes(range(255, -1, -1))
    a2 = b"opaque-2" * 100
    got = sync_round([m1, m2], v["sync"], leader, {m1.member_id: a1, m2.member_id: a2}, "connect", "alpha")
    assert got[m1.member_id]["error"] == 0 and got[m1.member_id]["assignment"] == a1, got[m1.member_id]
    assert got[m2.member_id]["error"] == 0 and got[m2.member_id]["assignment"] == a2, got[m2.member_id]
    if v["sync"] >= 5:
        for r in got.values():
            assert (r["protocol_type"], r["protocol_name"]) == ("connect", "alpha"), r
    assert m1.hb(v["hb"]) == 0
    assert m2.hb(v["hb"]) == 0

    # Commits by members of the generation, read back.
    offsets = {topic_name: [(0, 11, "from m1"), (1, 22, None)]}
    assert commit(m1.conn, v["commit"], grp, offsets, generation=m1.generation, member_id=m1.member_id) == {
        (topic_name, 0): 0, (topic_name, 1): 0}
    err, offs = K.offset_fetch_one(m2.conn, v["fetch"], grp, {topic_name: [0, 1]})
    assert err == 0
    assert offs[(topic_name, 0)] == (11, "from m1", 0), offs
    assert offs[(topic_name, 1)][0] == 22 and offs[(topic_name, 1)][2] == 0, offs
    # Null metadata is stored and returned as "", as Kafka does.
    assert offs[(topic_name, 1)] == (22, "", 0), offs

    # DescribeGroups shows exactly this.
    with K.Conn(broker.bootstrap) as conn:
        (d,) = K.describe_groups(conn, v["describe"], [grp])
    assert (d["error"], d["group_id"], d["state"], d["protocol_type"], d["protocol_data"]) == (
        0, grp, "Stable", "connect", "alpha"), d
    desc = {x["member_id"]: x for x in d["members"]}
    assert set(desc) == {m1.member_id, m2.member_id}
    for m, meta, a in ((m1, m1_alpha, a1), (m2, m2_alpha, a2)):
        x = desc[m.member_id]
        assert (x["metadata"], x["assignment"], x["client_id"]) == (meta, a, CLIENT_ID), x
        assert "127.0.0.1" in x["client_host"], x

    # The follower leaves; the leader is told to rejoin and forms the next generation alone.
    res = K.leave_group(follower.conn, v["leave"], grp, [(follower.member_id, None)])
    assert res["error"] == 0, res
    if v["leave"] >= 3:
        assert [(x["member_id"], x["error"]) for x in res["members"]] == [(follower.member_id, 0)], res
    stay = m1 if follower is m2 else m2
    assert stay.hb(v["hb"]) == K.REBALANCE_IN_PROGRESS
    old_gen = stay.generation
    (r,) = join_round([stay], v["join"])
    assert r["generation"] == old_gen + 1, r
    assert r["leader"] == stay.member_id
    # Alone, the member's own first choice wins (m2 prefers gamma).
    stay_proto, stay_meta = stay.protocols[0]
    assert r["protocol_name"] == stay_proto, r
    assert [(x["member_id"], x["metadata"]) for x in r["members"]] == [(stay.member_id, stay_meta)], r
    got = sync_round([stay], v["sync"], stay.member_id, {stay.member_id: b"alone"}, "connect", stay_proto)
    assert got[stay.member_id]["assignment"] == b"alone"
    assert stay.hb(v["hb"]) == 0
    # The member that left is unknown now.
    assert follower.hb(v["hb"]) == K.UNKNOWN_MEMBER_ID


# --------------------------------------------------------------------------
# Error codes
# --------------------------------------------------------------------------


def test_illegal_generation_and_unknown_member(broker, topic_name, members):
    H.create_topic(broker.bootstrap, topic_name, 1)
    grp = "errs-" + topic_name
    m1 = members(broker.bootstrap, grp, [("p", b"m1")])
    m2 = members(broker.bootstrap, grp, [("p", b"m2")])
    leader, assignments = form_group([m1, m2])
    gen = m1.generation

    # ILLEGAL_GENERATION (22)
    assert m1.hb(3, generation=gen + 1) == K.ILLEGAL_GENERATION
    assert m1.hb(4, generation=gen - 1) == K.ILLEGAL_GENERATION
    r = K.sync_group(m2.conn, 3, grp, gen + 5, m2.member_id, [])
    assert r["error"] == K.ILLEGAL_GENERATION, r
    assert commit(m1.conn, 7, grp, {topic_name: [(0, 5, None)]}, generation=gen + 1, member_id=m1.member_id) == {
        (topic_name, 0): K.ILLEGAL_GENERATION}
    assert commit(m1.conn, 2, grp, {topic_name: [(0, 5, None)]}, generation=gen - 1, member_id=m1.member_id) == {
        (topic_name, 0): K.ILLEGAL_GENERATION}

    # UNKNOWN_MEMBER_ID (25)
    ghost = "ghost-member-id"
    assert m1.hb(3, member_id=ghost) == K.UNKNOWN_MEMBER_ID
    assert m1.hb(0, member_id=ghost) == K.UNKNOWN_MEMBER_ID
    r = K.sync_group(m1.conn, 4, grp, gen, ghost, [])
    assert r["error"] == K.UNKNOWN_MEMBER_ID, r
    assert commit(m1.conn, 8, grp, {topic_name: [(0, 5, None)]}, generation=gen, member_id=ghost) == {
        (topic_name, 0): K.UNKNOWN_MEMBER_ID}
    with K.Conn(broker.bootstrap) as conn:
        r = K.join_group(conn, 5, grp, ghost, "connect", [("p", b"x")], timeout=JOIN_TIMEOUT)
        assert r["error"] == K.UNKNOWN_MEMBER_ID, r
        r = K.join_group(conn, 1, grp, ghost, "connect", [("p", b"x")], timeout=JOIN_TIMEOUT)
        assert r["error"] == K.UNKNOWN_MEMBER_ID, r
        r = K.leave_group(conn, 0, grp, [(ghost, None)])
        assert r["error"] == K.UNKNOWN_MEMBER_ID, r
        r = K.leave_group(conn, 3, grp, [(ghost, None)])
        assert r["error"] == 0 and [(x["member_id"], x["error"]) for x in r["members"]] == [
            (ghost, K.UNKNOWN_MEMBER_ID)], r
    # None of this disturbed the group or stored anything.
    assert m1.hb(3) == 0 and m2.hb(3) == 0
    err, offs = K.offset_fetch_one(m1.conn, 5, grp, {topic_name: [0]})
    assert offs[(topic_name, 0)][0] == -1, offs
    with K.Conn(broker.bootstrap) as conn:
        (d,) = K.describe_groups(conn, 5, [grp])
    assert d["state"] == "Stable" and {x["member_id"] for x in d["members"]} == {m1.member_id, m2.member_id}, d


def test_rebalance_in_progress_when_a_member_joins(broker, topic_name, members):
    H.create_topic(broker.bootstrap, topic_name, 1)
    grp = "rebal-" + topic_name
    ms = [members(broker.bootstrap, grp, [("p", b"meta-%d" % i)]) for i in range(3)]
    m1, m2, m3 = ms
    form_group([m1, m2])
    gen = m1.generation

    # The MEMBER_ID_REQUIRED answer alone does not start a rebalance...
    dance(m3, 5)
    assert m1.hb(3) == 0 and m2.hb(3) == 0
    # ...the join with that id does; the newcomer's answer is held back until the others rejoin.
    pend3 = K.send_join_group(m3.conn, 5, grp, m3.member_id, "connect", m3.protocols, rebalance_timeout_ms=10000)
    G.wait_for(lambda: m1.hb(3) == K.REBALANCE_IN_PROGRESS, 5,
               "m1's heartbeat to answer REBALANCE_IN_PROGRESS after a third member joined")
    assert m2.hb(4) == K.REBALANCE_IN_PROGRESS
    # While the rebalance is prepared, members of the current generation may still commit.
    assert commit(m1.conn, 7, grp, {topic_name: [(0, 42, "during rebalance")]}, generation=gen,
                  member_id=m1.member_id) == {(topic_name, 0): 0}
    assert not_answered(m3.conn, 0.3), "the newcomer's JoinGroup was answered before the others rejoined"
    with K.Conn(broker.bootstrap) as conn:
        assert K.describe_groups(conn, 5, [grp])[0]["state"] == "PreparingRebalance"
        assert grp in K.list_groups(conn, 4, ["PreparingRebalance"])[1]

    res12 = join_round([m1, m2], 5)
    r3 = pend3.result(JOIN_TIMEOUT)
    assert r3["error"] == 0, r3
    m3.generation = r3["generation"]
    assert res12[0]["generation"] == r3["generation"] == gen + 1
    # Joined but not yet synced: CompletingRebalance, where commits are refused.
    with K.Conn(broker.bootstrap) as conn:
        assert K.describe_groups(conn, 5, [grp])[0]["state"] == "CompletingRebalance"
        assert grp in K.list_groups(conn, 4, ["CompletingRebalance"])[1]
    assert commit(m2.conn, 7, grp, {topic_name: [(0, 43, None)]}, generation=m2.generation,
                  member_id=m2.member_id) == {(topic_name, 0): K.REBALANCE_IN_PROGRESS}
    leader = r3["leader"]
    lead = next(r for r in res12 + [r3] if r["member_id"] == leader)
    assert {x["member_id"]: x["metadata"] for x in lead["members"]} == {m.member_id: m.protocols[0][1] for m in ms}
    got = sync_round(ms, 3, leader, {m.member_id: b"part-" + m.member_id.encode() for m in ms})
    assert all(got[m.member_id]["assignment"] == b"part-" + m.member_id.encode() for m in ms), got
    assert [m.hb(3) for m in ms] == [0, 0, 0]
    assert m1.hb(3, generation=gen) == K.ILLEGAL_GENERATION
    err, offs = K.offset_fetch_one(m1.conn, 8, grp, {topic_name: [0]})
    assert offs[(topic_name, 0)] == (42, "during rebalance", 0)


def test_inconsistent_group_protocol(broker, members):
    grp = "incons-%d" % os.getpid()
    m1 = members(broker.bootstrap, grp, [("alpha", b"a"), ("beta", b"b")])
    form_group([m1])
    with K.Conn(broker.bootstrap) as conn:
        # Another protocol type.
        r = K.join_group(conn, 1, grp, "", "consumer", [("alpha", b"a")], timeout=JOIN_TIMEOUT)
        assert r["error"] == K.INCONSISTENT_GROUP_PROTOCOL, r
        r = K.join_group(conn, 5, grp, "", "consumer", [("alpha", b"a")], timeout=JOIN_TIMEOUT)
        assert r["error"] == K.INCONSISTENT_GROUP_PROTOCOL, r
        # Same type, no protocol in common.
        r = K.join_group(conn, 1, grp, "", "connect", [("gamma", b"g"), ("delta", b"d")], timeout=JOIN_TIMEOUT)
        assert r["error"] == K.INCONSISTENT_GROUP_PROTOCOL, r
        r = K.join_group(conn, 9, grp, "", "connect", [("gamma", b"g")], timeout=JOIN_TIMEOUT)
        assert r["error"] == K.INCONSISTENT_GROUP_PROTOCOL, r
        # A new group cannot start without a protocol type or without protocols.
        r = K.join_group(conn, 1, grp + "-new", "", "connect", [], timeout=JOIN_TIMEOUT)
        assert r["error"] == K.INCONSISTENT_GROUP_PROTOCOL, r
        r = K.join_group(conn, 1, grp + "-new2", "", "", [("alpha", b"a")], timeout=JOIN_TIMEOUT)
        assert r["error"] == K.INCONSISTENT_GROUP_PROTOCOL, r
    assert m1.hb(3) == 0
    with K.Conn(broker.bootstrap) as conn:
        (d,) = K.describe_groups(conn, 5, [grp])
    assert (d["state"], d["protocol_type"], d["protocol_data"], len(d["members"])) == (
        "Stable", "connect", "alpha", 1), d


def test_invalid_session_timeout_and_group_id(broker):
    grp = "sess-%d" % os.getpid()
    with K.Conn(broker.bootstrap, timeout=JOIN_TIMEOUT) as conn:
        for jv in (0, 5, 9):
            for st in (5999, 1_800_001, 0):
                r = K.join_group(conn, jv, grp, "", "connect", [("p", b"x")], session_timeout_ms=st)
                assert r["error"] == K.INVALID_SESSION_TIMEOUT, (jv, st, r)
            r = K.join_group(conn, jv, "", "", "connect", [("p", b"x")])
            assert r["error"] == K.INVALID_GROUP_ID, (jv, r)
        # The bounds themselves are accepted (one-member groups form).
        r = K.join_group(conn, 1, grp, "", "connect", [("p", b"x")], session_timeout_ms=6000)
        assert r["error"] == 0 and r["leader"] == r["member_id"], r
        r = K.join_group(conn, 1, grp + "-max", "", "connect", [("p", b"x")], session_timeout_ms=1_800_000)
        assert r["error"] == 0 and r["leader"] == r["member_id"], r
    with K.Conn(broker.bootstrap) as conn:
        listed = K.list_groups(conn, 4)[1]
    assert "" not in listed


def test_invalid_session_timeout_bounds_follow_flags(broker_factory):
    b = broker_factory(extra_args=["--group-min-session-timeout-ms", "1000",
                                   "--group-max-session-timeout-ms", "30000"])
    with K.Conn(b.bootstrap, timeout=JOIN_TIMEOUT) as conn:
        for st in (999, 30001):
            r = K.join_group(conn, 5, "bounds", "", "connect", [("p", b"x")], session_timeout_ms=st)
            assert r["error"] == K.INVALID_SESSION_TIMEOUT, (st, r)
        r = K.join_group(conn, 1, "bounds", "", "connect", [("p", b"x")], session_timeout_ms=1000)
        assert r["error"] == 0, r
        r = K.join_group(conn, 1, "bounds2", "", "connect", [("p", b"x")], session_timeout_ms=30000)
        assert r["error"] == 0, r


def test_offset_commit_errors(broker_factory, topic_name):
    b = broker_factory()
    H.create_topic(b.bootstrap, topic_name, 2)
    grp = "commit-errs-" + topic_name
    with K.Conn(b.bootstrap) as conn:
        ok = "x" * 4096
        for cv in (2, 8):
            assert commit(conn, cv, grp, {topic_name: [(0, 7, ok)]}) == {(topic_name, 0): 0}
            res = commit(conn, cv, grp, {topic_name: [(0, 9, ok + "y")]})
            assert res == {(topic_name, 0): K.OFFSET_METADATA_TOO_LARGE}, (cv, res)
            for fv in (1, 8):
                err, offs = K.offset_fetch_one(conn, fv, grp, {topic_name: [0]})
                assert offs[(topic_name, 0)] == (7, ok, 0), "a refused commit changed the stored offset"
        # Non-ASCII metadata at the limit (4096 bytes of UTF-8) round-trips.
        u = "\u00e9" * 2048
        assert commit(conn, 8, grp, {topic_name: [(1, 3, u)]}) == {(topic_name, 1): 0}
        assert K.offset_fetch_one(conn, 8, grp, {topic_name: [1]})[1] == {(topic_name, 1): (3, u, 0)}

        # Unknown topic, partition out of range; the valid partition of the same request is stored.
        missing = topic_name + "-missing"
        res = commit(conn, 7, grp, {topic_name: [(0, 100, "good"), (2, 5, None)], missing: [(0, 1, None)]})
        assert res == {(topic_name, 0): 0, (topic_name, 2): K.UNKNOWN_TOPIC_OR_PARTITION,
                       (missing, 0): K.UNKNOWN_TOPIC_OR_PARTITION}, res
        assert commit(conn, 8, grp, {missing: [(3, 1, None)]}) == {(missing, 3): K.UNKNOWN_TOPIC_OR_PARTITION}
        err, offs = K.offset_fetch_one(conn, 5, grp, None)
        assert err == 0
        assert {k: v[0] for k, v in offs.items()} == {(topic_name, 0): 100, (topic_name, 1): 3}, offs

    # A smaller limit from the command line.
    b2 = broker_factory(extra_args=["--offset-metadata-max-bytes", "100"])
    H.create_topic(b2.bootstrap, topic_name, 1)
    with K.Conn(b2.bootstrap) as conn:
        assert commit(conn, 8, grp, {topic_name: [(0, 1, "m" * 100)]}) == {(topic_name, 0): 0}
        assert commit(conn, 8, grp, {topic_name: [(0, 2, "m" * 101)]}) == {
            (topic_name, 0): K.OFFSET_METADATA_TOO_LARGE}
        assert K.offset_fetch_one(conn, 8, grp, {topic_name: [0]})[1] == {(topic_name, 0): (1, "m" * 100, 0)}


def test_group_max_size(broker_factory, members):
    b = broker_factory(extra_args=["--group-max-size", "2"])
    grp = "maxsize"
    m1, m2, m3 = [members(b.bootstrap, grp, [("p", b"m%d" % i)]) for i in range(3)]
    form_group([m1, m2])
    r = K.join_group(m3.conn, 5, grp, "", "connect", m3.protocols, timeout=JOIN_TIMEOUT)
    assert r["error"] == K.GROUP_MAX_SIZE_REACHED, r
    r = K.join_group(m3.conn, 1, grp, "", "connect", m3.protocols, timeout=JOIN_TIMEOUT)
    assert r["error"] == K.GROUP_MAX_SIZE_REACHED, r
    assert m1.hb(3) == 0 and m2.hb(3) == 0, "a refused join disturbed the group"
    with K.Conn(b.bootstrap) as conn:
        (d,) = K.describe_groups(conn, 5, [grp])
    assert {x["member_id"] for x in d["members"]} == {m1.member_id, m2.member_id}, d

    # Once a member leaves there is room again.
    assert K.leave_group(m2.conn, 3, grp, [(m2.member_id, None)])["error"] == 0
    dance(m3, 5)
    pend3 = K.send_join_group(m3.conn, 5, grp, m3.member_id, "connect", m3.protocols, rebalance_timeout_ms=10000)
    assert m1.hb(3) == K.REBALANCE_IN_PROGRESS
    (r1,) = join_round([m1], 5)
    r3 = pend3.result(JOIN_TIMEOUT)
    assert r3["error"] == 0 and r3["generation"] == r1["generation"], r3
    lead = r1 if r1["leader"] == m1.member_id else r3
    assert {x["member_id"] for x in lead["members"]} == {m1.member_id, m3.member_id}


def test_static_membership_fenced_instance_id(broker, topic_name, members):
    H.create_topic(broker.bootstrap, topic_name, 1)
    grp = "static-" + topic_name
    a = members(broker.bootstrap, grp, [("p", b"meta-a")], instance_id="inst-a")
    b = members(broker.bootstrap, grp, [("p", b"meta-b")], instance_id="inst-b")
    # Static members join with an empty member id and are admitted without MEMBER_ID_REQUIRED.
    res = join_round([a, b], 5)
    leader = res[0]["leader"]
    lead = next(r for r in res if r["member_id"] == leader)
    assert {(x["member_id"], x["group_instance_id"], x["metadata"]) for x in lead["members"]} == {
        (a.member_id, "inst-a", b"meta-a"), (b.member_id, "inst-b", b"meta-b")}, lead
    assignments = {a.member_id: b"assigned-to-a", b.member_id: b"assigned-to-b"}
    got = sync_round([a, b], 3, leader, assignments)
    assert {k: v["assignment"] for k, v in got.items()} == assignments
    gen = a.generation
    assert a.hb(3) == 0 and b.hb(3) == 0

    # A new process takes over the follower's instance id.
    follower = b if leader == a.member_id else a
    stay = a if follower is b else b
    inst = follower.instance_id
    new = members(broker.bootstrap, grp, follower.protocols, instance_id=inst)
    r = K.join_group(new.conn, 5, grp, "", "connect", new.protocols, group_instance_id=inst,
                     rebalance_timeout_ms=10000, timeout=JOIN_TIMEOUT)
    assert r["error"] == 0, r
    assert r["member_id"] and r["member_id"] != follower.member_id, r
    # Same protocol, group Stable: no rebalance, the replacement inherits the assignment.
    assert r["generation"] == gen and r["leader"] == leader and r["members"] == [], r
    new.member_id, new.generation = r["member_id"], r["generation"]
    s = K.sync_group(new.conn, 3, grp, gen, new.member_id, [], group_instance_id=inst)
    assert (s["error"], s["assignment"]) == (0, assignments[follower.member_id]), s
    assert new.hb(3) == 0
    assert stay.hb(3) == 0

    # The replaced member is fenced everywhere.
    assert follower.hb(3) == K.FENCED_INSTANCE_ID
    assert K.sync_group(follower.conn, 3, grp, gen, follower.member_id, [], group_instance_id=inst)["error"] == \
        K.FENCED_INSTANCE_ID
    assert commit(follower.conn, 7, grp, {topic_name: [(0, 1, None)]}, generation=gen,
                  member_id=follower.member_id, group_instance_id=inst) == {(topic_name, 0): K.FENCED_INSTANCE_ID}
    res = K.leave_group(follower.conn, 3, grp, [(follower.member_id, inst)])
    assert res["error"] == 0 and [(x["member_id"], x["group_instance_id"], x["error"]) for x in res["members"]] == [
        (follower.member_id, inst, K.FENCED_INSTANCE_ID)], res
    assert new.hb(3) == 0 and stay.hb(3) == 0

    with K.Conn(broker.bootstrap) as conn:
        (d,) = K.describe_groups(conn, 5, [grp])
    assert d["state"] == "Stable", d
    assert {(x["member_id"], x["group_instance_id"]) for x in d["members"]} == {
        (stay.member_id, stay.instance_id), (new.member_id, inst)}, d


@pytest.mark.parametrize("jv", [5, 9])
def test_static_leader_rejoin_keeps_generation_and_leadership(broker, topic_name, members, jv):
    """A restarted static leader (same instance id, same protocols) gets a new member id
    and nothing else changes: no rebalance, same generation and assignments. JoinGroup
    v9+ tells it that it leads (member list, skip_assignment); v5-v8 name the previous
    leader id, as Kafka does, so that it does not run its assignor."""
    grp = "static-lead-%d-%s" % (jv, topic_name)
    a = members(broker.bootstrap, grp, [("p", b"meta-a")], instance_id="inst-a")
    b = members(broker.bootstrap, grp, [("p", b"meta-b")], instance_id="inst-b")
    leader, assignments = form_group([a, b])
    gen = a.generation
    old_leader = a if leader == a.member_id else b
    follower = b if old_leader is a else a

    new = members(broker.bootstrap, grp, old_leader.protocols, instance_id=old_leader.instance_id)
    r = K.join_group(new.conn, jv, grp, "", "connect", new.protocols, group_instance_id=new.instance_id,
                     rebalance_timeout_ms=10000, timeout=JOIN_TIMEOUT)
    assert r["error"] == 0 and r["generation"] == gen, r
    assert r["member_id"] and r["member_id"] != old_leader.member_id, r
    new.member_id, new.generation = r["member_id"], gen
    if jv >= 9:
        assert (r["leader"], r["skip_assignment"]) == (new.member_id, True), r
        assert {(x["member_id"], x["group_instance_id"], x["metadata"]) for x in r["members"]} == {
            (new.member_id, new.instance_id, b"meta-" + new.instance_id[-1:].encode()),
            (follower.member_id, follower.instance_id, b"meta-" + follower.instance_id[-1:].encode())}, r
    else:
        assert (r["leader"], r["members"]) == (old_leader.member_id, []), r
    # No rebalance: the follower's heartbeat is fine and both keep their assignments.
    assert follower.hb(3) == 0
    s = K.sync_group(new.conn, 3, grp, gen, new.member_id, [], group_instance_id=new.instance_id)
    assert (s["error"], s["assignment"]) == (0, assignments[old_leader.member_id]), s
    assert new.hb(3) == 0 and follower.hb(3) == 0
    assert old_leader.hb(3) == K.FENCED_INSTANCE_ID
    with K.Conn(broker.bootstrap) as conn:
        (d,) = K.describe_groups(conn, 5, [grp])
    assert d["state"] == "Stable", d
    assert {(x["member_id"], x["assignment"]) for x in d["members"]} == {
        (new.member_id, assignments[old_leader.member_id]), (follower.member_id, assignments[follower.member_id])}, d

    # The group's leader is the new id: the next rebalance hands it the member list.
    follower.protocols = [("p", b"meta-changed")]
    res = join_round([new, follower], jv)
    assert {x["leader"] for x in res} == {new.member_id}, res
    assert all(x["generation"] == gen + 1 for x in res), res


def test_session_expiry_removes_silent_member(broker_factory, members):
    b = broker_factory(extra_args=["--group-min-session-timeout-ms", "1000"])
    grp = "expiry"
    m1 = members(b.bootstrap, grp, [("p", b"alive")], session_timeout_ms=1500)
    m2 = members(b.bootstrap, grp, [("p", b"silent")], session_timeout_ms=1500)
    form_group([m1, m2])
    t_sync = time.monotonic()
    # m1 heartbeats every 250 ms; m2 says nothing.
    deadline = t_sync + 6
    seen = []
    while True:
        e = m1.hb(3)
        seen.append(e)
        if e == K.REBALANCE_IN_PROGRESS:
            break
        assert e == 0, seen
        assert time.monotonic() < deadline, "the silent member was not expired within 6s (1.5s session)"
        time.sleep(0.25)
    took = time.monotonic() - t_sync
    print("silent member expired %.2fs after the group formed (session 1.5s)" % took)
    assert 1.0 <= took <= 1.5 + 1.5, "expiry after %.2fs with a 1.5s session timeout" % took
    (r,) = join_round([m1], 5)
    assert [x["member_id"] for x in r["members"]] == [m1.member_id], r
    sync_round([m1], 3, m1.member_id, {m1.member_id: b"all"})
    assert m1.hb(3) == 0
    assert m2.hb(3) == K.UNKNOWN_MEMBER_ID
    with K.Conn(b.bootstrap) as conn:
        (d,) = K.describe_groups(conn, 5, [grp])
    assert [x["member_id"] for x in d["members"]] == [m1.member_id] and d["state"] == "Stable", d


def test_leave_group_batched_members(broker, members):
    grp = "leave-batch-%d" % os.getpid()
    ms = [members(broker.bootstrap, grp, [("p", b"m%d" % i)]) for i in range(3)]
    form_group(ms)
    m1, m2, m3 = ms
    res = K.leave_group(m1.conn, 3, grp, [(m2.member_id, None), (m3.member_id, None), ("nobody", None)])
    assert res["error"] == 0, res
    assert sorted((x["member_id"], x["error"]) for x in res["members"]) == sorted(
        [(m2.member_id, 0), (m3.member_id, 0), ("nobody", K.UNKNOWN_MEMBER_ID)]), res
    assert m1.hb(3) == K.REBALANCE_IN_PROGRESS
    assert m2.hb(3) == K.UNKNOWN_MEMBER_ID
    (r,) = join_round([m1], 5)
    assert [x["member_id"] for x in r["members"]] == [m1.member_id]
    sync_round([m1], 3, m1.member_id, {m1.member_id: b"x"})
    # The last member leaves with the flexible version (and a reason): the group is Empty.
    res = K.leave_group(m1.conn, 5, grp, [(m1.member_id, None, "test done")])
    assert res["error"] == 0 and [(x["member_id"], x["error"]) for x in res["members"]] == [(m1.member_id, 0)]
    with K.Conn(broker.bootstrap) as conn:
        (d,) = K.describe_groups(conn, 5, [grp])
    assert (d["error"], d["state"], d["members"]) == (0, "Empty", []), d


def test_offset_fetch_v8_several_groups(broker, topic_name):
    t2 = topic_name + "-b"
    H.create_topic(broker.bootstrap, topic_name, 2)
    H.create_topic(broker.bootstrap, t2, 1)
    g1, g2, g3 = ("of8-%s-%d" % (topic_name, i) for i in range(3))
    with K.Conn(broker.bootstrap) as conn:
        assert set(commit(conn, 8, g1, {topic_name: [(0, 1, "one"), (1, 2, None)]}).values()) == {0}
        assert set(commit(conn, 3, g2, {topic_name: [(0, 10, "two")], t2: [(0, 20, "two-b")]}).values()) == {0}
        res = K.offset_fetch(conn, 8, [(g1, None), (g2, {topic_name: [0, 1], t2: [0]}), (g3, None)])
        assert set(res) == {g1, g2, g3}, res
        # Null metadata comes back as "", as Kafka stores it.
        assert res[g1] == dict(error=0, offsets={(topic_name, 0): (1, "one", 0), (topic_name, 1): (2, "", 0)})
        assert res[g2]["error"] == 0
        o2 = res[g2]["offsets"]
        assert o2[(topic_name, 0)] == (10, "two", 0) and o2[(t2, 0)] == (20, "two-b", 0), o2
        assert o2[(topic_name, 1)][0] == -1 and o2[(topic_name, 1)][2] == 0, o2
        assert set(o2) == {(topic_name, 0), (topic_name, 1), (t2, 0)}
        assert res[g3] == dict(error=0, offsets={}), res[g3]
        # Older single-group versions agree.
        for fv in (1, 2, 6, 7):
            err, offs = K.offset_fetch_one(conn, fv, g2, {t2: [0]})
            assert (err, offs) == (0, {(t2, 0): (20, "two-b", 0)}), (fv, err, offs)
            err, offs = K.offset_fetch_one(conn, fv, g1, {topic_name: [1]})
            assert (err, offs) == (0, {(topic_name, 1): (2, "", 0)}), (fv, err, offs)


def test_find_coordinator_is_this_broker(broker):
    with K.Conn(broker.bootstrap) as conn:
        md = K.metadata_v1(conn, [])
        (node,) = md["brokers"]
        for fv in (0, 1, 2, 3):
            (c,) = K.find_coordinator(conn, fv, ["some-group"])
            assert (c["error"], c["node_id"], c["host"], c["port"]) == (
                0, node["node_id"], "127.0.0.1", broker.port), (fv, c)
        keys = ["g-one", "g-two", "g-three", "g-" + "x" * 200]
        cs = K.find_coordinator(conn, 4, keys)
        assert sorted(c["key"] for c in cs) == sorted(keys), cs
        for c in cs:
            assert (c["error"], c["node_id"], c["host"], c["port"]) == (
                0, node["node_id"], "127.0.0.1", broker.port), c


def test_describe_and_list_groups_raw(broker, topic_name, members):
    H.create_topic(broker.bootstrap, topic_name, 1)
    grp = "desc-" + topic_name
    unknown = "desc-unknown-" + topic_name
    simple = "desc-simple-" + topic_name
    m1 = members(broker.bootstrap, grp, [("range", K.consumer_subscription_v0([topic_name]))])
    form_group([m1], ptype="consumer")
    with K.Conn(broker.bootstrap) as conn:
        assert commit(conn, 2, simple, {topic_name: [(0, 3, None)]}) == {(topic_name, 0): 0}
        for dv in (0, 3, 5):
            res = K.describe_groups(conn, dv, [unknown, grp, simple])
            by = {d["group_id"]: d for d in res}
            assert set(by) == {unknown, grp, simple}, res
            u = by[unknown]
            assert (u["error"], u["state"], u["protocol_type"], u["protocol_data"], u["members"]) == (
                0, "Dead", "", "", []), (dv, u)
            assert (by[grp]["state"], by[grp]["protocol_type"], by[grp]["protocol_data"]) == (
                "Stable", "consumer", "range"), by[grp]
            assert (by[simple]["error"], by[simple]["state"], by[simple]["members"]) == (0, "Empty", []), by[simple]
        for lv in (0, 3, 4):
            err, groups = K.list_groups(conn, lv)
            assert err == 0
            assert groups[grp]["protocol_type"] == "consumer" and groups[simple]["protocol_type"] == "", groups
            assert unknown not in groups
            if lv >= 4:
                assert (groups[grp]["state"], groups[simple]["state"]) == ("Stable", "Empty"), groups
        err, groups = K.list_groups(conn, 4, ["Empty"])
        assert simple in groups and grp not in groups


def test_offset_delete(broker, topic_name, members):
    other = topic_name + "-other"
    H.create_topic(broker.bootstrap, topic_name, 2)
    H.create_topic(broker.bootstrap, other, 1)
    grp = "odel-" + topic_name
    sub = K.consumer_subscription_v0([topic_name], user_data=b"ud")
    m = members(broker.bootstrap, grp, [("range", sub)])
    form_group([m], ptype="consumer", payload=lambda x: K.consumer_assignment_v0({topic_name: [0, 1]}))
    assert commit(m.conn, 7, grp, {topic_name: [(0, 5, None), (1, 6, None)], other: [(0, 7, None)]},
                  generation=m.generation, member_id=m.member_id) == {
        (topic_name, 0): 0, (topic_name, 1): 0, (other, 0): 0}
    with K.Conn(broker.bootstrap) as conn:
        err, res = K.offset_delete(conn, grp, {topic_name: [0, 1], other: [0]})
        assert err == 0, err
        assert res == {(topic_name, 0): K.GROUP_SUBSCRIBED_TO_TOPIC, (topic_name, 1): K.GROUP_SUBSCRIBED_TO_TOPIC,
                       (other, 0): 0}, res
        _, offs = K.offset_fetch_one(conn, 8, grp, {topic_name: [0, 1], other: [0]})
        assert {k: v[0] for k, v in offs.items()} == {(topic_name, 0): 5, (topic_name, 1): 6, (other, 0): -1}, offs

        # Once the member left the group is Empty: its offsets can be deleted one by one.
        assert K.leave_group(m.conn, 3, grp, [(m.member_id, None)])["error"] == 0
        err, res = K.offset_delete(conn, grp, {topic_name: [0]})
        assert (err, res) == (0, {(topic_name, 0): 0}), (err, res)
        _, offs = K.offset_fetch_one(conn, 8, grp, {topic_name: [0, 1]})
        assert {k: v[0] for k, v in offs.items()} == {(topic_name, 0): -1, (topic_name, 1): 6}, offs

        # A group that only ever committed offsets.
        simple = grp + "-simple"
        assert commit(conn, 8, simple, {topic_name: [(0, 1, None), (1, 2, None)]}) == {
            (topic_name, 0): 0, (topic_name, 1): 0}
        err, res = K.offset_delete(conn, simple, {topic_name: [1]})
        assert (err, res) == (0, {(topic_name, 1): 0}), (err, res)
        _, offs = K.offset_fetch_one(conn, 8, simple, {topic_name: [0, 1]})
        assert {k: v[0] for k, v in offs.items()} == {(topic_name, 0): 1, (topic_name, 1): -1}, offs

        err, res = K.offset_delete(conn, grp + "-unknown", {topic_name: [0]})
        assert err == K.GROUP_ID_NOT_FOUND, (err, res)


def test_membership_and_offsets_kept_on_restart(broker, topic_name, members):
    H.create_topic(broker.bootstrap, topic_name, 1)
    grp = "restart-" + topic_name
    m = members(broker.bootstrap, grp, [("p", b"x")])
    form_group([m])
    assert commit(m.conn, 8, grp, {topic_name: [(0, 3, "kept")]}, generation=m.generation,
                  member_id=m.member_id) == {(topic_name, 0): 0}
    old_id, old_gen = m.member_id, m.generation
    m.conn.close()
    broker.restart()
    with K.Conn(broker.bootstrap) as conn:
        # The group is restored (test_groups_restart.py covers it in depth).
        assert K.heartbeat(conn, 3, grp, old_gen, old_id) == 0
        assert K.offset_fetch_one(conn, 8, grp, {topic_name: [0]})[1] == {(topic_name, 0): (3, "kept", 0)}
        err, groups = K.list_groups(conn, 4)
        assert groups[grp]["state"] == "Stable", groups.get(grp)
        (d,) = K.describe_groups(conn, 5, [grp])
        assert (d["error"], d["state"], [x["member_id"] for x in d["members"]]) == (0, "Stable", [old_id]), d
        # The member leaves after the restart: the group is empty, its offsets stay.
        assert K.leave_group(conn, 3, grp, [(old_id, None)])["members"][0]["error"] == 0
        (d,) = K.describe_groups(conn, 5, [grp])
        assert (d["error"], d["state"], d["members"]) == (0, "Empty", []), d
    broker.restart()
    with K.Conn(broker.bootstrap) as conn:
        (d,) = K.describe_groups(conn, 5, [grp])
        assert (d["error"], d["state"], d["members"]) == (0, "Empty", []), d
        assert K.offset_fetch_one(conn, 8, grp, {topic_name: [0]})[1] == {(topic_name, 0): (3, "kept", 0)}
    # New members form the next generation.
    m2 = members(broker.bootstrap, grp, [("p", b"again")])
    form_group([m2])
    assert m2.member_id != old_id
    assert m2.hb(3) == 0


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1))


def test_thousands_of_groups(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 1)
    pid = broker.proc.pid
    n_warm, n = 200, 3000
    names = ["many-%05d-%s" % (i, topic_name[-6:]) for i in range(n_warm + n)]
    nameset = set(names)

    def commit_many(conn, groups, window=100):
        for start in range(0, len(groups), window):
            chunk = groups[start:start + window]
            pend = [K.send_offset_commit(conn, 2, g, {topic_name: [(0, i, "meta-%s" % g)]})
                    for i, g in enumerate(chunk, start)]
            for g, p in zip(chunk, pend):
                assert p.result(30) == {(topic_name, 0): 0}, g

    with K.Conn(broker.bootstrap, timeout=60) as conn:
        commit_many(conn, names[:n_warm])
        before = rss_kib(pid)
        t0 = time.monotonic()
        commit_many(conn, names[n_warm:])
        took = time.monotonic() - t0
        after = rss_kib(pid)
        per_group = (after - before) * 1024.0 / n
        print("%d groups created in %.1fs (%.0f/s); RSS %d -> %d KiB, %.0f bytes per group"
              % (n, took, n / took, before, after, per_group))
        assert per_group < 20 * 1024, "RSS grew by %.0f bytes per group" % per_group

        err, groups = K.list_groups(conn, 4)
        assert err == 0
        mine = {g: d for g, d in groups.items() if g in nameset}
        assert len(mine) == len(names), "ListGroups returned %d of %d groups" % (len(mine), len(names))
        assert all(d == dict(protocol_type="", state="Empty") for d in mine.values()), list(mine.items())[:3]
        sample = names[::37]
        res = K.offset_fetch(conn, 8, [(g, {topic_name: [0]}) for g in sample])
        for g in sample:
            i = names.index(g) if names.index(g) < n_warm else names.index(g) - n_warm
            assert res[g] == dict(error=0, offsets={(topic_name, 0): (i, "meta-%s" % g, 0)}), (g, res[g])
    broker.restart()
    with K.Conn(broker.bootstrap, timeout=60) as conn:
        err, groups = K.list_groups(conn, 4)
        assert len([g for g in groups if g in nameset]) == len(names)
        assert groups[names[-1]]["state"] == "Empty"
        res = K.offset_fetch(conn, 8, [(names[-1], {topic_name: [0]})])
        assert res[names[-1]]["offsets"] == {(topic_name, 0): (n - 1, "meta-%s" % names[-1], 0)}


def test_rebalance_timeout_drops_members_that_do_not_rejoin(broker, members):
    """A member that does not rejoin within the rebalance timeout is dropped from the new
    generation (long before its session would expire)."""
    grp = "rebal-timeout-%d" % os.getpid()
    m1, m2, m3 = [members(broker.bootstrap, grp, [("p", b"m%d" % i)], session_timeout_ms=30000,
                          rebalance_timeout_ms=2000) for i in range(3)]
    form_group([m1, m2])
    dance(m3, 5)
    pend3 = K.send_join_group(m3.conn, 5, grp, m3.member_id, "connect", m3.protocols, session_timeout_ms=30000,
                              rebalance_timeout_ms=2000)
    t0 = time.monotonic()
    G.wait_for(lambda: m1.hb(3) == K.REBALANCE_IN_PROGRESS, 5, "m1 to see the rebalance")
    # m1 rejoins, m2 stays silent.
    pend1 = K.send_join_group(m1.conn, 5, grp, m1.member_id, "connect", m1.protocols, session_timeout_ms=30000,
                              rebalance_timeout_ms=2000)
    r1 = pend1.result(JOIN_TIMEOUT)
    r3 = pend3.result(JOIN_TIMEOUT)
    took = time.monotonic() - t0
    print("join completed without the silent member after %.2fs (rebalance timeout 2s)" % took)
    assert r1["error"] == 0 and r3["error"] == 0, (r1, r3)
    assert r1["generation"] == r3["generation"]
    lead = r1 if r1["leader"] == m1.member_id else r3
    assert {x["member_id"] for x in lead["members"]} == {m1.member_id, m3.member_id}, lead
    assert 1.5 <= took <= 2.0 + 3.0, "the join completed %.2fs after the rebalance began (timeout 2s)" % took
    assert m2.hb(3) == K.UNKNOWN_MEMBER_ID


def test_committed_offsets_survive_kill9(broker, topic_name):
    """An acknowledged commit is on disk: it survives SIGKILL of the broker."""
    H.create_topic(broker.bootstrap, topic_name, 3)
    groups = ["durable-%03d-%s" % (i, topic_name[-6:]) for i in range(50)]
    with K.Conn(broker.bootstrap) as conn:
        pend = [K.send_offset_commit(conn, 8, g, {topic_name: [(p, 1000 * i + p, "d%d" % i) for p in range(3)]})
                for i, g in enumerate(groups)]
        for p in pend:
            assert set(p.result(30).values()) == {0}
    broker.kill9()
    broker.start()
    with K.Conn(broker.bootstrap) as conn:
        res = K.offset_fetch(conn, 8, [(g, None) for g in groups])
    for i, g in enumerate(groups):
        assert res[g] == dict(error=0, offsets={(topic_name, p): (1000 * i + p, "d%d" % i, 0) for p in range(3)}), (
            g, res[g])


def test_null_metadata_stored_by_an_older_broker_reads_as_empty(broker, topic_name):
    """Catalogs written before null metadata was stored as "" hold NULL in
    group_offsets.metadata; OffsetFetch answers "" for them too (no migration)."""
    import sqlite3

    H.create_topic(broker.bootstrap, topic_name, 1)
    grp = "oldnull-" + topic_name
    with K.Conn(broker.bootstrap) as conn:
        assert commit(conn, 2, grp, {topic_name: [(0, 7, "set")]}) == {(topic_name, 0): 0}
    broker.stop()
    db = sqlite3.connect(str(broker.data_dir / "catalog.db"))
    with db:
        n = db.execute("UPDATE group_offsets SET metadata = NULL WHERE group_id = ?", (grp,)).rowcount
    db.close()
    assert n == 1
    broker.start()
    with K.Conn(broker.bootstrap) as conn:
        for fv in (1, 5, 8):
            err, offs = K.offset_fetch_one(conn, fv, grp, {topic_name: [0]})
            assert (err, offs) == (0, {(topic_name, 0): (7, "", 0)}), (fv, err, offs)
