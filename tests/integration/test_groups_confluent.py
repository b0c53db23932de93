"""Consumer groups through librdkafka (confluent-kafka-python 1.7 / librdkafka 2.0.2).

Members subscribe (classic protocol, eager rebalancing, range assignor) and
are polled on threads (group_helpers.GroupMember); one member runs in a
subprocess so that it can be SIGKILLed.  Assignments are tracked from the
rebalance callbacks and checked to be disjoint at every sample; consumed data
is compared record by record with what was produced.
"""

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition
from kafka.structs import OffsetAndMetadata

import group_helpers as G
import sluice_helpers as H

SESSION_S = G.SESSION_TIMEOUT_MS / 1000.0
HEARTBEAT_S = G.HEARTBEAT_INTERVAL_MS / 1000.0
ALL6 = set(range(6))


def group_id(topic):
    return "g-" + topic


def test_three_members_disjoint_assignment_and_takeover_on_close(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 6)
    grp = group_id(topic_name)
    view = G.GroupView()
    conf = G.group_consumer_conf(broker.bootstrap, grp)
    members = []
    try:
        for name in ("A", "B", "C"):
            members.append(G.GroupMember(view, name, conf, topic_name))
        a, b, c = members
        snap = G.wait_for(lambda: view.covered(["A", "B", "C"], ALL6), 30,
                          lambda: "3 members to cover 6 partitions (now %r)" % view.snapshot())
        # The range assignor gives 6 partitions / 3 members = 2 each.
        assert sorted(len(p) for p in snap.values()) == [2, 2, 2], snap
        # librdkafka's own view agrees with the callbacks.
        G.wait_for(lambda: all(m.assignment() == view.snapshot()[m.name] for m in members), 10,
                   lambda: "consumer.assignment() to match on_assign: %r vs %r" % (
                       {m.name: sorted(m.assignment()) for m in members}, view.snapshot()))

        # The broker describes the same assignment.
        desc = G.describe_group_raw(broker.bootstrap, grp)
        assert (desc["error"], desc["state"], desc["protocol_type"]) == (0, "Stable", "consumer"), desc
        assert len(desc["members"]) == 3, desc
        by_client = {}
        for m in desc["members"]:
            parts = G.K.parse_consumer_assignment(m["assignment"])
            assert set(parts) <= {topic_name}, parts
            by_client[m["client_id"]] = frozenset(parts.get(topic_name, []))
        assert by_client == snap, "DescribeGroups assignment %r, consumers report %r" % (by_client, snap)

        # A leaves cleanly: B and C take over its partitions well within the session timeout.
        a_parts = snap["A"]
        t0 = time.monotonic()
        a.close()
        snap2 = G.wait_for(lambda: view.covered(["B", "C"], ALL6), SESSION_S + 5,
                           lambda: "B and C to cover 6 partitions after A left (now %r)" % view.snapshot())
        took = time.monotonic() - t0
        print("takeover after close: %.2fs" % took)
        assert took < SESSION_S, "takeover after a clean close took %.2fs (session timeout %.0fs)" % (took, SESSION_S)
        assert a_parts <= snap2["B"] | snap2["C"]
        assert sorted(len(p) for p in snap2.values()) == [3, 3], snap2
        for m in (b, c):
            assert not m.errors_snapshot(), (m.name, m.errors_snapshot())
    finally:
        G.close_all(members)


def _proc_first_offsets_allowed(events, partition):
    """Offsets a successor may start from on `partition` after the process died:
    its last acknowledged commit, or the commit it had in flight."""
    last_committed = 0
    in_flight = None
    key = str(partition)
    for ev in events:
        if ev["ev"] == "committing" and key in ev["offsets"]:
            in_flight = ev["offsets"][key]
        elif ev["ev"] == "committed" and key in ev["offsets"]:
            last_committed = ev["offsets"][key]
            in_flight = None
    return {last_committed} | ({in_flight} if in_flight is not None else set())


