"""Trino (the server `scripts/fetch-trino` unpacks into tests/jvm/target, run on the Java
25 JDK it needs) with a catalog per Sluice broker: its PostgreSQL connector pointed at the
broker's PostgreSQL listener (one Trino serves several brokers, since it takes tens of
seconds to start). Queries go through Trino's HTTP protocol (POST /v1/statement, then the
nextUri pages)."""

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import sluice_helpers as H
from conftest import REPO

VERSION = "476"
HOME = REPO / "tests" / "jvm" / "target" / ("trino-server-" + VERSION)
JAVA = Path(os.environ.get("SLUICE_JAVA25", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java"))
START_TIMEOUT = 300.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Trino:
    def __init__(self, workdir, catalogs, user="trino", password="unused"):
        """catalogs: {Trino catalog name: a broker's PostgreSQL address}; the first is the
        queries' default catalog."""
        assert (HOME / "lib").is_dir() and (HOME / "plugin" / "postgresql").is_dir(), (
            "%s is missing: `make test-deps` runs scripts/fetch-trino" % HOME)
        assert JAVA.exists(), "Trino %s needs Java 25: %s is missing (SLUICE_JAVA25 names another)" % (
            VERSION, JAVA)
        self.dir = Path(workdir)
        self.port = free_port()
        etc = self.dir / "etc"
        (etc / "catalog").mkdir(parents=True, exist_ok=True)
        (self.dir / "data").mkdir(exist_ok=True)
        (etc / "config.properties").write_text(
            "coordinator=true\nnode-scheduler.include-coordinator=true\n"
            "http-server.http.port=%d\ndiscovery.uri=http://127.0.0.1:%d\n"
            "query.max-memory=256MB\nquery.max-memory-per-node=256MB\n"
            "plugin.dir=%s\ncatalog.config-dir=%s\n" % (self.port, self.port, HOME / "plugin", etc / "catalog"))
        # What a Trino user writes for a PostgreSQL database: nothing Sluice-specific.
        for name, pg_addr in catalogs.items():
            (etc / "catalog" / ("%s.properties" % name)).write_text(
                "connector.name=postgresql\nconnection-url=jdbc:postgresql://%s/sluice\n"
                "connection-user=%s\nconnection-password=%s\n" % (pg_addr, user, password))
        self.catalogs = list(catalogs)
        self.proc = None
        self.log_path = self.dir / "trino.log"

    def start(self):
        log = open(self.log_path, "wb")
        cmd = [str(JAVA), "-Xmx1G", "-XX:+UseG1GC", "-XX:+ExitOnOutOfMemoryError",
               "-Djdk.attach.allowAttachSelf=true", "-Dconfig=%s" % (self.dir / "etc" / "config.properties"),
               "-Dnode.environment=test", "-Dnode.id=sluice-test", "-Dnode.data-dir=%s" % (self.dir / "data"),
               "-cp", str(HOME / "lib") + "/*", "io.trino.server.TrinoServer"]
        self.proc = H.register_proc(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                                     cwd=str(self.dir), start_new_session=True))
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("Trino exited %s:\n%s" % (
                    self.proc.returncode, self.log_path.read_text(errors="replace")[-4000:]))
            try:
                info = json.load(urllib.request.urlopen("http://127.0.0.1:%d/v1/info" % self.port, timeout=5))
                # Serving is not scheduling: a query that reads a table fails with "No nodes
                # available to run query" until the node manager has seen this node's
                # announcement of the catalog (seconds later on a busy machine; an active
                # row in system.runtime.nodes came first once in CI), so the probe is a
                # scan of one of the catalog's own tables.
                if info.get("starting") is False and self._catalog_scans():
                    return self
            except (OSError, ValueError, AssertionError):
                pass
            time.sleep(1)
        raise AssertionError("Trino did not start within %d s:\n%s" % (
            START_TIMEOUT, self.log_path.read_text(errors="replace")[-4000:]))

    def _catalog_scans(self):
        return all(len(self.query("SELECT count(*) FROM %s.system.topics" % c, timeout=10)[1]) == 1
                   for c in self.catalogs)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            H.kill_group(self.proc)

    def query(self, sql, timeout=120):
        """(column names, rows); raises AssertionError with Trino's message on an error."""
        deadline = time.monotonic() + timeout
        req = urllib.request.Request("http://127.0.0.1:%d/v1/statement" % self.port, sql.encode(),
                                     {"X-Trino-User": "test", "X-Trino-Catalog": self.catalogs[0]})
        doc = json.load(urllib.request.urlopen(req, timeout=timeout))
        cols, rows = None, []
        while True:
            if "error" in doc:
                raise AssertionError("Trino: %s\n%s" % (doc["error"].get("message"), sql))
            cols = cols or [c["name"] for c in doc.get("columns", [])] or None
            rows += doc.get("data", [])
            if "nextUri" not in doc:
                return cols, rows
            assert time.monotonic() < deadline, "Trino query still running after %d s: %s" % (timeout, sql)
            time.sleep(0.05)
            doc = json.load(urllib.request.urlopen(doc["nextUri"], timeout=timeout))
