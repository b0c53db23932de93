"""Shared mode's engine clients (src/shared) against real engines: s3proxy (an
S3-compatible server from Maven Central, s3_helpers.py) and Debian's PostgreSQL 15 in a
private cluster (postgres_helpers.py). The C++ clients run in sluice-shared-probe
(tests/unit/shared/shared_probe.cc), which reads the engines' addresses from the
environment; a fault proxy (s3_helpers.FaultProxy) stands between it and S3 where the
test needs throttling."""

import hashlib
import os
import queue
import subprocess
import threading
import time
from pathlib import Path

import pytest

import postgres_helpers as P
import s3_helpers as S3

REPO = Path(__file__).resolve().parents[2]
# The shared catalog version this build writes (src/shared/catalog_schema.h).
CATALOG_VERSION = 12


def probe_bin():
    return P.H.built_binary("SLUICE_SHARED_PROBE", "tests/unit/shared/sluice-shared-probe")


@pytest.fixture(scope="module")
def s3_and_pg(tmp_path_factory):
    """s3proxy and PostgreSQL, started side by side (a JVM and an initdb: seconds each, tens
    of them on a busy machine); the module's s3 and pg."""
    server = S3.S3Server(tmp_path_factory.mktemp("s3"), register=P.H.register_proc)
    cluster = P.PostgresCluster(tmp_path_factory.mktemp("pg"))
    failed = []

    def start_s3():
        try:
            server.start()
        except BaseException as e:  # noqa: B902 (raised below, on the test's thread)
            failed.append(e)
    t = threading.Thread(target=start_s3)
    t.start()
    try:
        cluster.start()
    finally:
        t.join()
    try:
        if failed:
            raise failed[0]
        yield server, cluster
    finally:
        server.stop()
        cluster.stop()


@pytest.fixture(scope="module")
def s3(s3_and_pg):
    return s3_and_pg[0]


@pytest.fixture(scope="module")
def pg(s3_and_pg):
    return s3_and_pg[1]


def run(env, *args, stdin=b"", timeout=60, check=True):
    full = dict(os.environ)
    full.update(env)
    proc = subprocess.run([probe_bin(), *args], input=stdin, capture_output=True, env=full, timeout=timeout)
    if check:
        assert proc.returncode == 0, "probe %s failed (%d): %s" % (args, proc.returncode, proc.stderr.decode())
    return proc


def s3_env(s3, prefix, **extra):
    env = s3.env(prefix=prefix)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def pg_env(pg, **extra):
    env = {"SLUICE_PG_URL": pg.url}
    env.update({k: str(v) for k, v in extra.items()})
    return env


# ---------------------------------------------------------------- object store

def test_put_get_range_head_list_delete(s3):
    env = s3_env(s3, "t1/")
    data = os.urandom(8 * 1024 * 1024 + 13)  # an 8 MB object, as shared mode writes
    assert run(env, "s3-put", "topic/0/obj-a", stdin=data).stdout == b"ok %d\n" % len(data)
    got = run(env, "s3-get", "topic/0/obj-a").stdout
    assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest()
    assert run(env, "s3-get", "topic/0/obj-a", "1000000", "4096").stdout == data[1000000:1004096]
    # A range past the end is cut at the end, as S3 does.
    assert run(env, "s3-get", "topic/0/obj-a", str(len(data) - 5), "100").stdout == data[-5:]
    size, etag = run(env, "s3-head", "topic/0/obj-a").stdout.decode().split()
    assert int(size) == len(data) and etag

    # Keys with spaces, '+', '&' and non-ASCII letters survive signing and listing.
    odd = "topic/1/a b+c&d=é~"
    run(env, "s3-put", odd, stdin=b"odd")
    assert run(env, "s3-get", odd).stdout == b"odd"
    for i in range(5):
        run(env, "s3-put", "topic/2/obj-%d" % i, stdin=b"x" * i)
    run(s3_env(s3, "other/"), "s3-put", "topic/2/not-mine", stdin=b"y")

    listed = run(env, "s3-list", "topic/").stdout.decode().splitlines()
    want = ["topic/0/obj-a %d" % len(data), odd + " 3"] + ["topic/2/obj-%d %d" % (i, i) for i in range(5)]
    assert listed == sorted(want)
    # Two keys a page: ListObjectsV2 continuation tokens, same answer.
    paged = run(s3_env(s3, "t1/", SLUICE_S3_LIST_PAGE_SIZE=2), "s3-list", "topic/2/").stdout.decode().splitlines()
    assert paged == ["topic/2/obj-%d %d" % (i, i) for i in range(5)]

    assert run(env, "s3-delete", "topic/2/obj-3").stdout == b"ok\n"
    assert run(env, "s3-delete", "topic/2/obj-3").stdout == b"ok\n"  # absent: still ok
    gone = run(env, "s3-get", "topic/2/obj-3", check=False)
    assert gone.returncode == 1 and gone.stderr.decode().startswith("error not_found:"), gone.stderr
    assert "404 NoSuchKey" in gone.stderr.decode()
    assert "topic/2/obj-3 3" not in run(env, "s3-list", "topic/2/").stdout.decode()
    bad_range = run(env, "s3-get", "topic/0/obj-a", str(len(data) + 10), "5", check=False)
    assert bad_range.returncode == 1 and "error out_of_range:" in bad_range.stderr.decode()


