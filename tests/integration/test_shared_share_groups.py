"""Share groups (KIP-932) in shared mode (docs/shared-mode.md#share-groups): two brokers of
scripts/cluster over one PostgreSQL and one S3 server, the Java client's
KafkaShareConsumer (kafka-clients 4.3.1, tests/jvm's ShareMember) and librdkafka's
producer.

- two share consumers bootstrapped at different brokers share a topic produced through
  another client: every record is accepted exactly once and no acknowledgement fails; a
  released record comes back with its delivery count raised, a rejected one never;
- a ShareFetch whose share-partition transaction waits on the database (the table
  locked, as on a database slow to answer) holds none of the broker's other connections:
  ApiVersions on another connection is answered at once meanwhile, and the fetch acquires
  once the lock goes; the same for the coordinator's work: a leaving member's release,
  DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups
  of a share group and system.share_groups, each answered with its effect once the lock
  goes;
- kill -9 of the broker serving a partition while a consumer (also killed) holds its
  records: the other consumer goes on at the survivor, gets the held records again once
  their acquisition lock lapsed (delivery count 2, not before the lock's deadline) and
  the records produced after the kill.
"""

import collections
import select
import threading
import time

import psycopg2
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import java_client_helpers as JC
import kproto as K
import kproto_flex as F
import sluice_helpers as H
from cluster_helpers import catalog, cluster_cmd, kafka, running_cluster, state, wait_topic_known
from sql_helpers import http_query
from test_differential_share_groups import FETCH, FETCH_REQ, FETCH_RESP, HB_REQ, HEARTBEAT, ShareMember
from test_share_groups import accepted, commit_failures, deliveries, share_member
from test_share_groups_admin import (ALTER_REQ, ALTER_RESP, DELETE_REQ, DELETE_RESP, DESCRIBE_REQ,
                                     DESCRIBE_RESP)

LEASE_MS = 3000
LOCK_MS = 4000


def share_cluster(tmp_path_factory, lock_ms):
    """A generator for a module fixture: two brokers of scripts/cluster whose share groups
    start at the earliest offset and lock records for `lock_ms`."""
    d = tmp_path_factory.mktemp("cluster")
    yield from running_cluster(d, "--brokers", 2, "--lease-ms", LEASE_MS, "--fast-s3", "--",
                               "--share-auto-offset-reset", "earliest",
                               "--group-share-record-lock-duration-ms", str(lock_ms),
                               "--group-share-heartbeat-interval-ms", "1000")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from share_cluster(tmp_path_factory, LOCK_MS)


def create_topic(d, name, partitions):
    admin = AdminClient({"bootstrap.servers": kafka(d, 0)})
    admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=30)[name].result(timeout=30)
    wait_topic_known(d, name)


def produce(bootstrap, topic, values, partitions):
    p = Producer(H.producer_conf(bootstrap))
    for i, v in enumerate(values):
        p.produce(topic, value=v.encode(), partition=i % partitions)
    assert p.flush(30) == 0
    return list(values)


def leader(d, topic, partition, at=0):
    md = AdminClient({"bootstrap.servers": kafka(d, at)}).list_topics(topic, timeout=10)
    return md.topics[topic].partitions[partition].leader


def test_two_consumers_at_two_brokers_accept_every_record_once(cluster, procs):
    topic = "share-spread"
    create_topic(cluster, topic, 2)
    want = produce(kafka(cluster, 0), topic, ["v-%03d" % i for i in range(80)], 2)
    # ShareMember releases "release-once..." at its first delivery and rejects "reject...".
    produce(kafka(cluster, 1), topic, ["release-once-1", "reject-1"], 1)
    members = [share_member(procs, kafka(cluster, i), "share-spread-g", topic, n,
                            "max.poll.records=5", "sluice.delay.ms=10")
               for i, n in ((0, "A"), (1, "B"))]
    JC.wait_for("every record to be accepted",
                lambda: set(accepted(members)) >= set(want) | {"release-once-1"}, timeout=60)
    counts = accepted(members)
    assert all(counts[v] == 1 for v in want), [v for v in want if counts[v] != 1]
    assert set(counts) == set(want) | {"release-once-1"}, counts
    by_value = collections.defaultdict(list)
    for (v, count, ack, _) in deliveries(members):
        by_value[v].append((count, ack))
    assert all(by_value[v] == [(1, "ACCEPT")] for v in want), "no redelivery was needed"
    # A released record comes back with its delivery count raised; a rejected one never.
    # Two members at two brokers: their logs interleave in any order, the counts do not.
    assert sorted(by_value["release-once-1"]) == [(1, "RELEASE"), (2, "ACCEPT")], by_value["release-once-1"]
    assert by_value["reject-1"] == [(1, "REJECT")], by_value["reject-1"]
    assert commit_failures(members) == []
    by_member = collections.Counter(m for (_, _, _, m) in deliveries(members))
    assert set(by_member) == {"A", "B"}, by_member
    for m in members:
        m.stop()


