"""A full data disk: answered, and recovered from inside Sluice (docs/operations.md, "Full disk").

Each test puts the broker's data directory on a small ext4 file system of its own: a file
in pytest's tmp dir, made with mkfs.ext4 (no blocks reserved for root, who runs the broker
here) and loop-mounted; it is unmounted and its loop device detached at teardown, whatever
the outcome. Loop mounting needs root: without it the tests fail, naming the reason (CI
runs as root). The disk is filled with one file, which the test deletes to free space.
"""

import os
import shutil
import subprocess
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import NewTopic

import kproto as K
import sluice_helpers as H
import sql_helpers as S

DISK_MIB = 64
KAFKA_STORAGE_ERROR = 56
CALL_TIMEOUT = 30.0


def _run(cmd, timeout=60):
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)


class SmallDisk:
    def __init__(self, root):
        self.image = root / "disk.img"
        self.mnt = root / "mnt"
        self.filler = None

    def make(self):
        if os.geteuid() != 0:
            pytest.fail("test_full_disk needs root to loop-mount a small file system "
                        "(mkfs.ext4 + mount -o loop); run it as root, as CI does", pytrace=False)
        with open(self.image, "wb") as f:
            f.truncate(DISK_MIB << 20)
        r = _run(["mkfs.ext4", "-q", "-F", "-m", "0", str(self.image)])
        assert r.returncode == 0, "mkfs.ext4 failed: %s" % r.stderr.decode(errors="replace")
        self.mnt.mkdir()
        r = _run(["mount", "-o", "loop", str(self.image), str(self.mnt)])
        assert r.returncode == 0, "mount -o loop failed: %s" % r.stderr.decode(errors="replace")

    def loop_devices(self):
        r = _run(["losetup", "-j", str(self.image)])
        return [ln.split(":", 1)[0] for ln in r.stdout.decode().splitlines() if ln.strip()]

    def teardown(self):
        problems = []
        if os.path.ismount(self.mnt):
            for _ in range(20):
                if _run(["umount", str(self.mnt)]).returncode == 0:
                    break
                time.sleep(0.5)
            else:
                _run(["umount", "-l", str(self.mnt)])
                problems.append("umount %s needed -l" % self.mnt)
        for dev in self.loop_devices():
            _run(["losetup", "-d", dev])
        left = self.loop_devices()
        if left:
            problems.append("loop devices still attached: %s" % left)
        if self.image.exists():
            self.image.unlink()
        return problems

    def free_bytes(self):
        st = os.statvfs(self.mnt)
        return st.f_bavail * st.f_frsize

    def fill(self):
        """Writes one file until the disk refuses more (ENOSPC)."""
        self.filler = self.mnt / "filler"
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for chunk in (1 << 20, 64 << 10, 4096, 512):
                buf = b"\0" * chunk
                try:
                    while True:
                        os.write(fd, buf)
                except OSError as e:
                    assert e.errno == 28, "filling the disk: %s" % e
            os.fsync(fd)
        finally:
            os.close(fd)
        assert self.free_bytes() < (64 << 10), "disk not full: %d bytes free" % self.free_bytes()

    def unfill(self):
        if self.filler is not None and self.filler.exists():
            self.filler.unlink()
        self.filler = None


@pytest.fixture
def disk(tmp_path):
    d = SmallDisk(tmp_path)
    try:
        d.make()
        yield d
    finally:
        problems = d.teardown()
    assert not problems, problems


@pytest.fixture
def disk_broker(disk, broker_factory):
    """make(extra_args) -> a broker whose data directory is on the small disk. Declared after
    `disk`, so its brokers stop before the disk is unmounted."""
    def make(extra_args=()):
        b = broker_factory(extra_args=list(S.SQL_ARGS) + list(extra_args), start=False)
        shutil.rmtree(b.data_dir, ignore_errors=True)
        b.data_dir = disk.mnt / "data"
        b.data_dir.mkdir(exist_ok=True)
        return b.start()
    return make


