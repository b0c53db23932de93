"""Kafka Connect as a cluster against Sluice: two distributed workers in one group.

The workers run with Connect's default `connect.protocol` (sessioned: incremental
cooperative rebalancing, KIP-415/KIP-507) and a shortened
`scheduled.rebalance.max.delay.ms`, the worker setting that says how long the group waits
for a departed worker before its connectors and tasks go to the others.

- Four FileStreamSource connectors (one task each): connectors and tasks are spread over
  both workers; after `kill -9` of one worker every connector and task runs on the other
  within the session timeout plus the rebalance delay, and lines appended to every file
  afterwards reach the topic (each line at least once: source offsets are flushed once a
  second, so a killed task may repeat what it wrote since its last flush).
- A FileStreamSink reads a topic into a file; the worker running its task is stopped
  (SIGTERM) half way, the task moves to the other worker, and the file holds every
  record exactly once. The stopped worker must exit within its
  shutdown time: a group leave or coordinator request that hangs would show here.
"""

import time

import pytest
from confluent_kafka import Producer

import connect_helpers as C
import sluice_helpers as H

REBALANCE_DELAY_MS = 8000
SESSION_TIMEOUT_MS = 10000
CLUSTER = {"scheduled.rebalance.max.delay.ms": str(REBALANCE_DELAY_MS),
           "session.timeout.ms": str(SESSION_TIMEOUT_MS),
           "heartbeat.interval.ms": "2000"}
SOURCES = 4
LINES = 50


def start_pair(tmp_path, bootstrap, group):
    workers = [C.Worker(tmp_path / "connect", bootstrap, group_id=group, extra=CLUSTER, name=f"w{i}")
               for i in (1, 2)]
    for w in workers:
        w.start()
    # Both in the group: each knows the other's REST address only through the group.
    H.wait_until("both workers in the group", lambda: all(
        w.request("GET", "/connectors")[0] == 200 for w in workers), timeout=90, interval=1)
    return workers


def topic_values(bootstrap, topic, partitions=1):
    hw = H.high_watermarks(bootstrap, topic, partitions)
    return [r["value"].decode() for r in H.consume_all(bootstrap, topic, hw)]


def wait_values(bootstrap, topic, expected, timeout=90):
    """Waits until TOPIC holds every line of EXPECTED (a set); returns all values read."""
    got = []

    def check():
        got[:] = topic_values(bootstrap, topic)
        return expected <= set(got)
    try:
        H.wait_until(f"{topic} holds {len(expected)} lines", check, timeout=timeout, interval=1)
    except AssertionError as e:
        raise AssertionError(f"{e}; missing {sorted(expected - set(got))[:10]}") from None
    return got


