"""Helpers for the tests that drive a shared-mode cluster started by scripts/cluster
(test_shared_serve.py, test_shared_faults.py)."""

import json
import subprocess
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition


REPO = Path(__file__).resolve().parents[2]
SCRIPT = str(REPO / "scripts" / "cluster")


def cluster_cmd(*args, timeout=300, env=None):
    r = subprocess.run([SCRIPT, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def running_cluster(d, *up_args):
    """A generator for a module fixture: `scripts/cluster up d *up_args`, yields d, then
    `down` and the tail of every broker's log."""
    try:
        cluster_cmd("up", d, *up_args)
        yield d
    finally:
        subprocess.run([SCRIPT, "down", str(d)], capture_output=True, timeout=120)
        for log in sorted(d.glob("broker-*.log")):
            print("----", log.name, "\n", log.read_text(errors="replace")[-4000:])


def state(d):
    return json.loads((d / "cluster.json").read_text())


def kafka(d, i):
    return next(b["kafka"] for b in state(d)["brokers"] if b["id"] == i)


def broker_metrics(d, i):
    """Broker i's GET /metrics as {series: value} (series with its labels, as written)."""
    with urllib.request.urlopen("http://%s/metrics" % next(
            b["http"] for b in state(d)["brokers"] if b["id"] == i), timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def catalog(d, sql, params=None):
    """The rows of one statement against the cluster's shared catalog (its PostgreSQL)."""
    import psycopg2
    conn = psycopg2.connect(state(d)["postgres"])
    try:
        with conn.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall()
    finally:
        conn.close()


def wait_for(cond, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


def wait_topic_known(d, name, timeout=10):
    """Until every broker of the cluster knows topic `name` (the others read the topics every
    half second, docs/shared-mode.md), so that clients asking any of them find it."""
    import kproto as K
    for b in state(d)["brokers"]:
        def known():
            with K.Conn(b["kafka"]) as conn:
                t = K.metadata_v1(conn, [name])["topics"].get(name)
                return t is not None and t["error"] == 0
        wait_for(known, timeout=timeout, what="topic %s on broker %d" % (name, b["id"]))


def consume_all(bootstrap, topic, partitions, expect, group=None, timeout=60):
    """Reads every partition from offset 0 until `expect` records came; returns
    ({value: (partition, offset)}, duplicated values)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group or "reader-%f" % time.time(),
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = {}
    dups = []
    deadline = time.monotonic() + timeout
    while len(seen) < expect and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        v = m.value().decode()
        if v in seen:
            dups.append(v)
        seen[v] = (m.partition(), m.offset())
    c.close()
    return seen, dups
