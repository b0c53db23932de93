"""KafkaAdminClient of kafka-python from PyPI (issue 21, item 3): list_topics(),
describe_topics(), describe_cluster() and delete_records().

kafka-python 2.3 asks for Metadata v8 with topic and cluster authorized operations in
all four calls (delete_records finds each partition's leader that way) and turns the
bit fields into ACLOperation names; a broker answering INT32_MIN made each of them raise
"31 is not a valid ACLOperation". Debian's kafka-python 2.0.2 asks for Metadata v5 and
has no delete_records(), so this client comes from PyPI: `make test-deps` installs
requirements-pypi.txt into tests/integration/.venv (SLUICE_PYPI_VENV overrides it), and
kafka_python_pypi.py runs there in a subprocess. What it returns is checked field by
field here, and the low watermark after delete_records also with librdkafka. Error
entries of Metadata (an unknown topic, one the principal may not describe) carry
operations too, which kafka-python decodes as well.
"""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition

import security_helpers as S
import sluice_helpers as H
from test_admin_answers import ADMIN_PW, ALL_CLUSTER_OPS, ALL_TOPIC_OPS, create_raw
from test_admin_answers import secured  # noqa: F401 - the fixture, shared

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements-pypi.txt"
RUN_TIMEOUT = 120.0

UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC_AUTHORIZATION_FAILED = 29
TOPIC_OPS = sorted(op.name for op in ALL_TOPIC_OPS)
CLUSTER_OPS = sorted(op.name for op in ALL_CLUSTER_OPS)


def venv_python():
    venv = Path(os.environ.get("SLUICE_PYPI_VENV") or HERE / ".venv")
    python = venv / "bin" / "python"
    if not os.access(python, os.X_OK):
        pytest.fail("no PyPI virtual environment at %s: run `make test-deps` (or point SLUICE_PYPI_VENV "
                    "at one made from %s)" % (venv, REQUIREMENTS.name), pytrace=False)
    return python


def pinned_version():
    (version,) = re.findall(r"^kafka-python==(\S+)", REQUIREMENTS.read_text(), re.M)
    return version