def test_killed_member_taken_over_after_session_timeout_at_least_once(broker, topic_name, procs):
    """A SIGKILLed member (no LeaveGroup) is removed when its session times out, not
    before; its partitions then resume from its last commit, so every record is
    processed at least once and only its uncommitted tail twice."""
    H.create_topic(broker.bootstrap, topic_name, 6)
    grp = group_id(topic_name)
    view = G.GroupView()
    conf = G.group_consumer_conf(broker.bootstrap, grp)
    members = []
    try:
        proc = G.ProcMember(procs, broker.bootstrap, grp, topic_name, "P", per_message_delay_ms=5, commit_every=7)
        members = [G.GroupMember(view, name, conf, topic_name) for name in ("A", "B")]

        def all_three():
            p = proc.assignment()
            if not p:
                return None
            snap = view.check_disjoint()
            if set(snap) != {"A", "B"} or not snap["A"] or not snap["B"]:
                return None
            parts = [snap["A"], snap["B"], p]
            if set().union(*parts) != ALL6 or sum(len(x) for x in parts) != 6:
                return None
            return dict(snap, P=p)

        snap = G.wait_for(all_three, 30, lambda: "A, B and the subprocess P to share 6 partitions "
                          "(A/B %r, P %r)\nP stderr: %s" % (view.snapshot(), proc.assignment(), proc.stderr_tail()))
        p_parts = snap["P"]

        # Records are produced only now, so no rebalance happens while they are consumed
        # until P dies.
        expected = G.produce_records(broker.bootstrap, topic_name, 1800, 6, salt=b"kill")
        def uncommitted_tail():
            # P handled 30+ records, and some since its last acknowledged commit (so that the
            # kill most likely leaves work to redo).
            evs = proc.snapshot()
            recs = [i for i, ev in enumerate(evs) if ev["ev"] == "rec"]
            last_commit = max([i for i, ev in enumerate(evs) if ev["ev"] in ("committing", "committed")],
                              default=-1)
            return len(recs) >= 30 and sum(1 for i in recs if i > last_commit) >= 2

        G.wait_for(uncommitted_tail, 30, lambda: "P to handle 30 records (%d)\nP stderr: %s" % (
            len(proc.records()), proc.stderr_tail()))
        t_kill = proc.kill9()
        handled_by_p = proc.records()
        events = proc.snapshot()
        assert {p for p, _, _, _ in handled_by_p} <= p_parts

        # Until the session times out, A and B keep exactly their partitions.
        snap2 = G.wait_for(lambda: view.covered(["A", "B"], ALL6), SESSION_S + 6,
                           lambda: "A and B to take over P's partitions %r (now %r)" % (sorted(p_parts),
                                                                                        view.snapshot()))
        took = time.monotonic() - t_kill
        print("takeover after SIGKILL: %.2fs (session timeout %.1fs)" % (took, SESSION_S))
        assert took >= SESSION_S - HEARTBEAT_S - 0.5, (
            "P's partitions were reassigned %.2fs after the kill, before its %.0fs session could expire"
            % (took, SESSION_S))
        assert took <= SESSION_S + 3.5, "takeover took %.2fs after the kill (session timeout %.0fs)" % (
            took, SESSION_S)
        assert p_parts <= snap2["A"] | snap2["B"]

        G.wait_for(lambda: {(p, o) for p, o, _, _ in members[0].handled() + members[1].handled() + handled_by_p}
                   >= set(expected), 60, "every record to be handled by the group")
        G.close_all(members)
        for m in members:
            assert not m.errors_snapshot(), (m.name, m.errors_snapshot())

        # At least once: every record, with the produced key and value.
        survivors = [(p, o, k, v, m.name) for m in members for p, o, k, v in m.handled()]
        all_handled = survivors + [(p, o, k, v, "P") for p, o, k, v in handled_by_p]
        by_pos = {}
        for p, o, k, v, who in all_handled:
            assert (k, v) == expected[(p, o)], "record (%d, %d) handled by %s differs from what was produced" % (
                p, o, who)
            by_pos.setdefault((p, o), []).append(who)
        assert set(by_pos) == set(expected)
        # Survivors never handle a record twice (they commit before each rebalance).
        surv_pos = [(p, o) for p, o, _, _, _ in survivors]
        assert len(surv_pos) == len(set(surv_pos)), "a survivor handled a record twice"
        # Only P's uncommitted tail was handled twice, and the successor resumed at P's commit.
        dup_count = 0
        for part in sorted(p_parts):
            offs = sorted(o for p, o, _, _, _ in survivors if p == part)
            assert offs, "no survivor consumed partition %d" % part
            start = offs[0]
            allowed = _proc_first_offsets_allowed(events, part)
            assert start in allowed, "partition %d: successor started at %d, P's commit was %r" % (
                part, start, sorted(allowed))
            assert offs == list(range(start, start + len(offs))), "partition %d: gaps after takeover" % part
            p_offs = sorted(o for p, o, _, _ in handled_by_p if p == part)
            assert p_offs == list(range(len(p_offs))), "P's offsets on %d not contiguous from 0" % part
            dups = [o for o in p_offs if o >= start]
            dup_count += len(dups)
        dup_positions = {pos for pos, who in by_pos.items() if len(who) > 1}
        assert len(dup_positions) == dup_count
        assert all(sorted(by_pos[pos]) in (["A", "P"], ["B", "P"]) for pos in dup_positions)
        print("P handled %d records before the kill; %d handled twice" % (len(handled_by_p), dup_count))
    finally:
        G.close_all(members)