# ShareGroupHeartbeat v1's answer up to a null assignment (-1: a leave's answer has none).
HB_RESP = [("throttle_time_ms", "i32"), ("error_code", "i16"), ("error_message", "str"), ("member_id", "str"),
           ("member_epoch", "i32"), ("heartbeat_interval_ms", "i32"), ("assignment", "i8")]
DELETE_GROUPS_REQ = [("groups_names", ["str"])]
DELETE_GROUPS_RESP = [("throttle_time_ms", "i32"), ("results", [[("group_id", "str"), ("error_code", "i16")]])]


class Raw:
    """One flexible request sent on `conn`, not yet answered (`ready`), its answer decoded by `result`."""

    def __init__(self, conn, api, version, req_fields, resp_fields, req):
        self.conn, self.resp_fields = conn, resp_fields
        self.corr = conn.send_request(api, version, F.encode(req_fields, req), header_version=2)

    def ready(self):
        return bool(select.select([self.conn.sock], [], [], 0)[0])

    def result(self):
        return F.decode(self.conn.recv_response(self.corr, 1, timeout=30), self.resp_fields)


class InThread:
    """A call made on a thread of its own (a SQL query over HTTP)."""

    def __init__(self, fn):
        self.out = []
        self.thread = threading.Thread(target=lambda: self.out.append(fn()), daemon=True)
        self.thread.start()

    def ready(self):
        return not self.thread.is_alive()

    def result(self):
        self.thread.join(30)
        assert self.out, "the call did not return"
        return self.out[0]


def while_locked(cluster, at, send):
    """`send(conn)` sends one request (a Raw or InThread) on a fresh connection to broker
    `at` while sluice_share_partitions is locked (ACCESS EXCLUSIVE: every read and change of
    a share-partition waits, as on a database slow to answer); meanwhile ApiVersions goes 10
    times over another connection. Returns (whether the request was still waiting, the
    ApiVersions round trips in seconds, its answer once the lock went)."""
    # The probe gives up after 2 s: an event loop waiting for the lock never answers it.
    with K.Conn(at) as conn, K.Conn(at, timeout=2) as probe:
        db = psycopg2.connect(state(cluster)["postgres"])
        try:
            db.cursor().execute("LOCK TABLE sluice_share_partitions IN ACCESS EXCLUSIVE MODE")
            pending = send(conn)
            time.sleep(0.3)  # the request reaches the broker and waits on the lock
            rtts = []
            for _ in range(10):
                start = time.monotonic()
                K.api_versions_v0(probe)
                rtts.append(time.monotonic() - start)
                time.sleep(0.05)
            waiting = not pending.ready()
        finally:
            db.close()  # the lock goes
        return waiting, rtts, pending.result()


def coordinator_of(d, group):
    with K.Conn(kafka(d, 0)) as c:
        (coordinator,) = K.find_coordinator(c, 4, [group])
    return kafka(d, coordinator["node_id"])


def test_share_fetch_waiting_on_the_database_holds_no_other_connection(cluster):
    topic, group = "share-stall", "share-stall-g"
    create_topic(cluster, topic, 1)
    produce(kafka(cluster, 0), topic, ["s-%d" % i for i in range(3)], 1)
    at = coordinator_of(cluster, group)
    with K.Conn(at) as conn:
        member = ShareMember(conn, group, "stall-member", topic)
        assert member.join()[1]["assignment"] == {topic: [0]}
    # Every ShareFetch reads its share-partition's row FOR UPDATE: it waits on the lock.
    waiting, rtts, answer = while_locked(cluster, at, lambda conn: Raw(conn, FETCH, 1, FETCH_REQ, FETCH_RESP, dict(
        group_id=group, member_id=member.member_id, share_session_epoch=0, max_wait_ms=0,
        min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100,
        topics=[dict(topic_id=member.topic_id, partitions=[dict(partition_index=0, acknowledgement_batches=[])])],
        forgotten_topics_data=[])))
    assert waiting, "the ShareFetch was answered while its share-partition was locked"
    # Before the ShareFetch's work left the event loop, each ApiVersions waited for the lock.
    assert max(rtts) < 0.5, rtts
    assert answer["error_code"] == 0, answer
    (part,) = answer["responses"][0]["partitions"]
    got = {o for a in part["acquired_records"] for o in range(a["first_offset"], a["last_offset"] + 1)}
    assert got == {0, 1, 2}, part