def test_wrong_secret_is_refused_at_once(s3):
    start = time.monotonic()
    r = run(s3_env(s3, "t2/", SLUICE_S3_SECRET_KEY="wrong"), "s3-put", "k", stdin=b"x", check=False)
    err = r.stderr.decode()
    assert r.returncode == 1 and "error io_error:" in err and "403" in err, err
    assert time.monotonic() - start < 10  # not retried


def test_503_slowdown_is_retried_then_succeeds(s3):
    proxy = S3.FaultProxy(s3.port)
    try:
        env = s3.env(endpoint=proxy.endpoint, prefix="t3/")
        proxy.fail_next(3)
        r = run(env, "s3-put", "after-throttling", stdin=b"payload")
        assert r.stdout == b"ok 7\n"
        assert proxy.failed == 3 and proxy.requests == 4
        # The object is there, read straight from the server.
        assert run(s3.env(prefix="t3/"), "s3-get", "after-throttling").stdout == b"payload"
        proxy.fail_next(2, status=500, code="InternalError")
        assert run(env, "s3-get", "after-throttling").stdout == b"payload"
        assert proxy.failed == 5
        proxy.fail_next(1, status=429, code="TooManyRequests")
        assert run(env, "s3-head", "after-throttling").stdout.decode().startswith("7 ")
        proxy.fail_next(1, status=400, code="RequestTimeout")
        assert run(env, "s3-get", "after-throttling").stdout == b"payload"
        assert proxy.failed == 7
        proxy.fail_next(1, status=400, code="InvalidArgument")  # not retried
        bad = run(env, "s3-get", "after-throttling", check=False)
        assert bad.returncode == 1 and "400 InvalidArgument" in bad.stderr.decode()
        assert proxy.failed == 8 and proxy.requests == 12  # every retry was one request
    finally:
        proxy.close()


def test_requests_are_counted_by_operation_and_outcome(s3):
    """sluice_object_store_requests_total (GET /metrics): every attempt, by operation and
    outcome, retries included; and the bytes each way."""
    proxy = S3.FaultProxy(s3.port)
    try:
        proxy.fail_next(2)  # the PUT's first two attempts: 503 SlowDown, then retried
        data = b"z" * 1000
        out = run(s3.env(endpoint=proxy.endpoint, prefix="t9/"), "s3-count", "counted", stdin=data).stdout
    finally:
        proxy.close()
    got = {}
    for line in out.decode().splitlines():
        name, value = line.rsplit(" ", 1)
        got[name] = float(value)
    series = 'sluice_object_store_requests_total{operation="%s",outcome="%s"}'
    assert {k: v for k, v in got.items() if k.startswith("sluice_object_store_requests_total")} == {
        series % ("PUT", "server_error"): 2, series % ("PUT", "ok"): 1, series % ("GET", "ok"): 1,
        series % ("GET", "not_found"): 1, series % ("LIST", "ok"): 1, series % ("DELETE", "ok"): 1}, got
    assert proxy.requests == 7
    assert got["sluice_object_store_sent_bytes_total"] == 3 * len(data)  # each attempt sends it
    # The GET's body, and the error and listing documents.
    assert got["sluice_object_store_received_bytes_total"] > len(data)


