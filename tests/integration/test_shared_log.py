"""Shared mode's partition logs (src/shared/shared_log.h) against real engines: s3proxy
and PostgreSQL, as test_shared_engines.py starts them. Each sluice-shared-probe process
(tests/unit/shared/shared_log_probe.cc) opens its own shared_log over the same bucket and
database, as a broker does: two of them appending at once are two brokers."""

import os
import re
import subprocess
import time
import uuid

from test_shared_engines import pg, probe_bin, run, s3, s3_and_pg, s3_env  # noqa: F401 (fixtures)


def engines(s3, pg, **extra):  # noqa: F811
    env = s3_env(s3, "log-tests/")
    env.update({"SLUICE_PG_URL": pg.url, "SLUICE_PRODUCE_WINDOW_MS": "20"})
    env.update({k: str(v) for k, v in extra.items()})
    return env


def new_topic(env, partitions):
    run(env, "pg-schema")
    topic = uuid.uuid4().hex
    assert run(env, "pg-topic", topic, "t-" + topic[:8], str(partitions)).stdout == b"ok\n"
    return topic


def outcomes(stdout):
    rows, objects = [], None
    for line in stdout.decode().splitlines():
        if line.startswith("# objects "):
            objects = int(line.split()[2])
        else:
            p, off, value, verdict = line.split()
            rows.append((int(p), int(off), value, verdict))
    return rows, objects


def records(stdout):
    return [(int(p), int(o), v) for p, o, v in (line.split() for line in stdout.decode().splitlines()
                                                 if not line.startswith("#"))]


