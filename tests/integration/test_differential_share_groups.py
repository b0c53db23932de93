"""Apache Kafka 4.3.1 as the oracle for share groups (KIP-932): the same sequence of
ShareGroupHeartbeat, ShareFetch and ShareAcknowledge requests, sent raw to Kafka and to
Sluice (differential_helpers' fixtures), must get the same answers: the heartbeat's
epochs, interval, assignment and refusals, the acquired ranges and delivery counts of
each fetch, the outcome of each acknowledgement (accept, release, reject) and what is
delivered again, and the errors of sessions and acknowledgements that are wrong.

Compared field by field except what must differ: topic ids (each broker's own;
assignments are compared by topic name), member ids (chosen by the test), the leader's
id and the node endpoints (Kafka's node 1, Sluice's 0; hosts and ports), and the record
bytes (each broker's batch; the acquired offsets say what was handed out). Both groups
start at the earliest offset (group config share.auto.offset.reset=earliest): Kafka
sets up a share-partition asynchronously, so each fetch that acquires is repeated
until it does (bounded), and the first answer that acquires is compared.
"""

import time

import kproto as K
import kproto_flex as F
from differential_helpers import (  # noqa: F401 (kafka, sluice, both: the module's fixtures)
    ask, assert_same, both, create, fresh, kafka, produce, records, sluice)

HEARTBEAT, FETCH, ACK = 76, 78, 79
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS = 16, 14
ACCEPT, RELEASE, REJECT = 1, 2, 3
INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH = 42, 25, 110
INVALID_RECORD_STATE, SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH = 121, 122, 123

HB_REQ = [("group_id", "str"), ("member_id", "str"), ("member_epoch", "i32"), ("rack_id", "str"),
          ("subscribed_topic_names", ["str"])]
TOPIC_PARTITIONS = [("topic_id", "uuid"), ("partitions", ["i32"])]
ACK_BATCH = [("first_offset", "i64"), ("last_offset", "i64"), ("acknowledge_types", ["i8"])]
FETCH_REQ = [("group_id", "str"), ("member_id", "str"), ("share_session_epoch", "i32"), ("max_wait_ms", "i32"),
             ("min_bytes", "i32"), ("max_bytes", "i32"), ("max_records", "i32"), ("batch_size", "i32"),
             ("topics", [[("topic_id", "uuid"), ("partitions", [[("partition_index", "i32"),
                                                                 ("acknowledgement_batches", [ACK_BATCH])]])]]),
             ("forgotten_topics_data", [TOPIC_PARTITIONS])]
LEADER = [("leader_id", "i32"), ("leader_epoch", "i32")]
NODES = [("node_endpoints", [[("node_id", "i32"), ("host", "str"), ("port", "i32"), ("rack", "str")]])]
FETCH_RESP = [("throttle_time_ms", "i32"), ("error_code", "i16"), ("error_message", "str"),
              ("acquisition_lock_timeout_ms", "i32"),
              ("responses", [[("topic_id", "uuid"), ("partitions", [[
                  ("partition_index", "i32"), ("error_code", "i16"), ("error_message", "str"),
                  ("acknowledge_error_code", "i16"), ("acknowledge_error_message", "str"), ("current_leader", LEADER),
                  ("records", "bytes"),
                  ("acquired_records", [[("first_offset", "i64"), ("last_offset", "i64"),
                                         ("delivery_count", "i16")]])]])]])] + NODES
ACK_REQ = [("group_id", "str"), ("member_id", "str"), ("share_session_epoch", "i32"),
           ("topics", [[("topic_id", "uuid"), ("partitions", [[("partition_index", "i32"),
                                                               ("acknowledgement_batches", [ACK_BATCH])]])]])]
ACK_RESP = [("throttle_time_ms", "i32"), ("error_code", "i16"), ("error_message", "str"),
            ("responses", [[("topic_id", "uuid"), ("partitions", [[
                ("partition_index", "i32"), ("error_code", "i16"), ("error_message", "str"),
                ("current_leader", LEADER)]])]])] + NODES

GROUP_CONFIG_REQ = [("resources", [[("resource_type", "i8"), ("resource_name", "str"),
                                    ("configs", [[("name", "str"), ("config_operation", "i8"), ("value", "str")]])]]),
                    ("validate_only", "bool")]
GROUP_CONFIG_RESP = [("throttle_time_ms", "i32"), ("responses", [[("error_code", "i16"), ("error_message", "str"),
                                                                   ("resource_type", "i8"), ("resource_name", "str")]])]


def coordinator_ready(conn, group):
    """Kafka answers NOT_COORDINATOR until its internal topics for the group exist, which
    FindCoordinator has it create: asked until the group has a coordinator."""
    for _ in range(300):
        (c,) = K.find_coordinator(conn, 4, [group])
        if c["error"] == 0:
            return
        time.sleep(0.1)
    raise AssertionError("no coordinator for %s: %r" % (group, c))


