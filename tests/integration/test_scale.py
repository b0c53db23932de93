"""Two hundred thousand partitions in one broker.

Ten topics of 20,000 partitions each (the CreateTopics maximum), records written to
and read back from partitions spread over all of them, with the broker's open file
descriptors bounded by --max-open-files and its resident memory bounded; after a
restart, partitions load lazily and still hold their records.
"""

import os
import random
import re

import pytest

import kproto as K
from test_cli import sluice_ok

TOPICS = 10
PARTITIONS = 20000
TOUCHED = 1500
MAX_OPEN_FILES = 128


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        m = re.search(r"VmRSS:\s+(\d+) kB", f.read())
    return int(m.group(1)) / 1024.0


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def batch_for(topic, partition):
    key = ("%s/%d" % (topic, partition)).encode()
    return key, K.encode_batch([(1700000000000 + partition, key, b"v-" + key, [("h", b"x")])])


@pytest.mark.slow
def test_two_hundred_thousand_partitions(broker_factory, topic_name):
    b = broker_factory(extra_args=["--max-open-files", str(MAX_OPEN_FILES)])
    names = ["%s-%d" % (topic_name[:40], i) for i in range(TOPICS)]
    for n in names:
        sluice_ok(["topic", "create", n, "--partitions", str(PARTITIONS), "--bootstrap", b.bootstrap])
    pid = b.proc.pid

    rng = random.Random(7)
    touched = sorted({(rng.choice(names), rng.randrange(PARTITIONS)) for _ in range(TOUCHED)})
    with K.Conn(b.bootstrap, timeout=60) as conn:
        md = K.metadata_v1(conn, names)
        assert sum(len(md["topics"][n]["partitions"]) for n in names) == TOPICS * PARTITIONS
        assert all(md["topics"][n]["error"] == 0 for n in names)

        for t, p in touched:
            _, batch = batch_for(t, p)
            res = K.produce_v3(conn, t, p, batch, acks=-1)
            assert res["error"] == K.NONE, (t, p, res)
            assert res["base_offset"] == 0, (t, p, res)

        for t, p in touched:
            recs, hw = K.fetch_all_v4(conn, t, p)
            key, _ = batch_for(t, p)
            assert hw == 1
            assert [(r.offset, r.key, r.value) for r in recs] == [(0, key, b"v-" + key)]

    fds = open_fds(pid)
    rss = rss_mb(pid)
    print("200k partitions, %d written: %d open fds, %.1f MB RSS" % (len(touched), fds, rss))
    # Segment descriptors are capped by the cache; the rest are sockets, the catalog
    # and the standard streams.
    assert fds <= MAX_OPEN_FILES + 32, fds
    assert rss < 400, rss

    b.stop()
    b.start()
    with K.Conn(b.bootstrap, timeout=60) as conn:
        for t, p in touched[::10]:
            recs, hw = K.fetch_all_v4(conn, t, p)
            key, _ = batch_for(t, p)
            assert hw == 1 and [(r.offset, r.key) for r in recs] == [(0, key)]
        # Offsets continue after the restart.
        t, p = touched[0]
        _, batch = batch_for(t, p)
        assert K.produce_v3(conn, t, p, batch, acks=-1)["base_offset"] == 1
