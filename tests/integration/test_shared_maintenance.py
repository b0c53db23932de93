"""Shared mode's background work (src/shared/maintenance/maintenance.h) against real
engines: s3proxy and PostgreSQL, as test_shared_engines.py starts them. Each
sluice-shared-probe process (tests/unit/shared/maintenance_probe.cc, shared_log_probe.cc)
is one broker over the same bucket and database: `log-produce` appends through the
produce window, `mnt-run` runs one maintenance pass, `log-digest` reads every batch back
as a consumer would. The tests of one module share one database and one bucket prefix,
as one cluster does."""

import os
import signal
import subprocess
import time
import uuid

from test_shared_engines import pg, probe_bin, run, s3, s3_and_pg, s3_env  # noqa: F401 (fixtures)
from test_shared_log import new_topic

PREFIX = "mnt-tests/"


def engines(s3, pg, **extra):  # noqa: F811
    env = s3_env(s3, PREFIX)
    env.update({"SLUICE_PG_URL": pg.url, "SLUICE_PRODUCE_WINDOW_MS": "5",
                "SLUICE_MNT_INTERVAL_MS": "0", "SLUICE_MNT_GRACE_MS": "1500", "SLUICE_MNT_LEASE_MS": "3000",
                "SLUICE_MNT_MERGE_MIN": "4"})
    env.update({k: str(v) for k, v in extra.items()})
    return env


def produce(env, topic, partitions, count, broker=1):
    """One probe's appends (their record timestamps now unless env says otherwise)."""
    env = {"SLUICE_PROBE_TIMESTAMP_MS": str(int(time.time() * 1000)), **env}
    out = run(env, "log-produce", str(broker), topic, str(partitions), str(count)).stdout.decode()
    rows = [line.split() for line in out.splitlines() if not line.startswith("#")]
    assert rows and all(r[3] == "appended" for r in rows), out
    return [(int(p), int(o), v) for p, o, v, _ in rows]


def records(env, topic, partitions):
    out = run(env, "log-read", topic, str(partitions)).stdout.decode()
    return sorted((int(p), int(o), v) for p, o, v in (line.split() for line in out.splitlines()
                                                       if not line.startswith("#")))


def digests(env, topic, partitions):
    return run(env, "log-digest", topic, str(partitions)).stdout.decode().splitlines()


def maintain(env, broker=1, **extra):
    """One pass; returns (job lines, counters)."""
    out = run({**env, **{k: str(v) for k, v in extra.items()}}, "mnt-run", str(broker)).stdout.decode()
    jobs = [line.split(" ", 6) for line in out.splitlines() if line.startswith("job ")]
    counters = out.splitlines()[-1].split()[1:]
    stats = {counters[i]: int(counters[i + 1]) for i in range(0, len(counters), 2)}
    for j in jobs:
        assert j[5] == "ok", j
    return jobs, stats


def objects_of(pg, topic, partition):  # noqa: F811
    return [r[0] for r in pg.execute("SELECT DISTINCT object_key FROM sluice_batches WHERE topic_id = %s "
                                     "AND partition_id = %s ORDER BY 1", (topic, partition))]


def listed(env, sub="data/"):
    return set(line.split()[0] for line in run(env, "s3-list", sub).stdout.decode().splitlines())


def known_objects(pg):  # noqa: F811
    return set(r[0] for r in pg.execute("SELECT object_key FROM sluice_objects"))


def grace(env):
    return int(env["SLUICE_MNT_GRACE_MS"]) / 1000 + 0.1


def settle_cleanup(env, pg):  # noqa: F811
    """Cleanup passes, each after a grace, until every object in the store is one the
    catalog references (three at the most)."""
    def settled():
        return listed(env) == known_objects(pg) and \
            pg.execute("SELECT count(*) FROM sluice_objects WHERE state <> 'live'") == [(0,)]
    for _ in range(3):
        time.sleep(grace(env))
        maintain(env, SLUICE_MNT_JOBS="cleanup")
        if settled():
            break
    assert listed(env) == known_objects(pg)
    assert pg.execute("SELECT count(*) FROM sluice_objects WHERE state <> 'live'") == [(0,)]


