"""Fixtures for the Sluice integration tests.

`Broker` runs `sluice serve` on a temporary data directory, listening on
127.0.0.1 with port 0, and learns the port from the `listening kafka
HOST:PORT` line the broker prints on stdout.  Every process started through
these fixtures is killed at teardown, whatever the outcome of the test.

Run with Debian's interpreter (it has the client libraries):
    /usr/bin/python3 -m pytest tests/integration -q
"""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cluster_mode as CM  # noqa: E402
import sluice_helpers as H  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def pytest_sessionstart(session):
    """Under a confluent-kafka venv (tests.cmake), the version it must hold."""
    want = os.environ.get("SLUICE_EXPECT_CONFLUENT_KAFKA")
    if want:
        import confluent_kafka
        got = confluent_kafka.version()  # a (text, int) pair before 2.16, the text since
        got = got[0] if isinstance(got, tuple) else got
        if got != want:
            pytest.exit("confluent-kafka %s expected under %s, found %s: run `make test-deps`"
                        % (want, sys.executable, got), returncode=1)


def pytest_collection_modifyitems(config, items):
    """SLUICE_TEST_CLUSTER=N (cluster_mode.py): tests marked shared_missing or single_node
    are skipped, with the reason in pytest's summary."""
    if not CM.brokers_wanted():
        return
    for item in items:
        reason = CM.skip_reason(item)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


STARTUP_TIMEOUT = 20.0
STOP_TIMEOUT = 30.0

register_proc = H.register_proc
kill_proc = H.kill_proc
tail = H.tail


def sluice_bin():
    return os.environ.get("SLUICE_BIN") or str(REPO / "build" / "sluice")


# The brokers of the suite form a new group's first generation after 300 ms, not after
# the broker's default of 3 s (Kafka's), so that tests which start consumers do not wait
# 2.7 s more each. A test that gives the flag itself (or a --config file) keeps its own.
GROUP_DELAY_FLAG = "--group-initial-rebalance-delay-ms"
TEST_GROUP_DELAY_MS = "300"


def with_test_group_delay(cmd):
    if any(a == GROUP_DELAY_FLAG or a.startswith(GROUP_DELAY_FLAG + "=") or a == "--config"
           or a.startswith("--config=") for a in cmd):
        return cmd
    return cmd + [GROUP_DELAY_FLAG, TEST_GROUP_DELAY_MS]


def require_binary():
    path = sluice_bin()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail("sluice binary not found or not executable at %s "
                    "(build it, or point SLUICE_BIN at it)" % path, pytrace=False)
    return path



