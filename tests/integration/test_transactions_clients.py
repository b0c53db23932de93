"""Transactions with more real clients (issue 34): franz-go's GroupTransactSession as a
read-process-write service (go/cmd/franztxn, two members, every fourth transaction
aborted), kafkajs 2.2's transactional producer with sendOffsets and fencing
(node/transactional.js) and kafka-python 2.3's (kafka_python_txn.py, in the PyPI venv).
Each is checked on the data: a read_committed consumer and SQL (kafka_topics."T") see
each committed record once and no aborted one, and the offsets a transaction committed
for its group are the group's committed offsets. One broker serves the file.
"""

import json
import subprocess

import pytest
from confluent_kafka import Consumer, TopicPartition

import sluice_helpers as H
import sql_helpers as S
import txn_views as V
from test_go_clients import GO_DIR
from test_kafka_python_pypi import venv_python
from test_kafkajs import NODE, NODE_DIR

HERE = GO_DIR.parent


@pytest.fixture(scope="module")
def b(module_broker_factory):
    return module_broker_factory(extra_args=S.SQL_ARGS)


def run_lines(cmd, cwd, timeout=200):
    """The JSON lines a client program printed; it must exit 0."""
    r = subprocess.run([str(c) for c in cmd], cwd=str(cwd), stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=timeout)
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert r.returncode == 0, (cmd[0], r.stderr[-4000:], lines[-5:])
    return lines


def group_offset(bootstrap, group, topic, partition=0):
    c = Consumer(H.consumer_conf(bootstrap, **{"group.id": group}))
    try:
        return c.committed([TopicPartition(topic, partition)], timeout=10)[0].offset
    finally:
        c.close()


def assert_committed_view(b, topic, partitions, want, absent=()):
    view = V.read(b.bootstrap, topic, partitions)
    got = V.values(view)
    assert sorted(got) == sorted(want), (sorted(set(got) ^ set(want))[:10], len(got), len(want))
    assert not set(got) & set(absent)
    assert V.sql(b, topic) == view
    return view


def test_franz_go_group_transact_session_outputs_each_input_once(b, tmp_path):
    n, parts = 300, 3
    V.inputs(b.bootstrap, "gts-in", "gts-out", n, parts, 25)
    exe = tmp_path / "franztxn"
    r = subprocess.run(["go", "build", "-o", str(exe), "./cmd/franztxn"], cwd=GO_DIR, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = run_lines([exe, "-bootstrap", b.bootstrap, "-topic", "gts-in", "-out", "gts-out",
                       "-group", "gts", "-per-codec", n], HERE)
    txns = [x for x in lines if x["kind"] == "txn"]
    assert not [x for x in lines if x["kind"] in ("error", "produce-error")], lines[-5:]
    aborted = [x for x in txns if not x["asked_commit"]]
    assert aborted and not [x for x in aborted if x["committed"]], txns
    done = [x for x in lines if x["kind"] == "done"][0]
    # Each input's output once, although the aborted transactions' inputs were read and
    # written again.
    assert_committed_view(b, "gts-out", parts, ["OUT:in-%d" % i for i in range(n)])
    stored = V.values(V.read(b.bootstrap, "gts-out", parts, committed=False))
    assert len(stored) > n, "the aborted transactions' records are stored too: %d" % len(stored)
    assert done["committed_records"] == n, done
    for part in range(parts):
        assert group_offset(b.bootstrap, "gts", "gts-in", part) == n // parts


def test_kafkajs_transactional_producer_with_send_offsets(b):
    if NODE is None or not (NODE_DIR / "node_modules" / "kafkajs").exists():
        pytest.fail("node or kafkajs missing: run `make test-deps`", pytrace=False)
    H.create_topic(b.bootstrap, "kjs-txn", 2)
    H.create_topic(b.bootstrap, "kjs-txn-in", 1)
    lines = run_lines([NODE, NODE_DIR / "transactional.js", b.bootstrap, "kjs-txn", "kjs-group", "kjs-txn-in"],
                      NODE_DIR)
    fenced = [x for x in lines if x["kind"] == "fenced"][0]
    assert fenced["error"] in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "KafkaJSNonRetriableError"), fenced
    want = ["%s-%d" % (k, i) for k in ("c1", "c2") for i in range(5)] + ["winner"]
    assert_committed_view(b, "kjs-txn", 2, want, absent=["ab-%d" % i for i in range(5)] + ["zombie"])
    assert group_offset(b.bootstrap, "kjs-group", "kjs-txn-in") == 10


def test_kafka_python_transactional_producer_with_send_offsets(b):
    H.create_topic(b.bootstrap, "kpy-txn", 2)
    H.create_topic(b.bootstrap, "kpy-txn-in", 1)
    lines = run_lines([venv_python(), HERE / "kafka_python_txn.py", b.bootstrap, "kpy-txn", "kpy-group",
                       "kpy-txn-in"], HERE, timeout=120)
    assert [(x["name"], x["committed"]) for x in lines] == [("c1", True), ("ab", False), ("c2", True)]
    assert_committed_view(b, "kpy-txn", 2, ["%s-%d" % (k, i) for k in ("c1", "c2") for i in range(5)],
                          absent=["ab-%d" % i for i in range(5)])
    assert group_offset(b.bootstrap, "kpy-group", "kpy-txn-in") == 10