def test_commit_after_processing_clean_shutdowns_exactly_once(broker, topic_name):
    """Members join and leave (close) while records are being consumed and
    produced; committing after handling each batch gives exactly-once."""
    H.create_topic(broker.bootstrap, topic_name, 6)
    grp = group_id(topic_name)
    view = G.GroupView()
    conf = G.group_consumer_conf(broker.bootstrap, grp)
    members = {}
    expected = {}
    next_i = [0]

    def produce(n):
        expected.update(G.produce_records(broker.bootstrap, topic_name, n, 6, salt=b"eo", start=next_i[0]))
        next_i[0] += n

    def total():
        return sum(m.count() for m in members.values())

    def start(name):
        members[name] = G.GroupMember(view, name, conf, topic_name, batch=20, per_message_delay=0.001)

    try:
        produce(1200)
        start("A")
        G.wait_for(lambda: total() >= 300, 30, "A to handle 300 records")
        start("B")
        G.wait_for(lambda: view.covered(["A", "B"], ALL6), 30, lambda: "A+B cover (%r)" % view.snapshot())
        produce(1200)
        G.wait_for(lambda: total() >= 1500, 30, "1500 records handled")
        start("C")
        G.wait_for(lambda: view.covered(["A", "B", "C"], ALL6), 30, lambda: "A+B+C cover (%r)" % view.snapshot())
        produce(1200)
        G.wait_for(lambda: total() >= 2700, 30, "2700 records handled")
        members["A"].close()
        G.wait_for(lambda: view.covered(["B", "C"], ALL6), 30, lambda: "B+C cover (%r)" % view.snapshot())
        produce(600)
        G.wait_for(lambda: total() >= len(expected), 60,
                   lambda: "all %d records handled (%d)" % (len(expected), total()))
        members["B"].close()
        members["C"].close()
        handled = []
        for m in members.values():
            assert not m.errors_snapshot(), (m.name, m.errors_snapshot())
            handled += m.handled()
        G.assert_exact_records(expected, handled, "group consumption with clean shutdowns")
        assert all(m.count() > 0 for m in members.values()), {n: m.count() for n, m in members.items()}
        # What the group committed is exactly the end of each partition.
        ends = {}
        for p, o in expected:
            ends[p] = max(ends.get(p, 0), o + 1)
        got = G.committed_raw(broker.bootstrap, grp, topic_name, range(6))
        assert {p: off for p, (off, _) in got.items()} == ends
        print("handled per member: %r; batch commits retried at revoke: %d" % (
            {n: m.count() for n, m in members.items()}, sum(len(m.commit_failures) for m in members.values())))
    finally:
        G.close_all(members.values())


