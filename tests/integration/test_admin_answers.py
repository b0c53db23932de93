"""Admin answers that clients decode field by field: authorized operations in Metadata
v8+ and DescribeCluster (issue 21, item 3).

kafka-python turns authorized_operations into a set of its ACLOperation enum, one
member per set bit (KafkaAdminClient's list_topics, describe_topics, describe_cluster
and delete_records in the versions that ask for them, 2.1 and later). Debian's
kafka-python 2.0.2 still asks for Metadata v5, which has no such field, so these tests
send Metadata v8 and DescribeCluster raw and decode the bits with kafka-python 2.0.2's
own ACLOperation: an answer of INT32_MIN to a request that asked (bit 31) is exactly
its "31 is not a valid ACLOperation".
"""

import pytest
from kafka import KafkaAdminClient
from kafka.admin.acl_resource import ACLOperation

import kproto as K
import security_helpers as S

INT32_MIN = -(2 ** 31)
ALL_TOPIC_OPS = {ACLOperation.READ, ACLOperation.WRITE, ACLOperation.CREATE, ACLOperation.DELETE,
                 ACLOperation.ALTER, ACLOperation.DESCRIBE, ACLOperation.DESCRIBE_CONFIGS,
                 ACLOperation.ALTER_CONFIGS}
# Kafka's cluster operations.
ALL_CLUSTER_OPS = {ACLOperation.CREATE, ACLOperation.ALTER, ACLOperation.DESCRIBE,
                   ACLOperation.CLUSTER_ACTION, ACLOperation.DESCRIBE_CONFIGS, ACLOperation.ALTER_CONFIGS,
                   ACLOperation.IDEMPOTENT_WRITE}


def operations(bits):
    """kafka-python's decoding of an authorized_operations field."""
    assert bits != INT32_MIN, "authorized operations not answered although asked for"
    return {ACLOperation(i) for i in range(32) if bits & (1 << i)}


def metadata_v8(conn, topics, topic_ops=True, cluster_ops=True):
    body = (K.i32(-1) if topics is None else K.array(topics, K.string)) + K.i8(0)
    body += K.i8(1 if cluster_ops else 0) + K.i8(1 if topic_ops else 0)
    r = conn.roundtrip(K.METADATA, 8, body)
    r.i32()  # throttle

    def broker(x):
        return dict(node_id=x.i32(), host=x.string(), port=x.i32(), rack=x.string())

    brokers = r.array(broker)
    cluster_id = r.string()
    r.i32()  # controller

    def partition(x):
        d = dict(error=x.i16(), partition=x.i32(), leader=x.i32(), leader_epoch=x.i32())
        d["replicas"] = x.array(lambda y: y.i32())
        d["isr"] = x.array(lambda y: y.i32())
        x.array(lambda y: y.i32())  # offline replicas
        return d

    def topic(x):
        d = dict(error=x.i16(), name=x.string(), internal=x.i8())
        d["partitions"] = x.array(partition)
        d["ops"] = x.i32()
        return d

    out = {t["name"]: t for t in r.array(topic)}
    return dict(brokers=brokers, cluster_id=cluster_id, topics=out, cluster_ops=r.i32())


def describe_cluster(conn, include_ops):
    body = K.i8(1 if include_ops else 0) + K.EMPTY_TAGS
    r = conn.roundtrip(K.DESCRIBE_CLUSTER, 0, body, header_version=2, response_header_version=1)
    r.i32()
    err = r.i16()
    r.compact_string()
    r.compact_string()
    r.i32()

    def broker(x):
        d = dict(node_id=x.i32(), host=x.compact_string(), port=x.i32(), rack=x.compact_string())
        x.tagged_fields()
        return d

    brokers = r.compact_array(broker)
    return dict(error=err, brokers=brokers, ops=r.i32())


def create_topic(addr, name, partitions=2):
    with K.Conn(addr) as c:
        err, msg = create_raw(c, name, partitions=partitions, factor=1)
        assert err in (0, K.TOPIC_ALREADY_EXISTS), (err, msg)