class Broker:
    """One `sluice serve` process (restartable on the same data dir)."""

    def __init__(self, workdir, extra_args=(), listen="127.0.0.1:0", advertise=(), name="broker"):
        self.workdir = Path(workdir)
        self.name = name
        self.data_dir = self.workdir / ("%s-data" % name)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.extra_args = list(extra_args)
        self.listen = listen
        self.advertise = list(advertise)
        self.proc = None
        self.bootstrap = None
        self.listeners = []
        self.kafka_lines = 1  # `listening kafka` lines start() waits for
        self.pg = None      # "HOST:PORT" of the `listening pg` line (--pg)
        self.http = None    # "HOST:PORT" of the `listening http` line (--http)
        self.stdout_lines = []
        self.stderr_paths = []
        self.starts = 0
        self.killed = False
        self.stopped = False
        self._reader = None

    # -- lifecycle ---------------------------------------------------------
    def command(self):
        cmd = [require_binary(), "serve", "--data-dir", str(self.data_dir), "--listen", self.listen]
        for a in self.advertise:
            cmd += ["--advertise", a]
        return with_test_group_delay(cmd + self.extra_args)

    def start(self):
        assert self.proc is None or self.proc.poll() is not None, "broker already running"
        self.starts += 1
        self.killed = False
        self.stopped = False
        stderr_path = self.workdir / ("%s-stderr-%d.log" % (self.name, self.starts))
        self.stderr_paths.append(stderr_path)
        errf = open(stderr_path, "wb")
        try:
            # Own session / process group, so kill9() and teardown reach every process of the
            # broker even if SLUICE_BIN is a wrapper script.
            self.proc = register_proc(subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errf,
                cwd=str(self.workdir), start_new_session=True))
        finally:
            errf.close()
        listeners = []
        self.listeners = listeners
        self.pg = None
        self.http = None
        # With --pg / --http the broker prints those lines after the kafka lines; start()
        # returns once every expected line is in.
        want_other = {k for k in ("pg", "http") if self._has_flag("--" + k)}
        seen = set()
        got = threading.Event()
        lines = []
        self.stdout_lines = lines
        proc = self.proc

        def done():
            return len(listeners) >= self.kafka_lines and want_other <= seen

        def reader():
            # Keep draining stdout for the broker's whole life so it never blocks.
            for raw in iter(proc.stdout.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\n")
                lines.append(line)
                parts = line.split()
                if len(parts) == 3 and parts[0] == "listening":
                    if parts[1] == "kafka":
                        listeners.append(parts[2])
                    elif parts[1] in ("pg", "http"):
                        setattr(self, parts[1], parts[2])
                        seen.add(parts[1])
                    if done():
                        got.set()
            got.set()

        self._reader = threading.Thread(target=reader, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not done():
            if time.monotonic() > deadline:
                H.kill_group(self.proc)
                raise AssertionError("broker did not print %d 'listening kafka' lines (and %r) within %.0fs\n"
                                     "stdout: %r\nstderr tail:\n%s" % (self.kafka_lines, sorted(want_other),
                                                                       STARTUP_TIMEOUT, lines, tail(stderr_path)))
            if proc.poll() is not None:
                self._reader.join(timeout=2)
                if done():
                    break
                raise AssertionError("broker exited with code %s during startup\nstdout: %r\nstderr tail:\n%s"
                                     % (proc.returncode, lines, tail(stderr_path)))
            got.wait(0.1)
        self._take_listeners(listeners)
        return self

    def _take_listeners(self, listeners):
        """Sets .bootstrap and .port from the `listening kafka` values."""
        self.bootstrap = listeners[0]
        host, port = self.bootstrap.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0, "unexpected listener line %r" % self.bootstrap
        self.port = int(port)

    def _has_flag(self, flag):
        return any(a == flag or a.startswith(flag + "=") for a in self.command())

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, wait, and assert a clean exit (code 0)."""
        assert self.proc is not None, "broker never started"
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                H.kill_group(self.proc)
                raise AssertionError("broker did not exit within %.0fs of SIGTERM\nstderr tail:\n%s"
                                     % (timeout, self.stderr_tail()))
        if self._reader:
            self._reader.join(timeout=5)
        self.stopped = True
        rc = self.proc.returncode
        assert rc == 0, "broker exited with code %s after SIGTERM (expected 0)\nstderr tail:\n%s" % (
            rc, self.stderr_tail())

    def kill9(self):
        assert self.proc is not None, "broker never started"
        H.kill_group(self.proc)
        self.proc.wait(timeout=STOP_TIMEOUT)
        self.killed = True
        if self._reader:
            self._reader.join(timeout=5)

    def restart(self):
        """Stop cleanly if running, then start again on the same data dir."""
        if self.running():
            self.stop()
        return self.start()

    def stderr_tail(self, n=60):
        if not self.stderr_paths:
            return "<no stderr captured>"
        return tail(self.stderr_paths[-1], n)

    def log_lines(self):
        """The lines the broker logged since its last start."""
        return self.stderr_paths[-1].read_text(errors="replace").splitlines()

    def assert_alive(self):
        assert self.running(), "broker process died (exit code %s)\nstderr tail:\n%s" % (
            self.proc.returncode if self.proc else None, self.stderr_tail())

    def teardown(self):
        """Clean stop if possible (asserted), and always make sure the process is gone."""
        try:
            if self.proc is not None and not self.stopped and not self.killed and not self.running():
                raise AssertionError("broker exited on its own with code %s during the test\nstderr tail:\n%s"
                                     % (self.proc.returncode, self.stderr_tail()))
            if self.running():
                self.stop(timeout=20)
        finally:
            if self.proc is not None:
                H.kill_group(self.proc)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        module = item.getparent(pytest.Module)
        for b in getattr(item, "_sluice_brokers", []) + getattr(module, "_sluice_brokers", []):
            for path in getattr(b, "report_paths", b.stderr_paths[-2:]):
                rep.sections.append(("sluice stderr %s (%s)" % (b.name, path.name), tail(path, 80)))


def _teardown_brokers(brokers):
    """Stops every broker (checking its shutdown), kills what is left, then reports."""
    errors = []
    for b in brokers:
        try:
            b.teardown()
        except AssertionError as e:
            errors.append(str(e))
        finally:
            if b.proc is not None:
                H.kill_group(b.proc)
    if errors:
        pytest.fail("broker teardown problem:\n" + "\n".join(errors), pytrace=False)


def _broker_factory(request, workdir):
    made = []
    request.node._sluice_brokers = made
    if CM.brokers_wanted():
        yield from _cluster_factory(request, made)
        return

    def make(extra_args=(), listen="127.0.0.1:0", advertise=(), start=True):
        b = Broker(workdir, extra_args=extra_args, listen=listen, advertise=advertise,
                   name="broker%d" % (len(made) + 1))
        made.append(b)
        if start:
            b.start()
        return b

    yield make
    _teardown_brokers(made)


def _cluster_factory(request, made):
    """broker_factory in a cluster run: every broker is a view of the module's cluster."""
    cluster = request.getfixturevalue("sluice_cluster")

    def make(extra_args=(), listen="127.0.0.1:0", advertise=(), start=True):
        if extra_args or listen != "127.0.0.1:0" or advertise or not start:
            pytest.fail("a cluster run cannot give one broker flags, listeners or a late start (%r): "
                        "mark the test @pytest.mark.single_node(...)" % ((extra_args, listen, advertise, start),),
                        pytrace=False)
        v = cluster.view()
        made.append(v)
        return v

    yield make


@pytest.fixture(scope="module")
def sluice_cluster(tmp_path_factory):
    """SLUICE_TEST_CLUSTER=N: the module's scripts/cluster of N brokers (cluster_mode.py);
    their groups form after 300 ms, as the single-node brokers' do. Retention by time is
    off (retention.ms=-1): the suites write records with fixed timestamps of 2023, which a
    shared-mode broker's background retention (a job per partition due at once, then every
    interval) would delete within seconds of the produce, where a single-node broker's
    first retention check comes after 5 minutes."""
    n = CM.brokers_wanted()
    if not n:
        pytest.fail("sluice_cluster is for SLUICE_TEST_CLUSTER=N runs", pytrace=False)
    require_binary()
    c = CM.Cluster(tmp_path_factory.mktemp("cluster"), n,
                   [GROUP_DELAY_FLAG, TEST_GROUP_DELAY_MS, "--topic-default", "retention.ms=-1"])
    try:
        yield c.up()
    finally:
        c.down()


@pytest.fixture
def broker_factory(request, tmp_path):
    """Make brokers: broker_factory(extra_args=[...], advertise=[...], listen=..., start=True)."""
    yield from _broker_factory(request, tmp_path)


@pytest.fixture(scope="module")
def module_broker_factory(request, tmp_path_factory):
    """broker_factory for brokers shared by the tests of one module (stopped after its last test)."""
    yield from _broker_factory(request, tmp_path_factory.mktemp("module-brokers"))


@pytest.fixture
def broker(broker_factory):
    """A default broker (no auto-creation)."""
    return broker_factory()


@pytest.fixture
def procs():
    """Register Popen objects here; they are killed at teardown."""
    started = []
    yield started
    for p in started:
        kill_proc(p)


@pytest.fixture
def topic_name(request):
    return H.unique_topic(request.node.name)


# trylast: after pytest has torn down the fixtures (module-scoped brokers are still up when -x ends
# a session early, and must get their clean SIGTERM stop first).
@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    H.kill_all_procs()


@pytest.fixture(scope="module")
def postgres_cluster(tmp_path_factory):
    """Debian's PostgreSQL 15, private to the module: what the suites that compare
    Sluice's answers with PostgreSQL's run the same statements on
    (postgres_helpers.PostgresCluster)."""
    import postgres_helpers as P
    cluster = P.PostgresCluster(tmp_path_factory.mktemp("pg")).start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def postgres(postgres_cluster, request):
    """An autocommit psycopg2 connection to the module's PostgreSQL, after the module's
    SETUP statements (its tables and rows) ran there."""
    conn = postgres_cluster.connect()
    with conn.cursor() as cur:
        for sql in getattr(request.module, "SETUP", ()):
            cur.execute(sql)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def compared_broker(module_broker_factory, request):
    """A broker serving SQL (sql_helpers.SQL_ARGS) after the module's SETUP statements ran
    on it too (over HTTP): the other side of `postgres`."""
    import sql_helpers as S
    b = module_broker_factory(extra_args=S.SQL_ARGS)
    for sql in getattr(request.module, "SETUP", ()):
        S.http_rows(b.http, sql)
    return b


@pytest.fixture
def pg(b):
    """A psycopg2 connection to the module's broker `b` (a module fixture started with
    sql_helpers.SQL_ARGS), closed after the test."""
    import sql_helpers as S
    conn = S.pg_connect(b.pg)
    yield conn
    conn.close()


# --------------------------------------------------------------------------
# Brokers with security listeners (tests/integration/test_security_*.py)
# --------------------------------------------------------------------------


class SecureBroker(Broker):
    """A broker whose Kafka listeners may be `PROTOCOL://HOST:PORT` (SSL, SASL_PLAINTEXT,
    SASL_SSL) as well as bare `HOST:PORT`, or come from a `--config` file.

    `listens`: the --listen values in order (None: pass no --listen, e.g. when `--config`
    supplies them; then give `kafka_lines`, the number of `listening kafka` lines to wait
    for). `data_dir_flag=False` leaves --data-dir to the config file as well.

    After start(): `.listeners` holds every `listening kafka` value in order,
    `.addr(PROTOCOL, i=0)` the i-th "HOST:PORT" of that protocol, and `.bootstrap` the
    first PLAINTEXT listener (None without one)."""

    def __init__(self, workdir, listens, extra_args=(), name="broker", kafka_lines=None, data_dir_flag=True):
        super().__init__(workdir, extra_args=extra_args, listen=None, name=name)
        self.listens = None if listens is None else list(listens)
        self.kafka_lines = kafka_lines if kafka_lines is not None else len(self.listens or [])
        assert self.kafka_lines > 0, "a broker needs at least one Kafka listener"
        self.data_dir_flag = data_dir_flag
        self.by_protocol = {}

    def command(self):
        cmd = [require_binary(), "serve"]
        if self.data_dir_flag:
            cmd += ["--data-dir", str(self.data_dir)]
        for spec in self.listens or []:
            cmd += ["--listen", spec]
        return with_test_group_delay(cmd + self.extra_args)

    def addr(self, protocol, i=0):
        got = self.by_protocol.get(protocol, [])
        assert len(got) > i, "broker has no %s listener #%d (listeners %r)" % (protocol, i, self.listeners)
        return got[i]

    def _take_listeners(self, listeners):
        self.by_protocol = {}
        for spec in listeners:
            protocol, sep, hostport = spec.partition("://")
            if not sep:
                protocol, hostport = "PLAINTEXT", spec
            host, port = hostport.rsplit(":", 1)
            assert host == "127.0.0.1" and int(port) > 0, "unexpected listener line %r" % spec
            self.by_protocol.setdefault(protocol, []).append(hostport)
        plain = self.by_protocol.get("PLAINTEXT")
        self.bootstrap = plain[0] if plain else None
        self.port = int(self.bootstrap.rsplit(":", 1)[1]) if self.bootstrap else None


def _secure_broker_factory(request, workdir):
    made = request.node.__dict__.setdefault("_sluice_brokers", [])
    mine = []

    def make(listens, extra_args=(), start=True, kafka_lines=None, data_dir_flag=True):
        b = SecureBroker(workdir, listens, extra_args=extra_args, name="sbroker%d" % (len(mine) + 1),
                         kafka_lines=kafka_lines, data_dir_flag=data_dir_flag)
        mine.append(b)
        made.append(b)
        if start:
            b.start()
        return b

    yield make
    _teardown_brokers(mine)


@pytest.fixture
def secure_broker_factory(request, tmp_path):
    """Make SecureBrokers: secure_broker_factory(["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"],
    extra_args=[...], start=True); `start=False` lets a test prepare the data dir first."""
    yield from _secure_broker_factory(request, tmp_path)


@pytest.fixture(scope="module")
def module_secure_broker_factory(request, tmp_path_factory):
    """secure_broker_factory for brokers shared by the tests of one module."""
    yield from _secure_broker_factory(request, tmp_path_factory.mktemp("module-secure-brokers"))