def _committed_confluent(bootstrap, grp, topic, parts):
    c = Consumer(G.group_consumer_conf(bootstrap, grp))
    try:
        res = c.committed([TopicPartition(topic, p) for p in parts], timeout=15)
    finally:
        c.close()
    assert all(tp.error is None for tp in res), res
    return {tp.partition: tp.offset for tp in res}


def _kafka_python_consumer(bootstrap, grp):
    return KafkaConsumer(bootstrap_servers=bootstrap, group_id=grp, enable_auto_commit=False,
                         client_id="sluice-it-kp-meta", request_timeout_ms=15000, api_version_auto_timeout_ms=10000)


def test_restart_resumes_from_committed_offsets_and_metadata(broker, topic_name):
    H.create_topic(broker.bootstrap, topic_name, 3)
    grp = group_id(topic_name)
    meta_grp = grp + "-meta"
    first = {0: 40, 1: 55, 2: 70}
    expected = {}
    # Explicit partitions: partition p gets first[p] records.
    prod = Producer(H.producer_conf(broker.bootstrap))
    recs = [dict(key=H.key_for(i), value=H.value_for(i, b"restart"), partition=p)
            for p, n in first.items() for i in range(p * 1000, p * 1000 + n)]
    for r, d in zip(recs, H.produce_all(prod, topic_name, recs)):
        expected[(d.partition, d.offset)] = (r["key"], r["value"])
    assert H.counts_by_partition(expected) == first

    view = G.GroupView()
    conf = G.group_consumer_conf(broker.bootstrap, grp)
    a = G.GroupMember(view, "A", conf, topic_name)
    try:
        G.wait_for(lambda: a.committed == first, 30, lambda: "A to commit %r (has %r)" % (first, a.committed))
    finally:
        a.close()
    assert not a.errors_snapshot(), a.errors_snapshot()
    G.assert_exact_records(expected, a.handled(), "first consumer")
    assert _committed_confluent(broker.bootstrap, grp, topic_name, range(3)) == first

    # Metadata strings, committed by kafka-python with explicit metadata (librdkafka 1.7's
    # Python binding has no metadata field).
    metas = {0: "", 1: "checkpoint \u00fc \U0001F600 p1", 2: "m" * 4096}
    meta_offsets = {0: 3, 1: 17, 2: 70}
    kc = _kafka_python_consumer(broker.bootstrap, meta_grp)
    try:
        tps = [KTopicPartition(topic_name, p) for p in range(3)]
        kc.assign(tps)
        kc.commit({KTopicPartition(topic_name, p): OffsetAndMetadata(meta_offsets[p], metas[p]) for p in range(3)})
        for p in range(3):
            got = kc.committed(KTopicPartition(topic_name, p), metadata=True)
            assert (got.offset, got.metadata) == (meta_offsets[p], metas[p]), (p, got)
    finally:
        kc.close()

    # More records, then a clean restart on the same data directory.
    second = {0: 10, 1: 11, 2: 12}
    recs2 = [dict(key=H.key_for(i), value=H.value_for(i, b"restart2"), partition=p)
             for p, n in second.items() for i in range(p * 1000, p * 1000 + n)]
    expected2 = {}
    for r, d in zip(recs2, H.produce_all(prod, topic_name, recs2)):
        expected2[(d.partition, d.offset)] = (r["key"], r["value"])
    assert sorted(expected2) == sorted((p, first[p] + i) for p in range(3) for i in range(second[p]))
    del prod  # destroyed before the restart, so it does not log the broker going away
    broker.restart()

    assert _committed_confluent(broker.bootstrap, grp, topic_name, range(3)) == first
    got = G.committed_raw(broker.bootstrap, meta_grp, topic_name, range(3))
    assert got == {p: (meta_offsets[p], metas[p]) for p in range(3)}, got
    kc = _kafka_python_consumer(broker.bootstrap, meta_grp)
    try:
        for p in range(3):
            got = kc.committed(KTopicPartition(topic_name, p), metadata=True)
            assert (got.offset, got.metadata) == (meta_offsets[p], metas[p]), (p, got)
    finally:
        kc.close()
    listed = G.list_groups_raw(broker.bootstrap)
    assert listed.get(grp, {}).get("state") == "Empty", listed.get(grp)
    assert listed.get(meta_grp, {}).get("state") == "Empty", listed.get(meta_grp)

    # A new member of the group resumes exactly where the commits were.
    view = G.GroupView()
    b = G.GroupMember(view, "B", G.group_consumer_conf(broker.bootstrap, grp), topic_name)
    try:
        G.wait_for(lambda: b.count() >= len(expected2), 30,
                   lambda: "B to consume the %d new records (has %d)" % (len(expected2), b.count()))
        ends = {p: first[p] + second[p] for p in range(3)}
        G.wait_for(lambda: b.committed == ends, 15, lambda: "B to commit %r (has %r)" % (ends, b.committed))
    finally:
        b.close()
    assert not b.errors_snapshot(), b.errors_snapshot()
    handled = b.handled()
    firsts = {}
    for p, o, _, _ in handled:
        firsts.setdefault(p, o)
    assert firsts == first, "after the restart the group resumed at %r, committed %r" % (firsts, first)
    G.assert_exact_records(expected2, handled, "consumer after restart")