def test_metadata_v8_answers_every_operation_when_permissive(broker):
    addr = broker.bootstrap
    create_topic(addr, "ops-a")
    with K.Conn(addr) as c:
        md = metadata_v8(c, ["ops-a"])
        assert operations(md["topics"]["ops-a"]["ops"]) == ALL_TOPIC_OPS
        assert operations(md["cluster_ops"]) == ALL_CLUSTER_OPS
        assert [p["partition"] for p in md["topics"]["ops-a"]["partitions"]] == [0, 1]
        # All topics (null list) carry them too.
        every = metadata_v8(c, None)
        assert operations(every["topics"]["ops-a"]["ops"]) == ALL_TOPIC_OPS
        # Not asked for: INT32_MIN, as Kafka answers.
        plain = metadata_v8(c, ["ops-a"], topic_ops=False, cluster_ops=False)
        assert plain["topics"]["ops-a"]["ops"] == INT32_MIN
        assert plain["cluster_ops"] == INT32_MIN
        dc = describe_cluster(c, True)
        assert dc["error"] == 0 and operations(dc["ops"]) == ALL_CLUSTER_OPS
        assert describe_cluster(c, False)["ops"] == INT32_MIN


def test_kafka_python_admin_reads_topics_and_cluster(broker):
    addr = broker.bootstrap
    create_topic(addr, "ops-kp", partitions=3)
    admin = KafkaAdminClient(bootstrap_servers=addr, request_timeout_ms=10000)
    try:
        assert "ops-kp" in admin.list_topics()
        (t,) = admin.describe_topics(["ops-kp"])
        assert t["topic"] == "ops-kp" and t["error_code"] == 0
        assert sorted(p["partition"] for p in t["partitions"]) == [0, 1, 2]
        cluster = admin.describe_cluster()
        assert [b["port"] for b in cluster["brokers"]] == [int(addr.rsplit(":", 1)[1])]
    finally:
        admin.close()


ADMIN_PW = "admin-pw-ops"


@pytest.fixture(scope="module")
def secured(module_secure_broker_factory):
    b = module_secure_broker_factory(["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"],
                                     extra_args=["--authorization", "required"], start=False)
    tgt = S.Target.stopped(b)
    S.grant(tgt, "admin", [S.allow("*", "sluice:*")], password=ADMIN_PW)
    S.grant(tgt, "reader", [S.allow(["KafkaRead"], "sluice:topic:ops-r-*"),
                            S.allow(["KafkaDescribeConfigs"], "sluice:topic:ops-r-1"),
                            S.allow(["KafkaDescribe"], "sluice:cluster")], password="pw-reader")
    b.start()
    return b


def sasl(b, user, password):
    return S.SecureConn(b.addr("SASL_PLAINTEXT"), S.Creds("SASL_PLAINTEXT", "PLAIN", user, password))


def test_restricted_user_sees_only_its_operations(secured):
    with sasl(secured, "admin", ADMIN_PW) as a:
        for name in ("ops-r-1", "ops-r-2"):
            assert create_raw(a, name, partitions=1, factor=1)[0] == 0
        assert operations(metadata_v8(a, ["ops-r-1"])["topics"]["ops-r-1"]["ops"]) == ALL_TOPIC_OPS
    with sasl(secured, "reader", "pw-reader") as c:
        md = metadata_v8(c, ["ops-r-1", "ops-r-2"])
        # Read implies Describe, as in Kafka.
        assert operations(md["topics"]["ops-r-1"]["ops"]) == {
            ACLOperation.READ, ACLOperation.DESCRIBE, ACLOperation.DESCRIBE_CONFIGS}
        assert operations(md["topics"]["ops-r-2"]["ops"]) == {ACLOperation.READ, ACLOperation.DESCRIBE}
        assert operations(md["cluster_ops"]) == {ACLOperation.DESCRIBE}
        dc = describe_cluster(c, True)
        assert dc["error"] == 0 and operations(dc["ops"]) == {ACLOperation.DESCRIBE}


