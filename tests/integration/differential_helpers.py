"""The machinery of test_differential.py: Apache Kafka (scripts/apache-kafka) and Sluice
as module fixtures, asking both the same thing on fresh raw connections, and comparing
the answers field by field with the fields that may differ and the deliberate
differences (docs/compatibility.md, "Differences from Apache Kafka") set aside.
"""

import itertools
import os
import subprocess
from pathlib import Path

import pytest

import kproto as K
import kproto_flex as F
from group_helpers import wait_for

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 240  # a cold JVM on a loaded 2-core machine; typically 10 s

# Fields that may differ between two brokers, and why.
MAY_DIFFER = {
    "throttle_time_ms": "throttling is each broker's own state",
    "throttle": "throttling is each broker's own state",
    "throttle_ms": "throttling is each broker's own state",
    "cluster_id": "each cluster's own id",
    "topic_id": "a UUID each broker draws",
    "host": "each broker's listener",
    "port": "each broker's listener",
    "documentation": "prose; compared for presence",
}
# Topic configs where Sluice differs from Kafka 4.3 on purpose (docs/compatibility.md,
# "Differences from Apache Kafka"): the comparison sets them aside after checking that
# each differs exactly as documented.
SLUICE_ONLY_CONFIGS = {  # Kafka 3.x configs that Kafka 4 dropped; kept for 3.x clients
    "message.format.version": "3.0-IV1",
    "message.downconversion.enable": "true",
    "message.timestamp.difference.max.ms": "9223372036854775807",
}
OWN_DEFAULTS = {"max.compaction.lag.ms": ("9223372036854775807", "30000")}  # (Kafka's, Sluice's)
# Kafka 4's controller writes min.insync.replicas as a cluster-wide dynamic default
# (source 3, DYNAMIC_DEFAULT_BROKER_CONFIG); Sluice has no dynamic broker configs (5).
CLUSTER_DEFAULT_CONFIGS = {"min.insync.replicas"}
SOURCE_DEFAULT, SOURCE_CLUSTER_DEFAULT = 5, 3


def _source(entry):
    return entry.get("config_source", entry.get("source"))


def set_aside_deliberate(k, s):
    """k, s: {config name: entry} of one topic from Kafka and Sluice; removes the configs of
    the lists above from both once each differs as documented."""
    for name, value in SLUICE_ONLY_CONFIGS.items():
        assert name not in k, "Kafka 4.3 describes %s: the documented difference is stale" % name
        e = s.pop(name, None)
        assert e is None or _source(e) != SOURCE_DEFAULT or e["value"] == value, e
    for name, (kafka_default, own_default) in OWN_DEFAULTS.items():
        ke, se = k.pop(name, None), s.pop(name, None)
        assert (ke is None) == (se is None), (ke, se)
        if ke is not None and _source(ke) == SOURCE_DEFAULT:
            assert (ke["value"], se["value"]) == (kafka_default, own_default), (ke, se)
        elif ke is not None:
            assert ke["value"] == se["value"] and _source(ke) == _source(se), (ke, se)
    for name in CLUSTER_DEFAULT_CONFIGS:
        ke, se = k.pop(name, None), s.pop(name, None)
        assert (ke is None) == (se is None), (ke, se)
        if ke is not None:
            assert ke["value"] == se["value"], (ke, se)
            if _source(ke) == SOURCE_CLUSTER_DEFAULT:
                assert _source(se) == SOURCE_DEFAULT, se


# Error messages are prose: where Kafka sends one, Sluice must send one too; Sluice may
# also explain an error that Kafka leaves without a message.
# Member ids are made by each coordinator (Kafka: the client id and a UUID): compared for
# presence, and within one answer for which member is the leader.
MEMBER_ID_FIELDS = {"member_id", "leader"}
# Producer ids are handed out by each broker: compared for presence.
PRODUCER_ID_FIELDS = {"producer_id"}
BROKER_ID_FIELDS = {"node_id", "leader_id", "controller_id", "replica_nodes", "isr_nodes", "broker_ids"}
TEXT_FIELDS = {"error_message", "batch_index_error_message", "documentation"}
APPEND_TIME_FIELDS = {"log_append_time_ms"}

_names = itertools.count()


def fresh(prefix="t"):
    """A topic or group name used on both brokers."""
    return "diff-%s-%d-%d" % (prefix, os.getpid(), next(_names))