def test_503_until_the_deadline_gives_up_with_a_clear_error(s3):
    proxy = S3.FaultProxy(s3.port)
    try:
        env = s3.env(endpoint=proxy.endpoint, prefix="t4/")
        env["SLUICE_S3_RETRY_DEADLINE_MS"] = "1500"
        proxy.fail_always()
        start = time.monotonic()
        r = run(env, "s3-put", "never", stdin=b"payload", check=False)
        elapsed = time.monotonic() - start
        err = r.stderr.decode()
        assert r.returncode == 1, err
        assert "error timed_out:" in err and "PUT never" in err and "gave up after" in err, err
        assert "503 SlowDown (Please reduce your request rate.)" in err, err
        assert proxy.requests >= 3, proxy.requests
        assert elapsed < 10, elapsed
        assert "never" not in run(s3.env(prefix="t4/"), "s3-list", "").stdout.decode()
    finally:
        proxy.close()


def test_slow_store_attempts_time_out_and_are_retried(s3):
    proxy = S3.FaultProxy(s3.port)
    try:
        env = s3.env(endpoint=proxy.endpoint, prefix="t6/")
        env.update(SLUICE_S3_REQUEST_TIMEOUT_MS="400", SLUICE_S3_RETRY_DEADLINE_MS="1500")
        run(s3.env(prefix="t6/"), "s3-put", "slow", stdin=b"slow")
        proxy.delay = 0.2  # slower than usual, within one attempt's timeout
        assert run(env, "s3-get", "slow").stdout == b"slow"
        proxy.delay = 1.0  # every attempt times out
        start = time.monotonic()
        r = run(env, "s3-get", "slow", check=False)
        err = r.stderr.decode()
        assert r.returncode == 1 and "error timed_out:" in err and "no answer: Operation timed out" in err, err
        assert proxy.requests >= 3 and time.monotonic() - start < 10
    finally:
        proxy.close()


def test_unreachable_endpoint_gives_up(s3):
    env = s3.env(endpoint="http://127.0.0.1:%d" % S3.free_port(), prefix="t5/")
    env["SLUICE_S3_RETRY_DEADLINE_MS"] = "800"
    r = run(env, "s3-get", "x", check=False)
    err = r.stderr.decode()
    assert r.returncode == 1 and "error timed_out:" in err and "no answer: Failed to connect" in err, err


# ---------------------------------------------------------------- PostgreSQL