def test_merge_keeps_every_record_with_its_offsets_and_bytes(s3, pg):  # noqa: F811
    # A grace long enough for the merge's checks (a dozen probe runs) on a busy machine.
    env = engines(s3, pg, SLUICE_MNT_GRACE_MS=4000)
    topic = new_topic(env, 2)
    produced = []
    for _ in range(12):  # twelve windows: twelve small objects, each with both partitions
        produced += produce(env, topic, 2, 10)
    before_records, before_bytes = records(env, topic, 2), digests(env, topic, 2)
    assert before_records == sorted(produced)
    old = objects_of(pg, topic, 0)
    assert len(old) == 12 and objects_of(pg, topic, 1) == old
    rows_sql = ("SELECT base_offset, object_key, byte_position, byte_size FROM sluice_batches "
                "WHERE topic_id = %s AND partition_id = 0 AND base_offset IN (0, 25, 59) ORDER BY 1")
    old_rows = pg.execute(rows_sql, (topic,))  # as a reader that took them before the merge
    jobs, stats = maintain(env, SLUICE_MNT_JOBS="merge")
    mine = [j for j in jobs if j[2] == topic]
    assert sorted(int(j[3]) for j in mine) == [0, 1], jobs
    assert stats["moved"] >= 120 and stats["merged"] >= 2
    print("merge of %d batches from %d objects per partition: %d ms, %d bytes copied"
          % (stats["moved"], len(old), stats["ms"], stats["copied"]))
    # A cleanup right after: the old objects are within the grace, kept (the checks below
    # read them). It comes first: the checks take seconds on a busy machine.
    _, early = maintain(env, SLUICE_MNT_JOBS="cleanup")
    assert set(old) <= listed(env), early
    # One object per partition now, every record where it was, byte for byte.
    for p in (0, 1):
        now = objects_of(pg, topic, p)
        assert len(now) == 1 and "/merged/%s/%d/" % (topic, p) in now[0], now
    assert records(env, topic, 2) == before_records
    assert digests(env, topic, 2) == before_bytes
    # The old objects: no batch points into them, both partitions moved out, so they are
    # marked; a reader that took the old rows still finds them until the grace passed.
    states = dict(pg.execute("SELECT object_key, state FROM sluice_objects WHERE object_key = ANY(%s)", (old,)))
    assert set(states.values()) == {"deleting"}
    assert set(old) <= listed(env)
    # That reader reads its old rows' bytes: the same as the new rows point at.
    for (base, key, pos, size), (base2, key2, pos2, size2) in zip(old_rows, pg.execute(rows_sql, (topic,))):
        assert (base, size) == (base2, size2) and key2 != key
        assert run(env, "s3-get", key, str(pos), str(size)).stdout == \
            run(env, "s3-get", key2, str(pos2), str(size2)).stdout
    time.sleep(grace(env))
    t0 = time.monotonic()
    _, late = maintain(env, SLUICE_MNT_JOBS="cleanup")
    print("cleanup of %d objects: %d ms in the pass (%.0f ms with the probe's start)"
          % (late["deleted"], late["ms"], (time.monotonic() - t0) * 1000))
    assert late["deleted"] >= 12
    assert not set(old) & listed(env)
    assert pg.execute("SELECT count(*) FROM sluice_objects WHERE object_key = ANY(%s)", (old,)) == [(0,)]
    assert records(env, topic, 2) == before_records
    # Nothing small is left to merge: a pass later merges nothing.
    _, again = maintain(env, SLUICE_MNT_JOBS="merge")
    assert again["merged"] == 0