def normalize(v, key=None):
    """The answer with the fields that may differ replaced by what is compared of them."""
    if key in MAY_DIFFER and key not in TEXT_FIELDS:
        return "*"
    if key in TEXT_FIELDS:
        return None if not v else "<text>"  # Kafka sends "" for no message in some answers
    if key in MEMBER_ID_FIELDS and isinstance(v, str):
        return v if v == "" else "<member>"
    if key in BROKER_ID_FIELDS:
        ids = v if isinstance(v, list) else [v]
        out = ["<broker>" if i >= 0 else i for i in ids]
        return out if isinstance(v, list) else out[0]
    if key in PRODUCER_ID_FIELDS and isinstance(v, int):
        return v if v < 0 else "<producer>"
    if key in APPEND_TIME_FIELDS:
        return v if v == -1 else "<time>"
    if isinstance(v, dict):
        return {k: normalize(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [normalize(x) for x in v]
    if isinstance(v, tuple):
        return tuple(normalize(x) for x in v)
    return v


def differences(k, s, path="answer"):
    if isinstance(k, dict) and isinstance(s, dict):
        for key in sorted(set(k) | set(s), key=str):
            if key not in s:
                yield "%s.%s: Kafka %r, Sluice has no such field" % (path, key, k[key])
            elif key not in k:
                yield "%s.%s: Sluice %r, Kafka has no such field" % (path, key, s[key])
            elif key in TEXT_FIELDS and k[key] is None:
                continue  # Sluice may say why where Kafka does not (see MAY_DIFFER)
            else:
                yield from differences(k[key], s[key], "%s.%s" % (path, key))
    elif isinstance(k, (list, tuple)) and type(k) is type(s) and len(k) == len(s):
        for i, (a, b) in enumerate(zip(k, s)):
            yield from differences(a, b, "%s[%d]" % (path, i))
    elif k != s:
        yield "%s: Kafka %r, Sluice %r" % (path, k, s)


def assert_same(kafka_answer, sluice_answer, what=""):
    diffs = list(differences(normalize(kafka_answer), normalize(sluice_answer)))
    assert not diffs, "%s: the answers differ:\n  %s" % (what, "\n  ".join(diffs))
    return normalize(kafka_answer)


# -- the two brokers ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    """Apache Kafka, one KRaft node, for this module; stopped after its last test."""
    d = tmp_path_factory.mktemp("apache-kafka")
    script = str(REPO / "scripts" / "apache-kafka")
    try:
        p = subprocess.run([script, "start", str(d), "0"], capture_output=True, text=True,
                           timeout=START_TIMEOUT + 30)
        assert p.returncode == 0, "apache-kafka start failed:\n%s" % p.stderr[-3000:]
        yield p.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run([script, "stop", str(d)], timeout=120)


@pytest.fixture(scope="module")
def sluice(module_broker_factory):
    return module_broker_factory().bootstrap


COORDINATOR_STARTING = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


@pytest.fixture(scope="module")
def both(kafka, sluice):
    """{"kafka": bootstrap, "sluice": bootstrap}; a raw connection to each is opened per call.

    Kafka makes its offsets topic on the first FindCoordinator and then loads it: the
    group tests start once it serves a group."""
    with K.Conn(kafka, timeout=30) as conn:
        wait_until(lambda: K.find_coordinator(conn, 4, ["diff-probe"])[0]["error"] == 0
                   and K.describe_groups(conn, 5, ["diff-probe"])[0]["error"] not in COORDINATOR_STARTING,
                   "Kafka's group coordinator", timeout=120)
    return {"kafka": kafka, "sluice": sluice}


def ask(both, fn):
    """fn(conn) on a fresh connection to each broker: (Kafka's answer, Sluice's answer)."""
    out = []
    for name in ("kafka", "sluice"):
        with K.Conn(both[name], timeout=30) as conn:
            out.append(fn(conn))
    return out[0], out[1]


def same(both, fn, what=""):
    """Asks both brokers and asserts the answers agree; returns the (normalized) answer."""
    k, s = ask(both, fn)
    return assert_same(k, s, what)


def wait_until(pred, what, timeout=30.0):
    return wait_for(pred, timeout, what, interval=0.1)


def has_leaders(conn, name, partitions):
    t = F.metadata(conn, [name])["topics"][0]
    parts = t["partitions"] or []
    if not (t["error_code"] == 0 and len(parts) == partitions
            and all(p["leader_id"] >= 0 and p["error_code"] == 0 for p in parts)):
        return False
    # Kafka's replica manager takes the leadership a moment after its metadata shows it.
    answer = F.list_offsets(conn, name, [(p, -1) for p in range(partitions)])
    return all(p["error_code"] == 0 for p in answer["topics"][0]["partitions"])


def create(both, name, partitions=1, configs=None):
    """Creates the topic on both brokers and waits until each has a leader for every partition."""
    for b in both.values():
        with K.Conn(b, timeout=30) as conn:
            t = F.create_topics(conn, [dict(name=name, num_partitions=partitions, configs=configs or {})])
            assert t["topics"][0]["error_code"] == K.NONE, t
            wait_until(lambda: has_leaders(conn, name, partitions), "topic %s to have leaders" % name)
    return name


def records(n, ts0=1_700_000_000_000, step=1000, size=10):
    return [(ts0 + i * step, b"k%d" % i, b"v" * size, []) for i in range(n)]


NOT_LEADER_OR_FOLLOWER = 6  # Kafka, while a new partition's leadership settles


def produce(both, topic, batches, partition=0):
    for b in both.values():
        with K.Conn(b, timeout=30) as conn:
            for batch in batches:
                p = wait_until(lambda: (lambda p: p if p["error_code"] != NOT_LEADER_OR_FOLLOWER else None)(
                    F.produce(conn, topic, partition, batch)["responses"][0]["partition_responses"][0]),
                    "a leader for %s-%d" % (topic, partition))
                assert p["error_code"] == K.NONE, p