def test_catalog_schema_and_produce_commits(pg):
    env = pg_env(pg)
    assert run(env, "pg-schema").stdout == f"found 0 now {CATALOG_VERSION}\n".encode()
    assert run(env, "pg-schema").stdout == f"found {CATALOG_VERSION} now {CATALOG_VERSION}\n".encode()  # idempotent
    topic = "0123456789abcdef0123456789abcdef"
    assert run(env, "pg-topic", topic, "orders", "3").stdout == b"ok\n"
    dup = run(env, "pg-topic", topic, "orders", "3", check=False)
    assert dup.returncode == 1 and "error already_exists:" in dup.stderr.decode()

    # One object with batches of two partitions (two batches of partition 0).
    r = run(env, "pg-commit", "obj-1", topic + ":0:10", topic + ":1:5", topic + ":0:3")
    assert r.stdout.decode().split() == ["0", "0", "10"]
    r = run(env, "pg-commit", "obj-2", topic + ":1:2", topic + ":2:1")
    assert r.stdout.decode().split() == ["5", "0"]
    rows = pg.execute("SELECT partition_id, base_offset, last_offset, object_key, byte_position, byte_size "
                      "FROM sluice_batches ORDER BY partition_id, base_offset")
    assert rows == [(0, 0, 9, "obj-1", 0, 100), (0, 10, 12, "obj-1", 200, 100), (1, 0, 4, "obj-1", 100, 100),
                    (1, 5, 6, "obj-2", 0, 100), (2, 0, 0, "obj-2", 100, 100)]
    assert pg.execute("SELECT partition_id, high_watermark FROM sluice_partitions ORDER BY 1") == \
        [(0, 13), (1, 7), (2, 1)]
    assert pg.execute("SELECT object_key, size_bytes, state FROM sluice_objects ORDER BY 1") == \
        [("obj-1", 300, "live"), ("obj-2", 200, "live")]
    missing = run(env, "pg-commit", "obj-3", topic + ":7:1", check=False)
    assert missing.returncode == 1 and "error not_found:" in missing.stderr.decode()
    assert pg.execute("SELECT count(*) FROM sluice_objects WHERE object_key = 'obj-3'") == [(0,)]

    # Commits from several processes at once: offsets never overlap and leave no gap.
    procs = [subprocess.Popen([probe_bin(), "pg-commit", "par-%d" % i, topic + ":2:4", topic + ":0:1"],
                              env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for i in range(8)]
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    rows = pg.execute("SELECT base_offset, last_offset FROM sluice_batches WHERE partition_id = 2 "
                      "ORDER BY base_offset")
    assert rows[0] == (0, 0) and len(rows) == 9
    for (b1, l1), (b2, _) in zip(rows, rows[1:]):
        assert b2 == l1 + 1
    assert pg.execute("SELECT high_watermark FROM sluice_partitions WHERE partition_id = 2") == [(33,)]


def test_newer_catalog_is_refused(pg):
    env = pg_env(pg)
    run(env, "pg-schema")
    pg.execute("UPDATE sluice_catalog_version SET version = 99")
    try:
        r = run(env, "pg-schema", check=False)
        assert r.returncode == 1 and f"at version 99, newer than this build's {CATALOG_VERSION}" in r.stderr.decode()
    finally:
        pg.execute("UPDATE sluice_catalog_version SET version = %s", (CATALOG_VERSION,))


def test_catalog_upgrades_from_version_2(pg):
    env = pg_env(pg)
    run(env, "pg-schema")
    # A version 2 catalog: without the job leases of version 3, the users, policies and
    # expansions of version 4, the classic members' columns of version 5 and the
    # partitions' transactions of version 6, the expansions' starts of version 7 and the
    # share-partitions of version 8, the partitions' append times and clean offsets of
    # version 9, the transaction records' versions and the batches' append times of
    # version 10, the job leases' record of what their last run saw of version 11, the
    # group coordinator epochs of version 12. A transaction record written then starts at
    # version 1.
    for table in ("sluice_group_coordinators", "sluice_job_leases", "sluice_expansion_starts", "sluice_share_partitions",
                  "sluice_share_acquired", "sluice_expansions", "sluice_policy_attachments",
                  "sluice_policies", "sluice_scram_credentials", "sluice_change_versions",
                  "sluice_txn_open", "sluice_txn_aborted"):
        pg.execute(f"DROP TABLE {table}")
    pg.execute("DROP TABLE sluice_consumer_group_member_protocols")
    pg.execute("ALTER TABLE sluice_consumer_group_members DROP COLUMN classic_session_timeout_ms")
    pg.execute("ALTER TABLE sluice_partitions DROP COLUMN last_append_time_ms, DROP COLUMN clean_offset")
    pg.execute("ALTER TABLE sluice_txn_metadata DROP COLUMN version")
    pg.execute("ALTER TABLE sluice_batches DROP COLUMN append_time_ms")
    pg.execute("INSERT INTO sluice_txn_metadata VALUES ('old', 5, 0, -1, -1, -1, 60000, 'Empty', 0, -1, 0)")
    pg.execute("UPDATE sluice_catalog_version SET version = 2")
    assert run(env, "pg-schema").stdout == f"found 2 now {CATALOG_VERSION}\n".encode()
    assert pg.execute("SELECT transactional_id, version FROM sluice_txn_metadata") == [("old", 1)]
    pg.execute("DELETE FROM sluice_txn_metadata WHERE transactional_id = 'old'")
    assert pg.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = "
                      "'sluice_batches' AND column_name = 'append_time_ms'") == [(1,)]
    assert pg.execute("SELECT count(*) FROM sluice_job_leases") == [(0,)]
    assert pg.execute("SELECT count(*) FROM sluice_group_coordinators") == [(0,)]
    assert [r[0] for r in pg.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'sluice_job_leases' "
        "AND (column_name LIKE 'seen_%' OR column_name = 'wake_ms') ORDER BY 1")] == [
        "seen_configs", "seen_high_watermark", "seen_log_start", "seen_settings", "wake_ms"]
    assert pg.execute("SELECT subject, version FROM sluice_change_versions ORDER BY subject") == [
        ("expansions", 0), ("security", 0), ("txn_offsets", 0)]