def test_static_leader_restart_keeps_the_group_stable(broker, topic_name):
    """librdkafka members with group.instance.id: the leader closes (a static member sends
    no LeaveGroup) and a new process with the same instance id takes its place. The
    group keeps its generation and assignment: the follower sees no revoke or assign."""
    H.create_topic(broker.bootstrap, topic_name, 6)
    grp = group_id(topic_name)
    view = G.GroupView()
    members = []
    try:
        conf_a = G.group_consumer_conf(broker.bootstrap, grp, **{"group.instance.id": "inst-A"})
        conf_b = G.group_consumer_conf(broker.bootstrap, grp, **{"group.instance.id": "inst-B"})
        # A first, alone: it is the leader (the longest-standing member) from then on.
        members.append(G.GroupMember(view, "A", conf_a, topic_name))
        G.wait_for(lambda: view.covered(["A"], ALL6), 30, lambda: "A to own 6 partitions (%r)" % view.snapshot())
        members.append(G.GroupMember(view, "B", conf_b, topic_name))
        snap = G.wait_for(lambda: view.covered(["A", "B"], ALL6), 30,
                          lambda: "A and B to cover 6 partitions (%r)" % view.snapshot())
        before = G.describe_group_raw(broker.bootstrap, grp)
        assert before["state"] == "Stable", before
        b_events = [e for e in view.events if e[1] == "B"]

        members[0].close()
        members.append(G.GroupMember(view, "A2", conf_a, topic_name))
        G.wait_for(lambda: view.snapshot().get("A2") == snap["A"], 30,
                   lambda: "A2 to take over A's partitions %r (%r)" % (sorted(snap["A"]), view.snapshot()))
        # Longer than a rebalance would take to show up at B (heartbeats every 0.5 s).
        time.sleep(4 * HEARTBEAT_S + 1)
        assert [e for e in view.events if e[1] == "B"] == b_events, view.events
        assert view.snapshot()["B"] == snap["B"]
        after = G.describe_group_raw(broker.bootstrap, grp)
        assert after["state"] == "Stable", after
        assert len(after["members"]) == 2, after
        assigned = {m["client_id"]: G.K.parse_consumer_assignment(m["assignment"]).get(topic_name, [])
                    for m in after["members"]}
        assert {k: frozenset(v) for k, v in assigned.items()} == {"A2": snap["A"], "B": snap["B"]}, after
        for m in members[1:]:
            assert not m.errors_snapshot(), (m.name, m.errors_snapshot())
    finally:
        G.close_all(members)