def produce_values(bootstrap, topic, partition, values):
    p = Producer(H.producer_conf(bootstrap))
    errors = []
    for v in values:
        p.produce(topic, value=v, partition=partition,
                  on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert p.flush(60) == 0, "records still queued"
    assert not errors, errors[:3]


def raw_produce(bootstrap, topic, partition, value):
    with K.Conn(bootstrap) as c:
        return K.produce_v3(c, topic, partition, K.encode_batch([(H.now_ms(), None, value, [])]))


def fetched_values(bootstrap, topic, partition):
    with K.Conn(bootstrap) as c:
        recs, hw = K.fetch_all_v4(c, topic, partition)
    return [r.value for r in recs], hw


def offsets(bootstrap, topic, partitions):
    with K.Conn(bootstrap) as c:
        return K.list_offsets(c, topic, {p: K.LATEST_TIMESTAMP for p in partitions})


def sql_count(b, topic):
    rows = S.http_rows(b.http, "SELECT count(*), sum(length(value)) FROM kafka_topics.%s" % topic)
    return tuple(rows[0])


def psql_count(b, topic):
    return S.psql_lines(b.pg, "SELECT count(*) FROM kafka_topics.%s" % topic)


def admin(b):
    return H.admin_client(b.bootstrap)


def test_full_disk_serves_reads_and_frees_space(disk, disk_broker):
    b = disk_broker()
    H.create_topic(b.bootstrap, "keep", 2)
    H.create_topic(b.bootstrap, "big", 1, config={"segment.bytes": str(1 << 20)})
    H.create_topic(b.bootstrap, "gone", 1)
    keep = [b"keep-%d" % i * 10 for i in range(300)]
    produce_values(b.bootstrap, "keep", 0, keep)
    produce_values(b.bootstrap, "big", 0, [os.urandom(20000) for _ in range(600)])     # ~12 MB
    produce_values(b.bootstrap, "gone", 0, [os.urandom(20000) for _ in range(600)])
    want_sum = sum(len(v) for v in keep)
    assert sql_count(b, "keep") == (300, want_sum)  # a session before the disk fills

    disk.fill()

    # Produce is refused with KAFKA_STORAGE_ERROR (retriable); fetch still serves.
    r = raw_produce(b.bootstrap, "keep", 0, b"x" * 100000)
    assert r["error"] == KAFKA_STORAGE_ERROR, r
    values, hw = fetched_values(b.bootstrap, "keep", 0)
    assert hw == 300 and values == keep
    lo = offsets(b.bootstrap, "keep", [0, 1])
    assert lo[0] == dict(error=0, timestamp=-1, offset=300) and lo[1]["offset"] == 0, lo

    # New SQL sessions, over HTTP and the PostgreSQL wire, read while the disk is full.
    for _ in range(3):
        assert sql_count(b, "keep") == (300, want_sum)
    assert psql_count(b, "keep") == ["300"]

    # A write the broker cannot make is KAFKA_STORAGE_ERROR, not UNKNOWN_SERVER_ERROR.
    adm = admin(b)
    fs = adm.create_topics([NewTopic("newone", 1, 1)])
    with pytest.raises(Exception) as e:
        fs["newone"].result(CALL_TIMEOUT)
    assert e.value.args[0].code() == KafkaError.KAFKA_STORAGE_ERROR, e.value
    with K.Conn(b.bootstrap) as c:
        res = K.alter_configs(c, 0, [(K.RESOURCE_TOPIC, "keep", [("retention.ms", "3600000")])])
    assert [(x["resource_name"], x["error"]) for x in res] == [("keep", KAFKA_STORAGE_ERROR)], res
    with K.Conn(b.bootstrap) as c:
        res = K.incremental_alter_configs(c, 1, [(K.RESOURCE_TOPIC, "keep", [("retention.ms", K.OP_SET, "1")])])
        assert [(x["resource_name"], x["error"]) for x in res] == [("keep", KAFKA_STORAGE_ERROR)], res
        res = K.create_partitions(c, 1, [("keep", 3, None)])
        assert res["keep"][0] == KAFKA_STORAGE_ERROR, res
        # A committed offset that cannot be stored is not acknowledged.
        assert K.offset_commit(c, 2, "g-full", {"keep": [(0, 42, None)]}) == {("keep", 0): KAFKA_STORAGE_ERROR}
        err, got = K.offset_fetch_one(c, 1, "g-full", {"keep": [0]})
        assert err == 0 and got[("keep", 0)][0] == -1, (err, got)
    # Nothing of those changed: the answers were true.
    assert sorted(adm.list_topics(timeout=10).topics["keep"].partitions) == [0, 1]
    with K.Conn(b.bootstrap) as c:
        d = K.describe_configs(c, 1, [(K.RESOURCE_TOPIC, "keep", ["retention.ms"])])
    assert [(x["name"], x["value"]) for x in d[0]["configs"]] == [("retention.ms", "604800000")], d

    # DeleteRecords frees space on a full disk: the log-start-offset file is written (the
    # space reserve lets it) and the segments below it go.
    before = disk.free_bytes()
    with K.Conn(b.bootstrap) as c:
        got = K.delete_records(c, 1, {"big": [(0, 500)]})
    assert got == {("big", 0): (500, 0)}, got
    assert disk.free_bytes() > before + (5 << 20), (before, disk.free_bytes())
    with K.Conn(b.bootstrap) as c:
        assert K.log_start_offset(c, "big") == 500

    # DeleteTopics too: the catalog commits and the data goes.
    disk.fill()
    before = disk.free_bytes()
    fs = adm.delete_topics(["gone"], operation_timeout=20)
    assert fs["gone"].result(CALL_TIMEOUT) is None
    assert "gone" not in H.list_topic_names(b.bootstrap)
    assert disk.free_bytes() > before + (5 << 20), (before, disk.free_bytes())
    assert not (b.data_dir / "logs" / "gone-0").exists()

    # With room again, producing works and every record is where it was.
    disk.unfill()
    r = raw_produce(b.bootstrap, "keep", 0, b"after")
    assert r["error"] == 0 and r["base_offset"] == 300, r
    values, hw = fetched_values(b.bootstrap, "keep", 0)
    assert hw == 301 and values == keep + [b"after"]
    assert sql_count(b, "keep") == (301, want_sum + 5)


@pytest.mark.parametrize("stop", ["sigterm", "kill9"])
def test_restart_on_a_full_disk(disk, disk_broker, stop):
    """A broker that starts on a full disk serves every partition (reads, SQL, offsets), and
    produce works again once space is freed, without a restart."""
    b = disk_broker()
    H.create_topic(b.bootstrap, "t", 3)
    want = {p: [b"p%d-%d" % (p, i) for i in range(200 + p)] for p in range(3)}
    for p, vals in want.items():
        produce_values(b.bootstrap, "t", p, vals)
    assert sql_count(b, "t")[0] == sum(len(v) for v in want.values())
    disk.fill()
    if stop == "sigterm":
        b.stop()  # exits 0, though it cannot write every index (no clean-shutdown marker)
    else:
        b.kill9()
    b.start()

    lo = offsets(b.bootstrap, "t", [0, 1, 2])
    assert {p: (d["error"], d["offset"]) for p, d in lo.items()} == {p: (0, len(v)) for p, v in want.items()}, lo
    for p, vals in want.items():
        assert fetched_values(b.bootstrap, "t", p) == (vals, len(vals))
    assert sql_count(b, "t")[0] == sum(len(v) for v in want.values())
    assert psql_count(b, "t") == [str(sum(len(v) for v in want.values()))]
    r = raw_produce(b.bootstrap, "t", 0, b"y" * 100000)
    assert r["error"] == KAFKA_STORAGE_ERROR, r

    disk.unfill()
    for p, vals in want.items():
        r = raw_produce(b.bootstrap, "t", p, b"after")
        assert r["error"] == 0 and r["base_offset"] == len(vals), (p, r)
    b.restart()  # clean now: every record is back, the new ones included
    for p, vals in want.items():
        assert fetched_values(b.bootstrap, "t", p) == (vals + [b"after"], len(vals) + 1)


def test_out_of_service_partition_answers_an_error_and_comes_back(disk, disk_broker):
    """A partition that cannot load is out of service: ListOffsets answers KAFKA_STORAGE_ERROR
    (never offset 0), and once the cause is gone the partition serves again, without a
    restart. The cause here is a log-start-offset that is a directory (EISDIR on read)."""
    b = disk_broker()
    H.create_topic(b.bootstrap, "t", 2)
    produce_values(b.bootstrap, "t", 0, [b"v%d" % i for i in range(50)])
    produce_values(b.bootstrap, "t", 1, [b"w%d" % i for i in range(7)])
    b.stop()
    bad = b.data_dir / "logs" / "t-0" / "log-start-offset"
    bad.mkdir()
    b.start()

    lo = offsets(b.bootstrap, "t", [0, 1])
    assert lo[0]["error"] == KAFKA_STORAGE_ERROR and lo[0]["offset"] == -1, lo
    assert lo[1] == dict(error=0, timestamp=-1, offset=7), lo
    with K.Conn(b.bootstrap) as c:
        assert K.fetch_v4(c, "t", 0, 0)["error"] == KAFKA_STORAGE_ERROR
    assert raw_produce(b.bootstrap, "t", 0, b"no")["error"] == KAFKA_STORAGE_ERROR

    bad.rmdir()
    H.wait_until("partition t-0 back in service",
                 lambda: offsets(b.bootstrap, "t", [0])[0] == dict(error=0, timestamp=-1, offset=50),
                 timeout=30)
    assert fetched_values(b.bootstrap, "t", 0) == ([b"v%d" % i for i in range(50)], 50)
    assert raw_produce(b.bootstrap, "t", 0, b"yes")["base_offset"] == 50


def needs_room(table):
    """A write that needs more room than a full disk has, on either engine: a CREATE TABLE of
    a table holding 8 KB that does not compress. (DuckDB's WAL entry for an empty table's
    CREATE fits in the slack of the WAL file's last block, so it succeeds on a full disk.)"""
    return "CREATE TABLE %s AS SELECT '%s' AS x" % (table, os.urandom(4096).hex())


def disk_full_error(r):
    """An HTTP answer of a write refused for want of space: 503, kind disk_full, 53100."""
    assert r.status == 503, r
    err = r.json()["error"]
    assert (err["kind"], err["sqlstate"]) == ("disk_full", "53100"), err
    assert "disk is full" in err["message"], err
    return err


def test_sql_sessions_after_a_write_failed_on_a_full_disk(disk, disk_broker):
    """Issue 33, the steps that crashed the broker with SIGBUS: one SQL statement, the disk
    fills, a restart, one SQL write fails for want of space; the next session stored into a
    hole of the mapped main.db-shm. Sessions read on, and writes fail with 53100 disk_full."""
    b = disk_broker()
    H.create_topic(b.bootstrap, "t", 1)
    produce_values(b.bootstrap, "t", 0, [b"v%d" % i for i in range(50)])
    assert sql_count(b, "t")[0] == 50
    # No space reserve (spent before), so that nothing frees room at the restart.
    (b.data_dir / "logs" / ".space-reserve").unlink()
    disk.fill()
    b.stop()
    b.start()
    disk_full_error(S.http_sql(b.http, needs_room("notes")))
    for _ in range(3):
        assert sql_count(b, "t")[0] == 50
        assert S.http_rows(b.http, "SELECT count(*) FROM system.topics WHERE topic = 't'") == [[1]]
    conn = S.pg_connect(b.pg)
    try:
        e = S.pg_error(conn, needs_room("more"))
        assert e.pgcode == "53100", (e.pgcode, str(e))
        assert S.pg_rows(conn, "SELECT count(*) FROM kafka_topics.t") == [(50,)]
    finally:
        conn.close()
    b.assert_alive()
    disk.unfill()
    assert S.http_rows(b.http, "CREATE TABLE notes(x TEXT)") == []
    assert S.http_rows(b.http, "INSERT INTO notes VALUES ('a')") == []
    assert S.http_rows(b.http, "SELECT x FROM notes") == [["a"]]


def test_restart_on_a_full_disk_before_any_sql(disk, disk_broker):
    """Issue 33: no SQL had run before the disk filled, so the user database was not in WAL
    mode yet; after a restart every statement failed (XX000 on journal_mode=WAL). Reads of
    topics and system tables work, and the user database works once there is room."""
    b = disk_broker()
    H.create_topic(b.bootstrap, "t", 1)
    produce_values(b.bootstrap, "t", 0, [b"w%d" % i for i in range(30)])
    disk.fill()
    b.stop()
    b.start()
    for _ in range(2):
        assert sql_count(b, "t")[0] == 30
        assert S.http_rows(b.http, "SELECT count(*) FROM system.topics WHERE topic = 't'") == [[1]]
    assert psql_count(b, "t") == ["30"]
    disk.fill()  # again: opening the WAL indexes may have taken the space reserve
    disk_full_error(S.http_sql(b.http, needs_room("later")))
    assert sql_count(b, "t")[0] == 30
    disk.unfill()
    assert S.http_rows(b.http, "CREATE TABLE later(x TEXT)") == []
    assert S.http_rows(b.http, "INSERT INTO later VALUES ('z')") == []
    assert S.http_rows(b.http, "SELECT x FROM later") == [["z"]]
    b.restart()
    assert S.http_rows(b.http, "SELECT x FROM later") == [["z"]]