def earliest(conn, group):
    r = F.call(conn, 44, 1, GROUP_CONFIG_REQ, GROUP_CONFIG_RESP, dict(
        resources=[dict(resource_type=32, resource_name=group,
                        configs=[dict(name="share.auto.offset.reset", config_operation=0, value="earliest")])],
        validate_only=False))
    assert r["responses"][0]["error_code"] == 0, r


class ShareMember:
    """One share consumer of one broker, raw: its heartbeats and its share session."""

    def __init__(self, conn, group, member_id, topic):
        self.conn, self.group, self.member_id, self.topic = conn, group, member_id, topic
        self.topic_id = F.metadata(conn, [topic])["topics"][0]["topic_id"]
        self.epoch = 0
        self.session_epoch = 0
        coordinator_ready(conn, group)

    def beat(self, epoch=None, topics=None, group=None, member_id=None):
        req = dict(group_id=self.group if group is None else group,
                   member_id=self.member_id if member_id is None else member_id,
                   member_epoch=self.epoch if epoch is None else epoch, rack_id=None,
                   subscribed_topic_names=topics)
        r = self.conn.roundtrip(HEARTBEAT, 1, F.encode(HB_REQ, req), header_version=2,
                                response_header_version=1, timeout=30)
        out = dict(throttle_time_ms=r.i32(), error_code=r.i16(), error_message=r.compact_string(),
                   member_id=r.compact_string(), member_epoch=r.i32(), heartbeat_interval_ms=r.i32())
        out["assignment"] = None
        if r.i8() >= 0:
            a = F.decode(r, [("topic_partitions", [TOPIC_PARTITIONS])])
            ids = {self.topic_id: self.topic}
            out["assignment"] = {ids.get(t["topic_id"], "?"): sorted(t["partitions"]) for t in a["topic_partitions"]}
        F.decode(r, [])
        assert not r.remaining()
        if out["error_code"] == 0 and out["member_epoch"] >= 0:
            self.epoch = out["member_epoch"]
        return out

    def join(self):
        """Heartbeats until the partition is assigned: the answers' (error, epoch, interval, assignment)."""
        first = self.beat(epoch=0, topics=[self.topic])
        for _ in range(300):  # Kafka while it loads the group's coordinator: retriable
            if first["error_code"] not in (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS):
                break
            time.sleep(0.1)
            first = self.beat(epoch=0, topics=[self.topic])
        got = first
        for _ in range(100):
            if got["error_code"] or got["assignment"]:
                break
            time.sleep(0.1)
            got = self.beat()
        return first, got

    def _acks(self, acks):
        return [dict(first_offset=f, last_offset=l, acknowledge_types=t) for f, l, t in acks]

    def fetch(self, acks=(), epoch=None, max_records=100, forget=False):
        epoch = self.session_epoch if epoch is None else epoch
        part = dict(partition_index=0, acknowledgement_batches=self._acks(acks))
        r = F.call(self.conn, FETCH, 1, FETCH_REQ, FETCH_RESP, dict(
            group_id=self.group, member_id=self.member_id, share_session_epoch=epoch, max_wait_ms=0,
            min_bytes=1, max_bytes=1 << 20, max_records=max_records, batch_size=max_records,
            topics=[] if forget else [dict(topic_id=self.topic_id, partitions=[part])],
            forgotten_topics_data=[dict(topic_id=self.topic_id, partitions=[0])] if forget else []))
        if r["error_code"] == 0:
            self.session_epoch = 1 if epoch == 0 else (0 if epoch == -1 else epoch + 1)
        return shape(r)

    def acquire(self, acks=(), tries=100):
        """Fetches (acknowledging first) until records are acquired: the first answer that has some."""
        got = self.fetch(acks)
        for _ in range(tries):
            if got["error_code"] or any(p["acquired_records"] for t in got["responses"] for p in t["partitions"]):
                return got
            time.sleep(0.1)
            got = self.fetch()
        return got

    def acknowledge(self, acks, epoch=None):
        epoch = self.session_epoch if epoch is None else epoch
        r = F.call(self.conn, ACK, 1, ACK_REQ, ACK_RESP, dict(
            group_id=self.group, member_id=self.member_id, share_session_epoch=epoch,
            topics=[dict(topic_id=self.topic_id, partitions=[dict(partition_index=0,
                                                                  acknowledgement_batches=self._acks(acks))])]))
        if r["error_code"] == 0:
            self.session_epoch = 0 if epoch == -1 else epoch + 1
        return shape(r)


def shape(answer):
    """What is compared of a ShareFetch / ShareAcknowledge answer."""
    answer.pop("node_endpoints", None)
    for t in answer.get("responses") or []:
        for p in t["partitions"]:
            p.pop("current_leader", None)  # Kafka's node 1, Sluice's 0
            if "records" in p:
                p["records"] = p["records"] is not None and len(p["records"]) > 0
    return answer