def test_share_coordinator_work_waiting_on_the_database_holds_no_other_connection(cluster):
    """Each share-group request of the coordinator that reads or changes share-partitions
    waits for the lock off the event loop, and is answered with its effect after it."""
    topic, group = "share-stall-coord", "share-stall-coord-g"
    create_topic(cluster, topic, 1)
    produce(kafka(cluster, 0), topic, ["c-%d" % i for i in range(4)], 1)
    at = coordinator_of(cluster, group)
    http = next(b["http"] for b in state(cluster)["brokers"] if b["kafka"] == at)
    with K.Conn(at) as conn:
        member = ShareMember(conn, group, "coord-member", topic)
        assert member.join()[1]["assignment"] == {topic: [0]}
        (part,) = member.fetch()["responses"][0]["partitions"]
    assert [(a["first_offset"], a["last_offset"], a["delivery_count"]) for a in part["acquired_records"]] == \
        [(0, 3, 1)], part

    def held():
        return catalog(cluster, "SELECT first_offset, last_offset, member_id FROM sluice_share_acquired "
                            "WHERE group_id = %s", (group,))

    def check(name, send):
        waiting, rtts, answer = while_locked(cluster, at, send)
        assert waiting, "%s was answered while the share-partitions were locked" % name
        assert max(rtts) < 0.5, (name, rtts)
        return answer

    assert held() == [(0, 3, "coord-member")]
    # The member leaves: answered once its records are released.
    left = check("the leave", lambda conn: Raw(conn, HEARTBEAT, 1, HB_REQ, HB_RESP, dict(
        group_id=group, member_id=member.member_id, member_epoch=-1, rack_id=None,
        subscribed_topic_names=None)))
    assert (left["error_code"], left["member_epoch"]) == (0, -1), left
    assert held() == []

    def offsets_of(answer):
        (g,) = answer["groups"]
        assert g["error_code"] == 0, g
        return [(p["partition_index"], p["start_offset"], p["lag"]) for t in g["topics"] for p in t["partitions"]]

    described = check("DescribeShareGroupOffsets", lambda conn: Raw(conn, 90, 1, DESCRIBE_REQ, DESCRIBE_RESP, dict(
        groups=[dict(group_id=group, topics=None)])))
    assert offsets_of(described) == [(0, 0, 4)], described  # released: available again
    altered = check("AlterShareGroupOffsets", lambda conn: Raw(conn, 91, 0, ALTER_REQ, ALTER_RESP, dict(
        group_id=group, topics=[dict(topic_name=topic, partitions=[dict(partition_index=0, start_offset=3)])])))
    assert altered["error_code"] == 0 and altered["responses"][0]["partitions"][0]["error_code"] == 0, altered
    assert catalog(cluster, "SELECT start_offset, end_offset FROM sluice_share_partitions WHERE group_id = %s",
                        (group,)) == [(3, 3)]
    rows = check("system.share_groups", lambda conn: InThread(lambda: http_query(
        http, "SELECT topic, partition, start_offset, members FROM system.share_groups "
              "WHERE group_id = '%s'" % group)))
    assert rows["rows"] == [[topic, 0, 3, 0]], rows
    deleted = check("DeleteShareGroupOffsets", lambda conn: Raw(conn, 92, 0, DELETE_REQ, DELETE_RESP, dict(
        group_id=group, topics=[dict(topic_name=topic)])))
    assert deleted["error_code"] == 0 and deleted["responses"][0]["error_code"] == 0, deleted
    assert catalog(cluster, "SELECT start_offset FROM sluice_share_partitions WHERE group_id = %s", (group,)) == []
    # A share group again (Alter creates it), then deleted whole.
    with K.Conn(at) as conn:
        again = F.call(conn, 91, 0, ALTER_REQ, ALTER_RESP, dict(group_id=group, topics=[dict(
            topic_name=topic, partitions=[dict(partition_index=0, start_offset=1)])]))
    assert again["responses"][0]["partitions"][0]["error_code"] == 0, again
    gone = check("DeleteGroups", lambda conn: Raw(conn, K.DELETE_GROUPS, 2, DELETE_GROUPS_REQ,
                                                  DELETE_GROUPS_RESP, dict(groups_names=[group])))
    assert [(g["group_id"], g["error_code"]) for g in gone["results"]] == [(group, 0)], gone
    assert catalog(cluster, "SELECT start_offset FROM sluice_share_partitions WHERE group_id = %s", (group,)) == []


def test_broker_kill_moves_the_partition_and_lapsed_locks_deliver_again(cluster, procs):
    topic = "share-kill"
    create_topic(cluster, topic, 1)
    dead = leader(cluster, topic, 0)
    alive = 1 - dead
    group = "share-kill-g"
    first = produce(kafka(cluster, alive), topic, ["held-%d" % i for i in range(10)], 1)
    holder = share_member(procs, kafka(cluster, alive), group, topic, "H", "sluice.hold=true")
    JC.wait_for("H to hold records", lambda: holder.snapshot("holding"), timeout=60)
    held = {e["value"] for e in holder.snapshot("record")}
    assert held, holder.describe()
    other = share_member(procs, kafka(cluster, alive), group, topic, "B")
    time.sleep(1)
    assert not held & set(accepted([other])), "locked records went to B before their lock lapsed"
    # The consumer holding the records and the broker that served them die together.
    H.kill_group(holder.proc)
    cluster_cmd("kill", cluster, dead)
    second = produce(kafka(cluster, alive), topic, ["after-%d" % i for i in range(5)], 1)
    want = first + second
    JC.wait_for("B to get every record at the survivor", lambda: set(accepted([other])) >= set(want),
                timeout=60)
    again = {v: c for (v, c, _, _) in deliveries([other])}
    assert all(again[v] == 2 for v in held), ("held records are a second delivery", again, held)
    assert accepted([other]) == collections.Counter(want), accepted([other])
    assert leader(cluster, topic, 0, at=alive) == alive
    other.stop()