def test_retention_and_delete_records_move_the_log_start(s3, pg):  # noqa: F811
    env = engines(s3, pg)
    topic = new_topic(env, 1)
    produce({**env, "SLUICE_PROBE_TIMESTAMP_MS": "1000"}, topic, 1, 5)  # half a century old
    fresh = produce(env, topic, 1, 5)
    for i in range(3):
        fresh += produce(env, topic, 1, 1)
    assert run(env, "log-bounds", topic, "0").stdout == b"0 13\n"
    # A day: the old batches go, the log start (ListOffsets earliest) moves past them.
    pg.execute("INSERT INTO sluice_topic_configs VALUES (%s, 'retention.ms', '86400000')", (topic,))
    jobs, stats = maintain(env, SLUICE_MNT_JOBS="retention")
    assert [j for j in jobs if j[2] == topic][0][6].startswith("log start 5, 5 batches deleted")
    assert run(env, "log-bounds", topic, "0").stdout == b"5 13\n"
    assert records(env, topic, 1) == sorted(fresh)
    # Their object held only them: marked, and deleted after the grace.
    first_obj = pg.execute("SELECT object_key FROM sluice_objects WHERE state = 'deleting'")
    assert first_obj
    # retention.bytes: of the remaining eight one-record batches, keep what fits in three.
    size = pg.execute("SELECT max(byte_size) FROM sluice_batches WHERE topic_id = %s", (topic,))[0][0]
    pg.execute("UPDATE sluice_topic_configs SET config_value = '-1' WHERE topic_id = %s", (topic,))
    pg.execute("INSERT INTO sluice_topic_configs VALUES (%s, 'retention.bytes', %s)", (topic, str(3 * size)))
    maintain(env, SLUICE_MNT_JOBS="retention")
    assert run(env, "log-bounds", topic, "0").stdout == b"10 13\n"
    assert [o for _, o, _ in records(env, topic, 1)] == [10, 11, 12]
    # DeleteRecords: the log start to 12; past the high watermark is refused; -1 is the HW.
    assert run(env, "mnt-delete-records", topic, "0", "12").stdout == b"12\n"
    assert run(env, "mnt-delete-records", topic, "0", "11").stdout == b"12\n"  # never back
    bad = run(env, "mnt-delete-records", topic, "0", "14", check=False)
    assert bad.returncode == 1 and "error out_of_range:" in bad.stderr.decode()
    assert [o for _, o, _ in records(env, topic, 1)] == [12]
    assert run(env, "mnt-delete-records", topic, "0", "-1").stdout == b"13\n"
    assert run(env, "log-bounds", topic, "0").stdout == b"13 13\n"
    assert pg.execute("SELECT count(*) FROM sluice_batches WHERE topic_id = %s", (topic,)) == [(0,)]
    settle_cleanup(env, pg)
    # New records after it all go on from 13.
    assert produce(env, topic, 1, 1)[0][1] == 13


def hold_partitions(pg, topic):  # noqa: F811
    """A transaction holding the topic's partition rows: commits over them wait."""
    conn = pg.connect()
    conn.autocommit = False
    cur = conn.cursor()
    cur.execute("SELECT * FROM sluice_partitions WHERE topic_id = %s FOR UPDATE", (topic,))
    return conn