def test_heartbeats_answer_as_kafka(both):
    topic = create(both, fresh("sh"), partitions=2)

    def run(conn):
        g = fresh("shg")
        a = ShareMember(conn, g, "a-" + g, topic)
        first, settled = a.join()
        out = dict(first=(first["error_code"], first["member_id"] is not None, first["heartbeat_interval_ms"]),
                   settled=(settled["error_code"], settled["assignment"]))
        b = ShareMember(conn, g, "b-" + g, topic)
        _, b_settled = b.join()
        out["b"] = (b_settled["error_code"], b_settled["assignment"])
        out["unchanged"] = b.beat()["assignment"]  # an unchanged assignment is not sent again
        out["fenced"] = a.beat(epoch=a.epoch + 7)["error_code"]
        out["unknown_member"] = a.beat(epoch=1, member_id="nobody-" + g)["error_code"]
        out["join_without_topics"] = ShareMember(conn, g, "c-" + g, topic).beat(epoch=0, topics=None)["error_code"]
        out["empty_member_id"] = a.beat(epoch=0, topics=[topic], member_id="")["error_code"]
        out["bad_epoch"] = a.beat(epoch=-3)["error_code"]
        left = b.beat(epoch=-1)
        out["b_leaves"] = (left["error_code"], left["member_epoch"])
        return out
    k, s = ask(both, run)
    # Which of the two partitions each member gets is each broker's own choice (Kafka's
    # simple assignor does not follow the member ids): compared for shape.
    kb, sb = k.pop("b"), s.pop("b")
    assert kb[0] == sb[0] == 0 and len(kb[1][topic]) == len(sb[1][topic]) == 1, (kb, sb)
    got = assert_same(k, s, "share group heartbeats")
    assert got["settled"] == (0, {topic: [0, 1]}), got
    assert got["fenced"] == FENCED_MEMBER_EPOCH and got["unknown_member"] == UNKNOWN_MEMBER_ID, got
    assert got["b_leaves"] == (0, -1), got


def test_fetch_acknowledge_and_redelivery_answer_as_kafka(both):
    topic = create(both, fresh("sf"), partitions=1)
    produce(both, topic, [K.encode_batch(records(4)), K.encode_batch(records(3))])

    def run(conn):
        g = fresh("sfg")
        earliest(conn, g)
        m = ShareMember(conn, g, "m-" + g, topic)
        _, joined = m.join()
        out = {"joined": (joined["error_code"], joined["assignment"])}
        out["first"] = m.acquire()
        # Offsets 0-3 (the first batch) and 4-6 (the second): accept, release, reject.
        out["ack"] = m.acknowledge([(0, 1, [ACCEPT]), (2, 3, [RELEASE]), (4, 4, [REJECT]), (5, 6, [ACCEPT])])
        out["again"] = m.acquire()  # the released records, a second delivery
        out["release_again"] = m.acquire(acks=[(2, 3, [RELEASE])])
        out["ack_twice"] = m.acknowledge([(0, 0, [ACCEPT])])  # already acknowledged
        out["bad_type"] = m.acknowledge([(2, 3, [9])])
        out["wrong_epoch"] = m.acknowledge([(2, 3, [ACCEPT])], epoch=m.session_epoch + 5)
        out["accept"] = m.acknowledge([(2, 3, [ACCEPT])])
        out["nothing_left"] = m.fetch()
        out["close"] = m.fetch(epoch=-1, forget=True)
        out["after_close"] = m.fetch(epoch=3)
        return out
    k, s = ask(both, run)
    # Set aside (docs/compatibility.md): acknowledging again a record already accepted,
    # while its batch is still in flight, Kafka answers NONE and Sluice
    # INVALID_RECORD_STATE.
    k_twice = k.pop("ack_twice")["responses"][0]["partitions"][0]["error_code"]
    s_twice = s.pop("ack_twice")["responses"][0]["partitions"][0]["error_code"]
    assert (k_twice, s_twice) == (0, INVALID_RECORD_STATE), (k_twice, s_twice)
    got = assert_same(k, s, "ShareFetch and ShareAcknowledge")
    acquired = [p["acquired_records"] for t in got["first"]["responses"] for p in t["partitions"]]
    assert acquired == [[{"first_offset": 0, "last_offset": 6, "delivery_count": 1}]] or \
        acquired == [[{"first_offset": 0, "last_offset": 3, "delivery_count": 1},
                      {"first_offset": 4, "last_offset": 6, "delivery_count": 1}]], acquired
    again = [p["acquired_records"] for t in got["again"]["responses"] for p in t["partitions"]]
    assert again == [[{"first_offset": 2, "last_offset": 3, "delivery_count": 2}]], again
