"""Groups survive a broker restart, at the protocol level (kproto): a group joined and
synced before a SIGTERM restart or a `kill -9` is the same group after it — Heartbeat,
SyncGroup and OffsetCommit with the old member id and generation succeed without a
rebalance, DescribeGroups shows the same members, metadata and assignments, and
system.groups the same generation — while a member that never comes back is removed
once its session timeout has passed since the restart, as Kafka does.

One broker for the file, restarted by each test (its port changes with each start).
"""

import re
import subprocess
import time

import pytest

import conftest
import kproto as K
import sluice_helpers as H
import sql_helpers as S

SESSION_MS = 6000  # the broker's group.min.session.timeout.ms: the quickest expiry
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def b(module_broker_factory):
    return module_broker_factory(extra_args=S.SQL_ARGS)


class Member:
    def __init__(self, bootstrap, group, metadata):
        self.group = group
        self.protocols = [("range", metadata)]
        self.conn = K.Conn(bootstrap, timeout=TIMEOUT)
        self.member_id = ""
        self.generation = -1

    def reconnect(self, bootstrap):
        self.conn.close()
        self.conn = K.Conn(bootstrap, timeout=TIMEOUT)

    def send_join(self):
        return K.send_join_group(self.conn, 5, self.group, self.member_id, "consumer", self.protocols,
                                 session_timeout_ms=SESSION_MS, rebalance_timeout_ms=10000)

    def hb(self):
        return K.heartbeat(self.conn, 3, self.group, self.generation, self.member_id)

    def close(self):
        self.conn.close()


def form_group(members):
    """Both members join (after MEMBER_ID_REQUIRED) and sync; returns the leader's result."""
    for m in members:
        r = m.send_join().result(TIMEOUT)
        assert r["error"] == K.MEMBER_ID_REQUIRED, r
        m.member_id = r["member_id"]
    res = [p.result(TIMEOUT) for p in [m.send_join() for m in members]]
    for m, r in zip(members, res):
        assert r["error"] == 0, r
        m.generation = r["generation"]
    (leader,) = [r for r in res if r["members"]]
    assignments = [(x["member_id"], b"assigned-to-" + x["member_id"].encode()) for x in leader["members"]]
    pend = [K.send_sync_group(m.conn, 3, m.group, m.generation, m.member_id,
                              assignments if m.member_id == leader["leader"] else [])
            for m in members]
    for m, p in zip(members, pend):
        r = p.result(TIMEOUT)
        assert (r["error"], r["assignment"]) == (0, b"assigned-to-" + m.member_id.encode()), r


def describe(bootstrap, group):
    with K.Conn(bootstrap) as conn:
        (d,) = K.describe_groups(conn, 5, [group])
    assert d["error"] == 0, d
    d["members"] = sorted(d["members"], key=lambda m: m["member_id"])
    return d


def generation_in_sql(b, group):
    rows = S.http_rows(b.http, "SELECT state, members, generation FROM system.groups WHERE group_id = '%s'" % group)
    assert len(rows) == 1, rows
    return rows[0]


def restart(b, how):
    if how == "kill9":
        b.kill9()
        b.start()
    else:
        b.restart()


def test_the_default_initial_rebalance_delay_is_kafkas():
    out = subprocess.run([conftest.require_binary(), "serve", "--help"], capture_output=True, text=True,
                         timeout=TIMEOUT).stdout
    (line,) = [x for x in out.splitlines() if "--group-initial-rebalance-delay-ms" in x]
    assert re.search(r"=(\d+)$", line.strip()).group(1) == "3000", line


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
def test_a_group_resumes_its_generation_after_a_restart(b, how):
    group = "restart-" + how
    topic = "restart-topic-" + how
    H.create_topic(b.bootstrap, topic, 1)
    stays, goes = Member(b.bootstrap, group, b"meta-stays"), Member(b.bootstrap, group, b"meta-goes")
    try:
        form_group([stays, goes])
        gen = stays.generation
        before = describe(b.bootstrap, group)
        assert before["state"] == "Stable" and len(before["members"]) == 2, before
        assert generation_in_sql(b, group) == ["Stable", 2, gen]

        restart(b, how)
        t_up = time.monotonic()
        stays.reconnect(b.bootstrap)
        goes.close()  # this one never comes back

        assert stays.hb() == 0, "heartbeat with the generation from before the restart"
        r = K.sync_group(stays.conn, 3, group, gen, stays.member_id, [], timeout=TIMEOUT)
        assert (r["error"], r["assignment"]) == (0, b"assigned-to-" + stays.member_id.encode()), r
        assert K.offset_commit(stays.conn, 8, group, {topic: [(0, 7, "after-restart")]}, generation=gen,
                               member_id=stays.member_id) == {(topic, 0): 0}
        after = describe(b.bootstrap, group)
        assert after == before, "DescribeGroups after the restart:\n%r\nbefore:\n%r" % (after, before)
        assert generation_in_sql(b, group) == ["Stable", 2, gen]

        # The member that stays heartbeats; the other is removed once its session,
        # started anew at the restart, has passed.
        deadline = t_up + SESSION_MS / 1000.0 + 5
        while True:
            err = stays.hb()
            if err != 0:
                break
            assert time.monotonic() < deadline, "the absent member was never removed"
            time.sleep(0.5)
        took = time.monotonic() - t_up
        print("absent member removed %.1f s after the restart (session timeout %.0f s)" % (took, SESSION_MS / 1000))
        assert err == K.REBALANCE_IN_PROGRESS, err
        assert took >= SESSION_MS / 1000.0 - 1.5, "removed after %.1f s, before its session timeout" % took
        with K.Conn(b.bootstrap) as conn:
            assert K.heartbeat(conn, 3, group, gen, goes.member_id) == K.UNKNOWN_MEMBER_ID
        # The one that stayed rejoins under its member id and leads the next generation.
        r = stays.send_join().result(TIMEOUT)
        assert (r["error"], r["generation"], r["leader"], r["member_id"]) == (0, gen + 1, stays.member_id,
                                                                              stays.member_id), r
    finally:
        stays.close()
        goes.close()