def test_serialization_failures_are_retried(pg):
    pg.execute("CREATE TABLE IF NOT EXISTS sluice_probe_counter (id INTEGER PRIMARY KEY, v BIGINT NOT NULL)")
    pg.execute("DELETE FROM sluice_probe_counter")
    pg.execute("INSERT INTO sluice_probe_counter VALUES (1, 0)")
    env = {**os.environ, **pg_env(pg)}
    # 400 each (not fewer): the three must overlap for a conflict to happen, and on a loaded
    # machine a short run can end before the next process has started (seen with 60).
    procs = [subprocess.Popen([probe_bin(), "pg-increment", "400"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(3)]
    runs = 0
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        runs += int(out.decode().split()[1])
    # No increment lost, and some transactions did run again (40001 was seen).
    assert pg.execute("SELECT v FROM sluice_probe_counter") == [(1200,)]
    assert runs > 1200, runs


def test_a_pipeline_runs_in_order_and_stops_at_a_failure(pg):
    # pg_transaction::pipeline: statements sent in one round trip run one after another in
    # the transaction; the first failure stops the rest and rolls everything back.
    pg.execute("CREATE TABLE IF NOT EXISTS sluice_probe_pipeline (id INTEGER PRIMARY KEY)")
    pg.execute("DELETE FROM sluice_probe_pipeline")
    env = pg_env(pg)
    out = run(env, "pg-pipeline", "commit", "INSERT INTO sluice_probe_pipeline VALUES (1)",
              "INSERT INTO sluice_probe_pipeline VALUES (2)", "SELECT count(*) FROM sluice_probe_pipeline")
    # Each statement saw the ones before it; COMMIT's (empty) rows last.
    assert out.stdout.decode().split("\n") == ["2", "statements 4", ""]
    out = run(env, "pg-pipeline", "after", "INSERT INTO sluice_probe_pipeline VALUES (3)",
              "SELECT max(id) FROM sluice_probe_pipeline")
    assert out.stdout.decode().split("\n") == ["3", "statements 2", ""]
    # The duplicate key fails; the insert before it is rolled back, the one after never ran.
    failed = run(env, "pg-pipeline", "commit", "INSERT INTO sluice_probe_pipeline VALUES (4)",
                 "INSERT INTO sluice_probe_pipeline VALUES (1)", "INSERT INTO sluice_probe_pipeline VALUES (5)",
                 check=False)
    assert failed.returncode == 1 and b"error already_exists" in failed.stderr and b"23505" in failed.stderr
    assert pg.execute("SELECT id FROM sluice_probe_pipeline ORDER BY id") == [(1,), (2,), (3,)]


class Session:
    """sluice-shared-probe pg-session: statements in, answers out, one connection."""

    def __init__(self, env):
        self.proc = subprocess.Popen([probe_bin(), "pg-session"], env={**os.environ, **env}, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        P.H.register_proc(self.proc)

    def send(self, sql):
        self.proc.stdin.write(sql + "\n")
        self.proc.stdin.flush()

    def answer(self):
        lines = []
        while True:
            line = self.proc.stdout.readline()
            assert line, "the probe exited: %s" % self.proc.stderr.read()
            line = line.rstrip("\n")
            if line.startswith("done") or line.startswith("error"):
                return lines, line
            lines.append(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def test_database_restart_midway_reconnects(pg):
    s = Session(pg_env(pg, SLUICE_PG_RETRY_DEADLINE_MS=30000))
    try:
        s.send("SELECT 40 + 2")
        assert s.answer() == (["42"], "done reconnects=0")
        pg.stop()
        # Sent while the database is down: retried until it is back.
        s.send("SELECT 'after restart'")
        time.sleep(1.0)
        pg.start()
        assert s.answer() == (["after restart"], "done reconnects=1")
        s.send("SELECT 1")
        assert s.answer() == (["1"], "done reconnects=1")
    finally:
        s.close()


def test_database_down_past_the_deadline_is_a_clear_error(pg):
    s = Session(pg_env(pg, SLUICE_PG_RETRY_DEADLINE_MS=1000))
    try:
        s.send("SELECT 1")
        assert s.answer() == (["1"], "done reconnects=0")
        pg.stop()
        start = time.monotonic()
        s.send("SELECT 2")
        lines, last = s.answer()
        assert last.startswith("error io_error: PostgreSQL at postgresql://postgres@127.0.0.1:%d/postgres "
                               "unreachable after" % pg.port), last
        assert time.monotonic() - start < 10
    finally:
        pg.start()
        s.close()


def _listener(env, channel, count, timeout_ms=30000):
    proc = subprocess.Popen([probe_bin(), "pg-listen", channel, str(timeout_ms), str(count)],
                            env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    P.H.register_proc(proc)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l.rstrip("\n")) for l in proc.stdout], daemon=True).start()
    assert lines.get(timeout=30) == "listening", proc.stderr.read()
    return proc, lines


def test_notify_wakes_a_waiter(pg):
    env = pg_env(pg)
    proc, lines = _listener(env, "sluice_commits", 2)
    start = time.monotonic()
    run(env, "pg-notify", "sluice_commits", "orders/0:13")
    assert lines.get(timeout=10) == "notify sluice_commits orders/0:13"
    woke = time.monotonic() - start
    pg.execute("NOTIFY sluice_commits, 'second'")
    assert lines.get(timeout=10) == "notify sluice_commits second"
    assert proc.wait(timeout=10) == 0
    assert woke < 2.0, woke  # includes starting the notifying probe


def test_waiter_listens_again_after_a_restart(pg):
    env = pg_env(pg, SLUICE_PG_RETRY_DEADLINE_MS=30000)
    proc, lines = _listener(env, "sluice_commits", 1, timeout_ms=60000)
    pg.stop()
    pg.start()
    assert lines.get(timeout=30) == "reconnected"
    run(env, "pg-notify", "sluice_commits", "after")
    assert lines.get(timeout=10) == "notify sluice_commits after"
    assert proc.wait(timeout=10) == 0


# ---------------------------------------------------------------- scripts/cluster

def test_cluster_script_up_kill_start_down(tmp_path):
    """docs/shared-mode.md's dev cluster: the engines start, cluster.json and env say
    where, a killed service starts again on its port with its data, down stops all."""
    import json
    d = tmp_path / "cluster"
    script = str(REPO / "scripts" / "cluster")
    try:
        up = subprocess.run([script, "up", str(d), "--brokers", "0"], capture_output=True, text=True, timeout=300)
        assert up.returncode == 0, up.stderr
        state = json.loads((d / "cluster.json").read_text())
        assert state["brokers"] == [] and state["postgres"].startswith("postgresql://postgres@127.0.0.1:")
        env = dict(line[len("export "):].split("=", 1) for line in (d / "env").read_text().splitlines())
        assert env["SLUICE_S3_ENDPOINT"] == state["s3"] and env["SLUICE_PG_URL"] == state["postgres"]
        run(env, "pg-schema")
        run(env, "s3-put", "kept", stdin=b"kept")

        for service in ("postgres", "s3"):
            k = subprocess.run([script, "kill", str(d), service], capture_output=True, text=True, timeout=60)
            assert k.returncode == 0 and k.stdout == "killed %s\n" % service, k.stderr
        down_env = dict(env, SLUICE_S3_RETRY_DEADLINE_MS="300", SLUICE_PG_RETRY_DEADLINE_MS="300")
        assert run(down_env, "s3-get", "kept", check=False).returncode == 1
        assert run(down_env, "pg-exec", "SELECT 1", check=False).returncode == 1
        for service in ("postgres", "s3"):
            s = subprocess.run([script, "start", str(d), service], capture_output=True, text=True, timeout=300)
            assert s.returncode == 0, s.stderr
        # Same addresses, same data.
        assert json.loads((d / "cluster.json").read_text())["s3"] == state["s3"]
        assert run(env, "s3-get", "kept").stdout == b"kept"
        assert run(env, "pg-exec", "SELECT version FROM sluice_catalog_version").stdout == f"{CATALOG_VERSION}\n".encode()
        unknown = subprocess.run([script, "kill", str(d), "7"], capture_output=True, text=True, timeout=60)
        assert unknown.returncode != 0 and "no broker or service '7'" in unknown.stderr
    finally:
        subprocess.run([script, "down", str(d)], capture_output=True, timeout=120)
    st = json.loads(subprocess.run([script, "status", str(d)], capture_output=True, text=True, timeout=60).stdout)
    assert not st["services"]["postgres"]["running"] and not st["services"]["s3"]["running"]
