#!/usr/bin/python3
"""A consumer of many partitions (10,000 by default) that is caught up, fetching as the
Java consumer does (Fetch v13, topics by id, its FetchSessionHandler's rules): the first
fetch names every partition and asks for a session (id 0, epoch 0); while the broker
answers a session id, each later fetch is incremental and names only the partitions
whose fetch offset moved; without one, every fetch names every partition again.

Two phases, each of --fetches fetches: "idle" (nothing new anywhere) and "trickle" (one
record in each of --trickle partitions before each fetch, produced on another
connection outside the measured windows). For each: request and response bytes per
fetch, broker CPU ms per fetch (utime+stime of the broker from /proc, summed over the
windows from sending each fetch to receiving its answer), and that round trip. Each
fetch waits up to 500 ms for one byte, as the Java consumer's do. Run it with a broker that has fetch
sessions and one that has not (e.g. a build of an older commit) to compare:

    bench/fetch_session_bench.py --sluice build/sluice
    bench/fetch_session_bench.py --sluice /path/to/older/build/sluice
"""

import argparse
import os
import sys
import time

from bench_broker import cpu_seconds, sluice_broker

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import kproto as K  # noqa: E402
import kproto_flex as F  # noqa: E402


def parse_fetch13(r):
    """(error, session id, {partition: (high watermark, record bytes)}) of a v13 answer."""
    r.i32()  # throttle
    err, sid = r.i16(), r.i32()
    got = {}

    def part(x):
        p, e, hw = x.i32(), x.i16(), x.i64()
        assert e == 0, "partition %d: error %d" % (p, e)
        x.i64(), x.i64()  # last stable offset, log start
        x.compact_array(lambda y: (y.i64(), y.i64(), y.tagged_fields()))
        x.i32()  # preferred read replica
        n = x.uvarint()
        recs = x.take(n - 1) if n > 1 else b""
        x.tagged_fields()
        got[p] = (hw, recs)

    def topic(x):
        x.take(16)
        x.compact_array(part)
        x.tagged_fields()

    r.compact_array(topic)
    r.tagged_fields()
    return err, sid, got


class Consumer:
    """The Java consumer's FetchSessionHandler, reduced to one topic and no errors."""

    def __init__(self, conn, topic_id, partitions, broker_pid):
        self.conn, self.topic_id, self.broker_pid = conn, topic_id, broker_pid
        self.offsets = {p: 0 for p in range(partitions)}
        self.session_id, self.epoch = 0, 0
        self.sent = {}  # partition -> offset the session holds

    def request(self):
        if self.session_id == 0:
            names, self.epoch = dict(self.offsets), 0
        else:
            names = {p: o for p, o in self.offsets.items() if self.sent.get(p) != o}
        part = [dict(partition=p, current_leader_epoch=-1, fetch_offset=o, last_fetched_epoch=-1,
                     log_start_offset=-1, partition_max_bytes=1 << 20) for p, o in sorted(names.items())]
        body = F.encode(F.FETCH13_REQ, dict(
            replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
            session_id=self.session_id, session_epoch=self.epoch,
            topics=[dict(topic_id=self.topic_id, partitions=part)] if part else [],
            forgotten_topics_data=[], rack_id=""))
        return body, names

    def fetch(self):
        """(request bytes, response bytes, records, broker CPU s, round trip s): the CPU
        and time from sending the request to receiving the whole answer."""
        body, names = self.request()
        c0, t0 = cpu_seconds(self.broker_pid), time.monotonic()
        cid = self.conn.send_request(K.FETCH, 13, body, header_version=2)
        frame = self.conn.recv_response(cid, header_version=1)
        t1, c1 = time.monotonic(), cpu_seconds(self.broker_pid)
        err, sid, got = parse_fetch13(frame)
        assert err == 0, "fetch error %d" % err
        if sid == 0:
            self.session_id, self.sent = 0, {}
        else:
            self.sent = dict(self.offsets) if self.session_id != sid else {**self.sent, **names}
            self.session_id, self.epoch = sid, (self.epoch % 0x7FFFFFFF) + 1
        records = 0
        for p, (_, recs) in got.items():
            decoded, _ = K.decode_batches(recs)
            if decoded:
                self.offsets[p] = decoded[-1].offset + 1
                records += len(decoded)
        return len(body), len(frame.data), records, c1 - c0, t1 - t0


def produce(conn, topic, parts):
    batch = K.encode_batch([(1764633600000, None, b"x" * 100, [])])
    resp = F.call(conn, K.PRODUCE, F.PRODUCE_V, F.PRODUCE_REQ, F.PRODUCE_RESP, dict(
        transactional_id=None, acks=1, timeout_ms=30000,
        topic_data=[dict(name=topic, partition_data=[dict(index=p, records=batch) for p in parts])]))
    for t in resp["responses"]:
        for p in t["partition_responses"]:
            assert p["error_code"] == 0, p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", default="build/sluice")
    ap.add_argument("--partitions", type=int, default=10000)
    ap.add_argument("--fetches", type=int, default=300)
    ap.add_argument("--trickle", type=int, default=10, help="partitions with a new record per fetch")
    a = ap.parse_args()

    with sluice_broker(a.sluice, "--max-open-files", "20000") as (proc, bootstrap, _):
        topic = "fsbench"
        with K.Conn(bootstrap, timeout=120) as c:
            r = F.create_topics(c, [dict(name=topic, num_partitions=a.partitions)], timeout_ms=120000)
            assert r["topics"][0]["error_code"] == 0, r
            tid = r["topics"][0]["topic_id"]
        with K.Conn(bootstrap, timeout=120) as conn, K.Conn(bootstrap, timeout=120) as pconn:
            consumer = Consumer(conn, tid, a.partitions, proc.pid)
            first = consumer.fetch()
            print("first fetch: %d request bytes, %d response bytes, session id %s"
                  % (first[0], first[1], consumer.session_id or "none"))
            rows = []
            for phase in ("idle", "trickle"):
                req = resp = recs = 0
                cpu = wall = 0.0
                for n in range(a.fetches):
                    if phase == "trickle":
                        base = (n * a.trickle) % a.partitions
                        produce(pconn, topic, [(base + i) % a.partitions for i in range(a.trickle)])
                    q, s, got, c, w = consumer.fetch()
                    req, resp, recs, cpu, wall = req + q, resp + s, recs + got, cpu + c, wall + w
                if phase == "trickle":
                    assert recs == a.fetches * a.trickle, "records: %d of %d" % (recs, a.fetches * a.trickle)
                rows.append((phase, req / a.fetches, resp / a.fetches, 1000 * cpu / a.fetches,
                             1000 * wall / a.fetches))
        print("sessions: %s; %d partitions, %d fetches per phase"
              % ("yes" if consumer.session_id else "no", a.partitions, a.fetches))
        print("| phase | request bytes/fetch | response bytes/fetch | broker CPU ms/fetch | round trip ms |")
        print("|---|---:|---:|---:|---:|")
        for phase, q, s, c, w in rows:
            print("| %s | %s | %s | %.2f | %.2f |" % (phase, format(round(q), ","), format(round(s), ","), c, w))


if __name__ == "__main__":
    main()