def kafka_python(bootstrap, topics, delete=(), security=None, offsets=None):
    """Runs kafka_python_pypi.py in the virtual environment; its JSON answer. `offsets`
    (partitions whose beginning and end offsets to read) defaults to those of `delete`."""
    if offsets is None:
        offsets = [(t, p) for t, p, _ in delete]
    req = dict(bootstrap=bootstrap, topics=topics, delete=[list(d) for d in delete], security=security or {},
               offsets=[list(o) for o in offsets])
    proc = subprocess.run([str(venv_python()), str(HERE / "kafka_python_pypi.py")], input=json.dumps(req),
                          capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    assert proc.returncode == 0, "kafka_python_pypi.py exited %d\nstderr:\n%s" % (proc.returncode, proc.stderr)
    out = json.loads(proc.stdout)
    assert out["version"] == pinned_version(), "the virtual environment is stale: run `make test-deps`"
    return out


def ok(answer, what):
    assert "ok" in answer, "%s raised %s: %s" % (what, answer.get("error"), answer.get("message"))
    return answer["ok"]


def by_name(described):
    return {t["topic"]: t for t in described}


def test_admin_calls_answer_topics_cluster_and_low_watermark(broker):
    addr = broker.bootstrap
    md = H.create_topic(addr, "kp-a", 3)
    H.create_topic(addr, "kp-b", 1)
    producer = Producer(H.producer_conf(addr))
    records = [dict(key=H.key_for(i), value=H.value_for(i), partition=0) for i in range(20)]
    records += [dict(key=H.key_for(i), value=H.value_for(i, b"p1"), partition=1) for i in range(5)]
    H.produce_all(producer, "kp-a", records)

    out = kafka_python(addr, ["kp-a", "kp-b"], delete=[("kp-a", 0, 12), ("kp-a", 1, -1)])
    # Every call answered (against a broker answering INT32_MIN, all four raise).
    assert {k: v for k, v in out.items() if isinstance(v, dict) and "error" in v} == {}

    assert sorted(ok(out["list_topics"], "list_topics")) == ["kp-a", "kp-b"]

    cluster = ok(out["describe_cluster"], "describe_cluster")
    (node,) = cluster["brokers"]
    host, port = addr.rsplit(":", 1)
    assert (node["host"], node["port"], node["rack"]) == (host, int(port), None)
    assert cluster["cluster_id"] == md.cluster_id
    assert cluster["controller_id"] == node["node_id"] == md.controller_id
    assert sorted(cluster["authorized_operations"]) == CLUSTER_OPS

    topics = by_name(ok(out["describe_topics"], "describe_topics"))
    assert sorted(topics) == ["kp-a", "kp-b"]
    for name, count in (("kp-a", 3), ("kp-b", 1)):
        t = topics[name]
        assert (t["error_code"], t["is_internal"]) == (0, False)
        assert sorted(t["authorized_operations"]) == TOPIC_OPS
        parts = sorted(t["partitions"], key=lambda p: p["partition"])
        assert [p["partition"] for p in parts] == list(range(count))
        for p in parts:
            assert (p["error_code"], p["leader"], p["replicas"], p["isr"]) == (0, node["node_id"],
                                                                               [node["node_id"]],
                                                                               [node["node_id"]])

    # 12 on partition 0; -1 on partition 1 deletes up to the high watermark, as in Kafka.
    deleted = {(t, p): r for t, p, r in ok(out["delete_records"], "delete_records")}
    assert {k: (r["error_code"], r["low_watermark"]) for k, r in deleted.items()} == {
        ("kp-a", 0): (0, 12), ("kp-a", 1): (0, 5)}
    # kafka-python's ListOffsets, then librdkafka's, then the records a consumer finds.
    assert ok(out["offsets"], "offsets") == [["kp-a", 0, 12, 20], ["kp-a", 1, 5, 5]]
    c = H.make_consumer(addr)
    try:
        assert c.get_watermark_offsets(TopicPartition("kp-a", 0), timeout=10) == (12, 20)
        assert c.get_watermark_offsets(TopicPartition("kp-a", 1), timeout=10) == (5, 5)
    finally:
        c.close()
    got = H.consume_all(addr, "kp-a", {0: 20})
    assert [(r["offset"], r["key"], r["value"]) for r in got] == [
        (i, H.key_for(i), H.value_for(i)) for i in range(12, 20)]
    broker.assert_alive()


# `secured` (test_admin_answers.py): a broker with --authorization required, a user
# "admin" allowed everything and a user "reader" (password "pw-reader") allowed KafkaRead
# on ops-r-*, KafkaDescribeConfigs on ops-r-1 and KafkaDescribe on the cluster.
def test_unknown_topic_is_answered_as_unknown(broker):
    """An unknown topic's Metadata entry has its error and authorized operations, so
    kafka-python reports UNKNOWN_TOPIC_OR_PARTITION (it raised "31 is not a valid
    ACLOperation" while that entry's field was INT32_MIN)."""
    addr = broker.bootstrap
    H.create_topic(addr, "kp-known", 1)
    out = kafka_python(addr, ["kp-known", "kp-missing"], delete=[("kp-missing", 0, 1)], offsets=[])
    topics = by_name(ok(out["describe_topics"], "describe_topics"))
    assert {name: (t["error_code"], len(t["partitions"]), sorted(t["authorized_operations"]))
            for name, t in topics.items()} == {"kp-known": (0, 1, TOPIC_OPS),
                                               "kp-missing": (UNKNOWN_TOPIC_OR_PARTITION, 0, TOPIC_OPS)}
    assert out["delete_records"]["error"] == "UnknownTopicOrPartitionError", out["delete_records"]
    assert "kp-missing" in out["delete_records"]["message"]
    assert sorted(ok(out["list_topics"], "list_topics")) == ["kp-known"]
    broker.assert_alive()


READER = S.Creds("SASL_PLAINTEXT", "PLAIN", "reader", "pw-reader")
ADMIN = S.Creds("SASL_PLAINTEXT", "PLAIN", "admin", ADMIN_PW)


def test_restricted_user_gets_its_operations_and_cannot_delete(secured):
    addr = secured.addr("SASL_PLAINTEXT")
    with S.SecureConn(addr, ADMIN) as conn:
        for name in ("ops-r-1", "kp-secret"):
            assert create_raw(conn, name, partitions=1, factor=1)[0] == 0
    producer = Producer(H.producer_conf(addr, **S.confluent_conf(ADMIN)))
    H.produce_all(producer, "ops-r-1", [dict(key=H.key_for(i), value=H.value_for(i)) for i in range(3)])

    reader = kafka_python(addr, ["ops-r-1", "kp-secret"], delete=[("ops-r-1", 0, 2)],
                          security=S.kafka_python_conf(READER))
    # Only the topics the reader may describe; Read implies Describe, as in Kafka. A
    # topic it may not describe has its error and no operations (not INT32_MIN).
    assert ok(reader["list_topics"], "list_topics") == ["ops-r-1"]
    described = ok(reader["describe_topics"], "describe_topics")
    assert {t["topic"]: (t["error_code"], sorted(t["authorized_operations"])) for t in described} == {
        "ops-r-1": (0, ["DESCRIBE", "DESCRIBE_CONFIGS", "READ"]), "kp-secret": (TOPIC_AUTHORIZATION_FAILED, [])}
    assert ok(reader["describe_cluster"], "describe_cluster")["authorized_operations"] == ["DESCRIBE"]
    assert reader["delete_records"]["error"] == "TopicAuthorizationFailedError", reader["delete_records"]
    assert ok(reader["offsets"], "offsets") == [["ops-r-1", 0, 0, 3]]

    full = kafka_python(addr, ["ops-r-1", "kp-secret"], delete=[("ops-r-1", 0, 2)],
                        security=S.kafka_python_conf(ADMIN))
    assert sorted(ok(full["list_topics"], "list_topics")) == ["kp-secret", "ops-r-1"]
    described = ok(full["describe_topics"], "describe_topics")
    assert {t["topic"]: sorted(t["authorized_operations"]) for t in described} == {
        "ops-r-1": TOPIC_OPS, "kp-secret": TOPIC_OPS}
    assert sorted(ok(full["describe_cluster"], "describe_cluster")["authorized_operations"]) == CLUSTER_OPS
    assert [(t, p, r["low_watermark"]) for t, p, r in ok(full["delete_records"], "delete_records")] == [
        ("ops-r-1", 0, 2)]
    assert ok(full["offsets"], "offsets") == [["ops-r-1", 0, 2, 3]]
    secured.assert_alive()