def wait_for(predicate, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_kill_between_upload_and_commit_leaves_an_orphan_the_cleanup_removes(s3, pg):  # noqa: F811
    env = engines(s3, pg, SLUICE_MNT_GRACE_MS=4000)
    topic = new_topic(env, 2)
    acked = produce(env, topic, 2, 20)
    settle_cleanup(env, pg)
    before = listed(env)
    lock = hold_partitions(pg, topic)
    try:
        victim = subprocess.Popen([probe_bin(), "log-produce", "7", topic, "2", "10"], env={**os.environ, **env},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_for(lambda: len(listed(env) - before) == 1)  # uploaded; the commit waits on the lock
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
        assert victim.stdout.read() == b""  # nothing was acknowledged
    finally:
        lock.rollback()
        lock.close()
    (orphan,) = listed(env) - before
    assert orphan not in known_objects(pg)
    _, stats = maintain(env, SLUICE_MNT_JOBS="cleanup")
    assert stats["orphans"] == 0 and orphan in listed(env)  # younger than the grace
    time.sleep(grace(env))
    _, stats = maintain(env, SLUICE_MNT_JOBS="cleanup")
    assert stats["orphans"] == 1 and orphan not in listed(env)
    # The claim fences a commit that would come now: the row says 'deleting'.
    assert pg.execute("SELECT state, created_by FROM sluice_objects WHERE object_key = %s", (orphan,)) == \
        [("deleting", -1)]
    assert records(env, topic, 2) == sorted(acked)
    assert pg.execute("SELECT sum(high_watermark) FROM sluice_partitions WHERE topic_id = %s", (topic,)) == [(20,)]
    settle_cleanup(env, pg)


def test_kill_during_merge_loses_nothing_and_leaves_no_orphan(s3, pg):  # noqa: F811
    env = engines(s3, pg, SLUICE_MNT_JOBS="merge", SLUICE_MNT_LEASE_MS=10000)
    topic = new_topic(env, 1)
    acked = []
    for _ in range(6):
        acked += produce(env, topic, 1, 5)
    before_bytes = digests(env, topic, 1)
    lock = hold_partitions(pg, topic)
    try:
        victim = subprocess.Popen([probe_bin(), "mnt-run", "5"], env={**os.environ, **env},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # The merged object is uploaded; the swap waits on the partition's row.
        wait_for(lambda: any("/merged/%s/" % topic in k for k in listed(env)))
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
    finally:
        lock.rollback()
        lock.close()
    assert records(env, topic, 1) == sorted(acked)
    assert len(objects_of(pg, topic, 0)) == 6  # nothing swapped
    lease = pg.execute("SELECT holder_broker, fencing_token, runs, lease_expires_at > now() FROM sluice_job_leases "
                       "WHERE job_kind = 'merge' AND topic_id = %s", (topic,))
    assert lease == [(5, 1, 0, True)]
    # The dead broker's lease holds the job until it passes: another broker skips it...
    jobs, _ = maintain(env, broker=6)
    assert not [j for j in jobs if j[2] == topic]
    wait_for(lambda: pg.execute("SELECT lease_expires_at <= now() FROM sluice_job_leases "
                                "WHERE job_kind = 'merge' AND topic_id = %s", (topic,)) == [(True,)])
    # ... then takes it with the next fencing token and merges.
    jobs, stats = maintain(env, broker=6)
    assert [(j[4], j[5]) for j in jobs if j[2] == topic] == [("2", "ok")], jobs
    assert pg.execute("SELECT holder_broker, fencing_token, runs FROM sluice_job_leases "
                      "WHERE job_kind = 'merge' AND topic_id = %s", (topic,)) == [(6, 2, 1)]
    assert len(objects_of(pg, topic, 0)) == 1
    assert digests(env, topic, 1) == before_bytes
    # The killed merge's object and the small ones are gone after the cleanup; nothing else.
    settle_cleanup(env.copy(), pg)
    assert records(env, topic, 1) == sorted(acked)


def test_two_brokers_running_maintenance_at_once_do_each_job_once(s3, pg):  # noqa: F811
    env = engines(s3, pg, SLUICE_MNT_INTERVAL_MS=600000)
    topic = new_topic(env, 6)
    for _ in range(5):
        produce(env, topic, 6, 30)
    procs = [subprocess.Popen([probe_bin(), "mnt-run", str(b)], env={**os.environ, **env},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for b in (1, 2)]
    ran = []
    for b, p in zip((1, 2), procs):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
        ran += [(line.split()[1], line.split()[2], line.split()[3], b) for line in out.decode().splitlines()
                if line.startswith("job ")]
    keys = [r[:3] for r in ran]
    assert len(keys) == len(set(keys)), ran  # no job twice
    for kind in ("compact", "merge", "retention"):
        assert sorted(int(p) for k, t, p in keys if k == kind and t == topic) == list(range(6))
    # The lease table says the same: each of the topic's jobs taken once, run once.
    rows = pg.execute("SELECT job_kind, partition_id, fencing_token, runs, holder_broker FROM sluice_job_leases "
                      "WHERE topic_id = %s ORDER BY 1, 2", (topic,))
    assert [(k, p, t, r) for k, p, t, r, _ in rows] == [(k, p, 1, 1) for k in ("compact", "merge", "retention")
                                                         for p in range(6)]
    print("jobs per broker:", {b: sum(1 for r in ran if r[3] == b) for b in (1, 2)})
    # Due again only after the interval: a third pass now runs none of them.
    jobs, _ = maintain(env, broker=3)
    assert not [j for j in jobs if j[2] == topic]
    for p in range(6):
        assert len(objects_of(pg, topic, p)) == 1


def test_a_dead_brokers_job_lease_moves_with_its_broker_registration(s3, pg):  # noqa: F811
    """A broker killed while it holds a job's lease: its job lease (here 1 h) is not waited
    out; once its broker lease passed, or it registered again as a new incarnation, another
    broker takes the job with the next fencing token (job_lease.cc, lease_free)."""
    env = engines(s3, pg, SLUICE_MNT_JOBS="cleanup")
    maintain(env)  # the cleanup job's row exists

    def hold(incarnation):
        pg.execute("UPDATE sluice_job_leases SET holder_broker = 8, holder_incarnation = %s, "
                   "fencing_token = fencing_token + 1, lease_expires_at = now() + interval '1 hour', "
                   "next_due_at = now() WHERE job_kind = 'cleanup'", (incarnation,))
        return pg.execute("SELECT fencing_token FROM sluice_job_leases WHERE job_kind = 'cleanup'")[0][0]

    def cleanup_runs(broker=6):
        jobs, _ = maintain(env, broker=broker)
        return [int(j[4]) for j in jobs if j[1] == "cleanup"]

    pg.execute("INSERT INTO sluice_brokers (broker_id, incarnation, kafka_host, kafka_port, registered_at, "
               "lease_expires_at) VALUES (8, 1, '127.0.0.1', 1, now(), now() + interval '1 hour')")
    try:
        # Held by a live broker: nobody else runs it.
        token = hold(1)
        assert cleanup_runs() == []
        # Its broker lease passed (killed, not renewing): taken at once with the next token.
        pg.execute("UPDATE sluice_brokers SET lease_expires_at = now() - interval '1 second' WHERE broker_id = 8")
        assert cleanup_runs() == [token + 1]
        # Held again by broker 8, which restarts as incarnation 2 (a live registration, but
        # not the holder's): taken at once as well.
        pg.execute("UPDATE sluice_brokers SET lease_expires_at = now() + interval '1 hour' WHERE broker_id = 8")
        token = hold(1)
        assert cleanup_runs() == []
        pg.execute("UPDATE sluice_brokers SET incarnation = 2 WHERE broker_id = 8")
        assert cleanup_runs() == [token + 1]
        assert pg.execute("SELECT holder_broker, lease_expires_at <= now() FROM sluice_job_leases "
                          "WHERE job_kind = 'cleanup'") == [(6, True)]
    finally:
        pg.execute("DELETE FROM sluice_brokers WHERE broker_id = 8")


def catalog_counters(pg):  # noqa: F811
    """(write transactions: the next transaction id, exact; all transactions: published by
    each backend up to a second late; job leases taken: each take adds one to a token)."""
    return pg.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint, "
                      "(SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()), "
                      "(SELECT coalesce(sum(fencing_token), 0)::bigint FROM sluice_job_leases)")[0]


def counted_pass(env, pg, **extra):  # noqa: F811
    """One pass, with the database transactions it cost."""
    before = catalog_counters(pg)
    t0 = time.monotonic()
    jobs, _ = maintain(env, **extra)
    ms = (time.monotonic() - t0) * 1000
    time.sleep(1.2)  # the probe's backend publishes its transactions when it exits
    after = catalog_counters(pg)
    return jobs, {"writes": after[0] - before[0], "transactions": after[1] - before[1] - 1,
                  "taken": after[2] - before[2], "ms": ms}


def jobs_of(jobs, topic):
    return sorted((j[1], int(j[3])) for j in jobs if j[2] == topic)


IDLE_PARTITIONS = 200


def test_idle_partitions_cost_no_lease_transaction(s3, pg):  # noqa: F811
    """A job is due for a partition only when it changed since the job last ran: a pass over
    idle partitions takes no lease (one query per job kind)."""
    env = engines(s3, pg, SLUICE_MNT_MAX_JOBS=10000, SLUICE_MNT_JOBS="merge,retention,compact")
    topic = new_topic(env, IDLE_PARTITIONS)
    pg.execute("INSERT INTO sluice_topic_configs VALUES (%s, 'retention.ms', '86400000')", (topic,))
    produce(env, topic, IDLE_PARTITIONS, IDLE_PARTITIONS)  # a batch in each
    jobs, first = counted_pass(env, pg)
    every = [(k, p) for k in ("compact", "merge", "retention") for p in range(IDLE_PARTITIONS)]
    assert jobs_of(jobs, topic) == every
    jobs, idle = counted_pass(env, pg)
    print("a pass over %d partitions: %s after their change; %s idle"
          % (IDLE_PARTITIONS, first, idle))
    assert jobs == [] and idle["taken"] == 0
    assert idle["writes"] <= 1 and idle["transactions"] <= 10, idle  # autovacuum may write one
    # New batches in partition 0: its jobs, and only them.
    produce(env, topic, 1, 1)
    jobs, _ = maintain(env)
    assert jobs_of(jobs, topic) == [("compact", 0), ("merge", 0), ("retention", 0)]


def test_jobs_are_due_again_on_delete_records_configs_and_retention_time(s3, pg):  # noqa: F811
    env = engines(s3, pg, SLUICE_MNT_JOBS="merge,retention,compact")
    topic = new_topic(env, 2)
    pg.execute("INSERT INTO sluice_topic_configs VALUES (%s, 'retention.ms', '5000')", (topic,))
    ts = int(time.time() * 1000)
    produce({**env, "SLUICE_PROBE_TIMESTAMP_MS": str(ts)}, topic, 2, 2)
    every = [(k, p) for k in ("compact", "merge", "retention") for p in (0, 1)]
    jobs, _ = maintain(env)
    assert jobs_of(jobs, topic) == every
    assert [j[6] for j in jobs if j[1] == "retention" and j[2] == topic][0].startswith("log start 0, 0 batches")
    # Retention sleeps until the oldest batch's records pass retention.ms.
    wake = pg.execute("SELECT l.partition_id, l.wake_ms - b.max_timestamp_ms FROM sluice_job_leases l JOIN "
                      "sluice_batches b ON b.topic_id = l.topic_id AND b.partition_id = l.partition_id "
                      "WHERE l.topic_id = %s AND l.job_kind = 'retention' ORDER BY 1", (topic,))
    assert wake == [(0, 5001), (1, 5001)]
    assert jobs_of(maintain(env)[0], topic) == []
    # DeleteRecords moves partition 1's log start: its jobs are due again.
    assert run(env, "mnt-delete-records", topic, "1", "1").stdout == b"1\n"
    assert jobs_of(maintain(env)[0], topic) == [("compact", 1), ("merge", 1), ("retention", 1)]
    assert jobs_of(maintain(env)[0], topic) == []
    # Nothing changes on partition 0, but time passes its record's retention: retention runs.
    time.sleep(max(0.0, (ts + 5002) / 1000 - time.time()) + 0.1)
    jobs, _ = maintain(env, SLUICE_MNT_JOBS="merge,compact")
    assert jobs_of(jobs, topic) == []
    jobs, _ = maintain(env)
    assert ("retention", 0) in jobs_of(jobs, topic)
    assert [j[6] for j in jobs if j[1] == "retention" and j[2] == topic][0].startswith(
        "log start 1, 1 batches deleted")
    assert run(env, "log-bounds", topic, "0").stdout == b"1 1\n"
    # The log start it moved is a change for the other jobs (once), not for itself.
    ran = jobs_of(jobs, topic) + jobs_of(maintain(env)[0], topic)
    assert sorted(ran) == [("compact", 0), ("merge", 0), ("retention", 0)]
    assert jobs_of(maintain(env)[0], topic) == []
    # A config of the topic changed: every job of its partitions is due again.
    pg.execute("UPDATE sluice_topic_configs SET config_value = '6000' WHERE topic_id = %s", (topic,))
    assert jobs_of(maintain(env)[0], topic) == every
    assert jobs_of(maintain(env)[0], topic) == []