# --------------------------------------------------------------------------
# Replication factor (issue 21, item 12): 1..16 and -1 accepted, the rest refused with
# INVALID_REPLICATION_FACTOR; replica assignments checked as Kafka does.
# --------------------------------------------------------------------------
INVALID_REQUEST = 42
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39


def create_raw(conn, name, partitions=-1, factor=-1, assignments=()):
    def assignment(a):
        return K.i32(a[0]) + K.array(a[1], K.i32)

    body = K.array([name], lambda n: K.string(n) + K.i32(partitions) + K.i16(factor)
                   + K.array(list(assignments), assignment) + K.i32(0))
    r = conn.roundtrip(K.CREATE_TOPICS, 1, body + K.i32(10000) + K.i8(0))
    ((got, err, msg),) = r.array(lambda x: (x.string(), x.i16(), x.string()))
    assert got == name
    return err, msg


def partition_count(conn, name):
    md = metadata_v8(conn, [name], topic_ops=False, cluster_ops=False)
    t = md["topics"][name]
    return None if t["error"] else len(t["partitions"])


def test_confluent_replication_factor_bounds(broker):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    adm = AdminClient({"bootstrap.servers": broker.bootstrap})
    fs = adm.create_topics([NewTopic("rf-3", 2, 3), NewTopic("rf-16", 1, 16), NewTopic("rf-0", 1, 0),
                            NewTopic("rf-17", 1, 17), NewTopic("rf-1000", 1, 1000)], request_timeout=15)
    outcome = {}
    for name, f in fs.items():
        try:
            f.result(timeout=20)
            outcome[name] = None
        except KafkaException as e:
            outcome[name] = e.args[0].code()
    assert outcome == {"rf-3": None, "rf-16": None, "rf-0": INVALID_REPLICATION_FACTOR,
                       "rf-17": INVALID_REPLICATION_FACTOR, "rf-1000": INVALID_REPLICATION_FACTOR}
    md = adm.list_topics(timeout=10)
    assert len(md.topics["rf-3"].partitions) == 2
    assert "rf-0" not in md.topics and "rf-1000" not in md.topics
    broker.assert_alive()


def test_raw_replication_factor_and_assignments(broker):
    with K.Conn(broker.bootstrap) as c:
        err, msg = create_raw(c, "rf-neg", partitions=1, factor=-2)
        assert err == INVALID_REPLICATION_FACTOR and "-2" in msg, (err, msg)
        assert create_raw(c, "rf-default", partitions=1, factor=-1)[0] == 0
        assert partition_count(c, "rf-default") == 1
        # Manual assignments: the factor must then be -1, lists valid and of one length.
        assert create_raw(c, "as-ok", assignments=[(0, [0]), (1, [0])])[0] == 0
        assert partition_count(c, "as-ok") == 2
        assert create_raw(c, "as-rf", factor=1, assignments=[(0, [0])])[0] == INVALID_REQUEST
        for bad in ([(0, [])], [(0, [0, 0])], [(0, [7])], [(1, [0])], [(0, [0]), (0, [0])],
                    [(0, [0] * 17)]):
            err, msg = create_raw(c, "as-bad", assignments=bad)
            assert err == INVALID_REPLICA_ASSIGNMENT and msg, (bad, err, msg)
        assert partition_count(c, "as-bad") is None
        # CreatePartitions: new partitions keep the factor (1) on a known broker.
        for bad in ([[]], [[0, 0]], [[5]], [[0] * 17]):
            res = K.create_partitions(c, 1, [("as-ok", 3, bad)])
            assert res["as-ok"][0] == INVALID_REPLICA_ASSIGNMENT, (bad, res)
        assert partition_count(c, "as-ok") == 2
        res = K.create_partitions(c, 1, [("as-ok", 3, [[0]])])
        assert res["as-ok"][0] == 0, res
        assert partition_count(c, "as-ok") == 3
