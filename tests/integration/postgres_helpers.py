"""A throw-away PostgreSQL 15 server for the Debezium tests (Debian's postgresql-15,
`scripts/install-deps.sh test`).

`PostgresCluster(workdir).start()` runs initdb in WORKDIR/pgdata and serves it on
127.0.0.1 with a free port, `wal_level=logical` and trust authentication for
127.0.0.1 (replication included), no Unix socket. PostgreSQL refuses to run as root, so
under root (as in CI) initdb and the server run as the `postgres` system user, which then
owns the data directory; the directories above it get the traverse bit only. `stop()`
(fast shutdown, then SIGKILL) is bounded, and the process is registered with the suite's
process list, so it is killed at the end whatever happens (scripts/cluster, whose servers
outlive it, passes `register=None, detach=True`).
"""

import os
import pwd
import shutil
import socket
import subprocess
import time
from pathlib import Path

import psycopg2

import sluice_helpers as H

PG_BIN = Path(os.environ.get("SLUICE_PG_BIN", "/usr/lib/postgresql/15/bin"))
SYSTEM_USER = "postgres"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_as():
    """(uid, gid) of the user the server runs as: ourselves, or `postgres` under root."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        raise AssertionError("running as root and there is no '%s' user: install postgresql-15 "
                             "(scripts/install-deps.sh test)" % SYSTEM_USER)
    return pw.pw_uid, pw.pw_gid


def _let_traverse(path):
    """Adds o+x to PATH and its parents (pytest's tmp dirs are 0700), so another user can
    reach a directory below them; nothing becomes listable or readable."""
    for p in [path, *path.parents]:
        mode = p.stat().st_mode
        if not mode & 0o001:
            os.chmod(p, mode | 0o001)


class PostgresCluster:
    def __init__(self, workdir, name="pg", port=None, register=H.register_proc, detach=False,
                 max_connections=30):
        self.workdir = Path(workdir)
        self.datadir = self.workdir / ("%s-data" % name)
        self.log_file = self.workdir / ("%s.log" % name)
        self.port = port
        self.proc = None
        self.ids = _run_as()
        self._register = register
        self._detach = detach
        self.max_connections = max_connections

    def _popen_args(self):
        if self.ids is None:
            return {}
        uid, gid = self.ids
        return {"user": uid, "group": gid, "extra_groups": []}

    def initdb(self):
        for tool in ("initdb", "postgres"):
            if not (PG_BIN / tool).exists():
                raise AssertionError("%s not found: install postgresql-15 (scripts/install-deps.sh test)"
                                     % (PG_BIN / tool))
        self.datadir.mkdir(parents=True)
        if self.ids is not None:
            _let_traverse(self.workdir)
            os.chown(self.datadir, *self.ids)
        os.chmod(self.datadir, 0o700)
        proc = subprocess.run([str(PG_BIN / "initdb"), "-D", str(self.datadir), "-U", "postgres",
                               "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync"],
                              capture_output=True, text=True, timeout=120, cwd="/", **self._popen_args())
        assert proc.returncode == 0, "initdb failed (%d):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr)

    def start(self):
        if not (self.datadir / "PG_VERSION").exists():
            self.initdb()
        elif self.ids is not None:
            # Again at each start: another pytest session of root makes its base
            # temporary directory private (0700) when it begins.
            _let_traverse(self.workdir)
        self.port = self.port or _free_port()
        settings = {
            "listen_addresses": "127.0.0.1", "port": str(self.port), "unix_socket_directories": "",
            "wal_level": "logical", "max_wal_senders": "4", "max_replication_slots": "4",
            # No fsync (a test machine does not lose power), but a commit is in the WAL,
            # in the OS's page cache, before it is answered: a kill -9 of the server keeps
            # it (synchronous_commit off lost the shared catalog in test_shared_engines).
            "fsync": "off", "full_page_writes": "off",
            "shared_buffers": "32MB", "max_connections": str(self.max_connections),
        }
        cmd = [str(PG_BIN / "postgres"), "-D", str(self.datadir)]
        for k, v in settings.items():
            cmd += ["-c", "%s=%s" % (k, v)]
        log = open(self.log_file, "ab")
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         cwd="/", start_new_session=self._detach, **self._popen_args())
            if self._register:
                self._register(self.proc)
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("postgres exited %s at start-up:\n%s" % (self.proc.returncode, self.log_tail()))
            try:
                self.connect().close()
                return self
            except psycopg2.OperationalError:
                if time.monotonic() > deadline:
                    raise AssertionError("postgres not accepting connections after %.0fs:\n%s"
                                         % (START_TIMEOUT, self.log_tail()))
                time.sleep(0.2)

    @property
    def url(self):
        return "postgresql://postgres@127.0.0.1:%d/postgres" % self.port

    def connect(self, dbname="postgres"):
        """An autocommit psycopg2 connection as the superuser."""
        conn = psycopg2.connect(host="127.0.0.1", port=self.port, user="postgres", dbname=dbname,
                                connect_timeout=10)
        conn.autocommit = True
        return conn

    def execute(self, sql, params=None):
        """Runs one statement; returns its rows (None for statements without a result)."""
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall() if cur.description else None
        finally:
            conn.close()

    def stop(self):
        """Fast shutdown (SIGINT), SIGKILL after STOP_TIMEOUT."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(2)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            H.kill_proc(self.proc)

    def remove(self):
        self.stop()
        shutil.rmtree(self.datadir, ignore_errors=True)

    def log_tail(self, n=60):
        return H.tail(self.log_file, n)