def test_two_brokers_interleave_with_contiguous_offsets(s3, pg):  # noqa: F811
    env = engines(s3, pg)
    topic = new_topic(env, 4)
    full = {**os.environ, **env}
    procs = [subprocess.Popen([probe_bin(), "log-produce", str(b), topic, "4", "200"], env=full,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for b in (1, 2)]
    produced = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
        rows, objects = outcomes(out)
        assert len(rows) == 200 and all(v == "appended" for *_, v in rows)
        # The window gathered many appends (of all four partitions) into each object.
        assert objects < 100, objects
        produced += rows
    for part in range(4):
        offs = sorted(o for p, o, *_ in produced if p == part)
        assert offs == list(range(2 * 200 // 4)), part  # both brokers' appends, no gap, no overlap
    # A third process (another broker) reads every record where its append put it.
    got = records(run(env, "log-read", topic, "4").stdout)
    assert sorted(got) == sorted((p, o, v) for p, o, v, _ in produced)
    # Small max_bytes: one batch per read, the same records.
    assert sorted(records(run(env, "log-read", topic, "4", "10").stdout)) == sorted(got)
    rows = pg.execute("SELECT count(*), count(DISTINCT object_key) FROM sluice_batches WHERE topic_id = %s",
                      (topic,))
    assert rows[0][0] == 400


def test_a_window_of_more_batches_than_one_statement_takes(s3, pg):  # noqa: F811
    # 8,000 batches in one object need 72,000 parameters of index rows: more than
    # PostgreSQL's 65,535 per statement, so the commit inserts them in several statements.
    env = engines(s3, pg, SLUICE_PRODUCE_WINDOW_MS=3000)
    topic = new_topic(env, 2)
    rows, objects = outcomes(run(env, "log-produce", "1", topic, "2", "8000").stdout)
    assert len(rows) == 8000 and all(v == "appended" for *_, v in rows)
    assert objects <= 3, objects
    for part in range(2):
        assert sorted(o for p, o, *_ in rows if p == part) == list(range(4000))
    counted = pg.execute("SELECT count(*) FROM sluice_batches "
                         "WHERE topic_id = %s", (topic,))
    assert counted[0][0] == 8000
    assert sorted(records(run(env, "log-read", topic, "2").stdout)) == sorted((p, o, v) for p, o, v, _ in rows)


def test_idempotent_producers_from_two_brokers(s3, pg):  # noqa: F811
    env = engines(s3, pg)
    topic = new_topic(env, 2)
    rows, _ = outcomes(run(env, "log-produce", "1", topic, "2", "10", "7001").stdout)
    assert [v for *_, v in rows] == ["appended"] * 10
    # The same producer's batches again, through the other broker: each is one of the
    # producer's last five in its partition, so a duplicate, answered with its first
    # offsets, nothing stored twice.
    again, _ = outcomes(run(env, "log-produce", "2", topic, "2", "10", "7001").stdout)
    assert [v for *_, v in again] == ["duplicate"] * 10
    assert [(p, o) for p, o, *_ in again] == [(p, o) for p, o, *_ in rows]
    assert pg.execute("SELECT partition_id, high_watermark FROM sluice_partitions WHERE topic_id = %s "
                      "ORDER BY 1", (topic,)) == [(0, 5), (1, 5)]
    assert len(records(run(env, "log-read", topic, "2").stdout)) == 10
    # Sequences 0-9 per partition: 0-4 are duplicates again, 5-9 follow them.
    more, _ = outcomes(run(env, "log-produce", "2", topic, "2", "20", "7001").stdout)
    assert [v for *_, v in more] == ["duplicate"] * 10 + ["appended"] * 10
    assert sorted(o for _, o, _, v in more if v == "appended") == [5, 5, 6, 6, 7, 7, 8, 8, 9, 9]

    # One at a time: a retry of the last batch is a duplicate, a gap is refused.
    topic = new_topic(env, 1)
    out = run(env, "log-dup", "1", topic, "7002").stdout.decode().split("\n")
    assert out[:3] == ["appended 0", "duplicate 0", "out_of_order -1"]
    assert pg.execute("SELECT producer_epoch, last_sequence FROM sluice_producer_state "
                      "WHERE topic_id = %s", (topic,)) == [(0, 0)]


def test_sequences_across_windows_in_flight(s3, pg):  # noqa: F811
    # No window wait and three windows in flight: the producer's consecutive sequences of
    # each partition are spread over many windows uploading side by side; the commits go
    # in window order, so every batch is appended, at offsets in sequence order.
    env = engines(s3, pg, SLUICE_PRODUCE_WINDOW_MS=0, SLUICE_WINDOWS_IN_FLIGHT=3, SLUICE_PROBE_PAUSE_EVERY=40)
    topic = new_topic(env, 2)
    rows, objects = outcomes(run(env, "log-produce", "1", topic, "2", "600", "7005").stdout)
    assert [v for *_, v in rows] == ["appended"] * 600
    # 5 ms pauses every 40 submissions: the windows close as room frees, while others upload.
    assert objects >= 3, objects
    for part in range(2):
        # b1-i is sequence i // 2 of partition i % 2: at that offset.
        assert [o for p, o, *_ in rows if p == part] == list(range(300)), part
    assert pg.execute("SELECT partition_id, last_sequence FROM sluice_producer_state WHERE topic_id = %s "
                      "ORDER BY 1", (topic,)) == [(0, 299), (1, 299)]


def test_a_wait_wakes_on_another_brokers_commit(s3, pg):  # noqa: F811
    env = engines(s3, pg)
    topic = new_topic(env, 1)
    waiter = subprocess.Popen([probe_bin(), "log-wait", topic, "0", "0", "20000"],
                              env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert waiter.stdout.readline() == b"ready\n"
    time.sleep(0.3)
    run(env, "log-produce", "3", topic, "1", "1")
    out, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 0, err.decode()
    hw, elapsed = map(int, out.split())
    assert hw == 1
    # Woken by NOTIFY, not by the 20 s timeout (the probe start-up is most of it).
    assert elapsed < 5000, elapsed


def test_timestamp_lookups(s3, pg):  # noqa: F811
    env = engines(s3, pg)
    topic = new_topic(env, 2)
    run(env, "log-produce", "1", topic, "2", "6")  # partition 1: 3 records, timestamp 1001
    out = run(env, "log-lookup", topic, "1", "1001").stdout.decode().split("\n")
    assert out[:2] == ["0 1001", "0 1001"]
    assert run(env, "log-lookup", topic, "1", "1002").stdout.decode().split("\n")[0] == "none"


def test_a_wait_returns_at_once_when_data_is_there(s3, pg):  # noqa: F811
    env = engines(s3, pg)
    topic = new_topic(env, 1)
    run(env, "log-produce", "1", topic, "1", "3")
    lines = run(env, "log-wait", topic, "0", "2", "20000").stdout.decode().split("\n")
    hw, elapsed = map(int, lines[1].split())
    assert hw == 3 and elapsed < 5000, lines


def histograms(text, name):
    """{labels: (count, sum, {le: cumulative})} of histogram NAME in a /metrics text."""
    out = {}
    for line in text.splitlines():
        m = re.match(r'^%s_(bucket|count|sum)(?:\{(.*?)(?:,?le="([^"]+)")?\})? (\S+)$' % name, line)
        if not m:
            continue
        kind, labels, le, value = m.groups()
        count, total, buckets = out.get(labels or "", (0, 0.0, {}))
        if kind == "bucket":
            buckets[float(le)] = int(float(value))
        elif kind == "count":
            count = int(float(value))
        else:
            total = float(value)
        out[labels or ""] = (count, total, buckets)
    return out


def test_window_phases_show_where_the_time_went(s3, pg, tmp_path):  # noqa: F811
    # A client of the database holds partition 0's row lock while the probe's window
    # commits to it, and lets go a second after the commit began to wait: the window's
    # phases on /metrics (sluice_shared_window_phase_seconds) put that second in `lock`.
    env = engines(s3, pg, SLUICE_PROBE_METRICS_FILE=tmp_path / "metrics.txt")
    topic = new_topic(env, 1)
    conn = pg.connect()
    conn.autocommit = False
    with conn.cursor() as cur:
        cur.execute("SELECT high_watermark FROM sluice_partitions WHERE topic_id = %s FOR UPDATE", (topic,))
    probe = subprocess.Popen([probe_bin(), "log-produce", "1", topic, "1", "1"], env={**os.environ, **env},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not pg.execute("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"):
        assert probe.poll() is None and time.monotonic() < deadline, probe.stderr.read().decode()
        time.sleep(0.01)
    held = 1.0
    time.sleep(held)
    conn.commit()
    conn.close()
    out, err = probe.communicate(timeout=60)
    assert probe.returncode == 0, err.decode()
    rows, objects = outcomes(out)
    assert rows == [(0, 0, "b1-0", "appended")] and objects == 1
    text = (tmp_path / "metrics.txt").read_text()
    phases = histograms(text, "sluice_shared_window_phase_seconds")
    names = ("build", "put", "commit_wait", "lock", "statements", "commit", "answer")
    assert sorted(phases) == sorted('phase="%s"' % n for n in names), phases.keys()
    for n in names:
        count, total, buckets = phases['phase="%s"' % n]
        assert count == 1 and buckets[float("inf")] == 1, (n, count)  # one window: once each
        if n in ("put", "lock", "statements", "commit"):
            assert total > 0, n  # each is a request to an engine
    lock = phases['phase="lock"']
    assert held <= lock[1] < held + 10, lock
    assert lock[2][0.75] == 0  # its bucket agrees
    others = sum(phases['phase="%s"' % n][1] for n in names if n != "lock")
    assert others < held, phases
    # The phases add up to the window's whole time, closing to answers (the gaps between
    # them are a few clock reads and the pipeline's hand-over between threads).
    (count, whole, _), = histograms(text, "sluice_shared_window_seconds").values()
    assert count == 1 and lock[1] + others <= whole <= lock[1] + others + 0.3, (whole, phases)