def test_sources_spread_and_fail_over(broker, tmp_path):
    bootstrap = broker.bootstrap
    topic = H.unique_topic("cc-src")
    H.create_topic(bootstrap, topic, 1)
    w1, w2 = start_pair(tmp_path, bootstrap, "cc-sources")
    names = [f"src{i}" for i in range(SOURCES)]
    files = {n: tmp_path / f"{n}.txt" for n in names}
    expected = set()
    for n in names:
        lines = [f"{n} line {j}" for j in range(LINES)]
        files[n].write_text("".join(x + "\n" for x in lines))
        expected |= set(lines)
        w1.put_connector(n, C.file_source(files[n], topic))
    for n in names:
        w1.wait_running(n, tasks=1)
    wait_values(bootstrap, topic, expected)

    # Spread: with 4 connectors and 4 tasks, each worker runs some of each kind.
    ids = {w1.url.split("//")[1]: w1, w2.url.split("//")[1]: w2}
    where = H.wait_until("every connector and task placed", lambda: (
        lambda p: p if len(p) == 2 * SOURCES else None)(C.placement(w1, names)), timeout=60, interval=1)
    assert set(where.values()) == set(ids), f"not spread over both workers: {where}"
    for kind in (lambda k: "/" not in k, lambda k: "/" in k):
        assert {v for k, v in where.items() if kind(k)} == set(ids), f"connectors or tasks on one worker: {where}"

    # kill -9 the worker that runs src0's task; its share moves to the survivor.
    victim = ids[where["src0/0"]]
    survivor = w2 if victim is w1 else w1
    survivor_id = survivor.url.split("//")[1]
    moved = sorted(k for k, v in where.items() if v != survivor_id)
    killed_at = time.monotonic()
    victim.kill9()
    H.wait_until("every connector and task on the survivor", lambda: (
        lambda p: len(p) == 2 * SOURCES and set(p.values()) == {survivor_id})(C.placement(survivor, names)),
        timeout=(SESSION_TIMEOUT_MS + REBALANCE_DELAY_MS) / 1000 + 60, interval=0.5)
    took = time.monotonic() - killed_at
    print(f"failover of {moved} took {took:.1f}s (session {SESSION_TIMEOUT_MS} ms, "
          f"delay {REBALANCE_DELAY_MS} ms)")
    # Bounded by the session timeout plus the rebalance delay (and slack for a loaded machine).
    assert took < (SESSION_TIMEOUT_MS + REBALANCE_DELAY_MS) / 1000 + 30, took

    # Lines appended now reach the topic from every file, the moved tasks' included.
    for n in names:
        more = [f"{n} after {j}" for j in range(LINES)]
        with open(files[n], "a") as f:
            f.write("".join(x + "\n" for x in more))
        expected |= set(more)
    got = wait_values(bootstrap, topic, expected)
    assert set(got) == expected, f"unexpected values {sorted(set(got) - expected)[:10]}"
    # Each file's lines in their order (at least once each: the first occurrence order).
    for n in names:
        firsts = list(dict.fromkeys(v for v in got if v.startswith(n + " ")))
        assert firsts == [x for x in (f"{n} line {j}" for j in range(LINES))] + \
            [f"{n} after {j}" for j in range(LINES)], f"{n}: out of order"
    survivor.stop()
    assert survivor.proc.returncode is not None


def test_sink_every_record_once_across_a_stop(broker, tmp_path):
    bootstrap = broker.bootstrap
    topic = H.unique_topic("cc-sink")
    H.create_topic(bootstrap, topic, 3)
    out = tmp_path / "sink.txt"
    w1, w2 = start_pair(tmp_path, bootstrap, "cc-sink")
    p = Producer(H.producer_conf(bootstrap))
    values = [f"record {i:04d}" for i in range(600)]

    def produce(vals):
        for i, v in enumerate(vals):
            p.produce(topic, value=v.encode(), key=str(i % 7).encode())
        assert p.flush(30) == 0

    produce(values[:300])
    w1.put_connector("sink", C.file_sink(out, topic))
    w1.wait_running("sink", tasks=1)

    def lines():
        return out.read_text().splitlines() if out.exists() else []
    H.wait_until("first half in the file", lambda: len(lines()) >= 300, timeout=90, interval=0.5)

    # Stop (SIGTERM) the worker running the task: it commits and leaves; the task moves.
    where = C.placement(w1, ["sink"])
    ids = {w1.url.split("//")[1]: w1, w2.url.split("//")[1]: w2}
    victim_id = where["sink/0"]
    victim = ids[victim_id]
    survivor = w2 if victim is w1 else w1
    t0 = time.monotonic()
    victim.stop()
    stop_took = time.monotonic() - t0
    assert victim.proc.returncode is not None
    # Connect closes its group member with a zero timeout: it sends LeaveGroup and logs
    # "Close timed out with 1 pending requests to coordinator" unless the answer is already
    # in, against any broker. What matters is that the broker took the leave at once.
    H.wait_until("the broker saw the worker leave", lambda: any(
        f"member connect-{victim_id}-" in ln and "left the group" in ln
        for ln in broker.log_lines()),
                 timeout=10)
    assert stop_took < 25, f"worker took {stop_took:.1f}s to stop:\n{victim.log_tail(40)}"
    produce(values[300:])
    H.wait_until("the task on the survivor", lambda: C.placement(survivor, ["sink"]).get("sink/0") ==
                 survivor.url.split("//")[1], timeout=60, interval=0.5)
    H.wait_until("every record in the file", lambda: len(lines()) >= len(values), timeout=90, interval=0.5)
    time.sleep(3)  # anything repeated would arrive now
    got = lines()
    dupes = sorted({v for v in got if got.count(v) > 1})
    assert not dupes, f"records written twice: {dupes[:10]}"
    assert sorted(got) == values
    survivor.stop()
    assert survivor.proc.returncode is not None
