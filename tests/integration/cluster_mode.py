"""Client suites against a shared-mode cluster (docs/shared-mode.md, "The client suites
against a cluster").

With SLUICE_TEST_CLUSTER=N (N >= 2) in the environment, the `broker` fixture of a module
(and `broker_factory()` without flags) is not a single-node `sluice serve` but the N
brokers of one `scripts/cluster up DIR --brokers N` the module shares (PostgreSQL,
s3proxy and N brokers in shared mode). A test sees a `ClusterBrokers`: `.bootstrap` lists
every broker, starting at a different one for each test, so clients bootstrap across
the cluster; raw-protocol helpers (kproto.Conn) talk to the first.

Tests that need what shared mode does not serve yet carry
`@pytest.mark.shared_missing("FEATURE")`; tests that drive one broker process themselves
(its flags, its restarts, its log) carry `@pytest.mark.single_node("why")`. Both are
skipped in a cluster run with their reason, so pytest's summary counts them. When shared
mode serves a feature, set its entry below to None: the tests marked with it run again.
"""

import itertools
import json
import os
import subprocess
from pathlib import Path

import pytest

import sluice_helpers as H

REPO = Path(__file__).resolve().parents[2]
SCRIPT = str(REPO / "scripts" / "cluster")


def sluice_bin():
    return os.environ.get("SLUICE_BIN") or str(REPO / "build" / "sluice")

# What shared mode does not serve yet (docs/shared-mode.md's table), by the name the
# marker uses: the reason a cluster run gives for the skip, or None once it is served.
SHARED_MODE_MISSING = {
    "transactions": None,
    "describe_producers": None,
    "share_groups": None,
    "expansions": None,
    "compaction": None,
    "log_append_time": None,
    # Shared mode never forgets an idle producer (Kafka's producer.id.expiration.ms, the
    # broker's --producer-id-expiration-ms): sluice_producer_state keeps no broker time
    # of a producer's last batch to judge it by.
    "producer_expiry": "the expiry of idle idempotent producers (--producer-id-expiration-ms)",
}


def brokers_wanted():
    """N of SLUICE_TEST_CLUSTER=N, or 0 for single-node runs."""
    raw = os.environ.get("SLUICE_TEST_CLUSTER", "").strip()
    if not raw or raw == "0":
        return 0
    if not raw.isdigit() or int(raw) < 2:
        raise pytest.UsageError("SLUICE_TEST_CLUSTER=%r: give the number of brokers (2 or more)" % raw)
    return int(raw)


def skipped_feature(feature):
    """Whether this run skips the tests marked shared_missing(feature): a cluster run while
    shared mode does not serve it (a fixture that serves both kinds of test asks)."""
    return bool(brokers_wanted() and SHARED_MODE_MISSING[feature])


def skip_reason(item):
    """Why `item` does not run against a cluster, or None."""
    for m in item.iter_markers("single_node"):
        return "single-node only: %s" % (m.args[0] if m.args else "drives one broker process")
    # Fixtures that start brokers of their own, which a cluster run would not replace.
    for name in ("secure_broker_factory", "module_secure_broker_factory"):
        if name in getattr(item, "fixturenames", ()):
            return "single-node only: a broker with listeners of its own (%s)" % name
    for m in item.iter_markers("shared_missing"):
        for feature in m.args:
            if feature not in SHARED_MODE_MISSING:
                raise pytest.UsageError(
                    "%s: shared_missing(%r) names no feature of cluster_mode.SHARED_MODE_MISSING (%s)"
                    % (item.nodeid, feature, ", ".join(sorted(SHARED_MODE_MISSING))))
            if SHARED_MODE_MISSING[feature]:
                return "shared mode does not serve %s yet (docs/shared-mode.md)" % SHARED_MODE_MISSING[feature]
    return None


class ClusterBrokers:
    """What a test gets for `broker` in a cluster run: the module's running cluster.

    `.bootstrap` ("HOST:PORT,...": every broker, starting at a different one per test),
    `.addresses` (every broker's "HOST:PORT" by id), `.port` (the first one's), log access
    as a Broker has it. Stopping or restarting "the broker" has no meaning here: such a
    test is marked single_node."""

    name = "cluster"

    def __init__(self, cluster, first):
        self.cluster = cluster
        ids = sorted(cluster.addresses)
        order = ids[first % len(ids):] + ids[:first % len(ids)]
        self.addresses = dict(cluster.addresses)
        self.bootstrap = ",".join(self.addresses[i] for i in order)
        self.port = int(self.addresses[order[0]].rsplit(":", 1)[1])
        self.stderr_paths = cluster.logs()
        self.report_paths = self.stderr_paths

    def stderr_tail(self, n=60):
        return "\n".join("-- %s\n%s" % (p.name, H.tail(p, n)) for p in self.stderr_paths)

    def log_lines(self):
        """Every broker's log lines (a coordinator's lines are in its own broker's log)."""
        out = []
        for p in self.stderr_paths:
            out += p.read_text(errors="replace").splitlines()
        return out

    def assert_alive(self):
        self.cluster.assert_alive()

    def running(self):
        return not self.cluster.dead()

    def _single_node_only(self, *_a, **_k):
        pytest.fail("this test stops or restarts its broker: mark it @pytest.mark.single_node(...) "
                    "so that cluster runs skip it", pytrace=False)

    stop = kill9 = restart = start = _single_node_only


class Cluster:
    """One `scripts/cluster up DIR --brokers N` for a module."""

    def __init__(self, d, brokers, broker_flags):
        self.dir = Path(d)
        self.brokers = brokers
        self.broker_flags = list(broker_flags)
        self.addresses = {}
        self._views = itertools.count()

    def _run(self, *args, timeout=300):
        r = subprocess.run([SCRIPT, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, SLUICE_BIN=sluice_bin()))
        return r

    def up(self):
        # --fast-s3: s3proxy starts in about half the time; the suites' loads are small.
        r = self._run("up", self.dir, "--brokers", self.brokers, "--fast-s3", "--",
                      *self.broker_flags)
        if r.returncode != 0:
            raise AssertionError("scripts/cluster up failed (%d)\n%s%s\n%s" % (
                r.returncode, r.stdout[-3000:], r.stderr[-3000:], self.stderr_tail()))
        state = json.loads((self.dir / "cluster.json").read_text())
        if len(state["brokers"]) != self.brokers:
            raise AssertionError("scripts/cluster started %d brokers of %d:\n%s" % (
                len(state["brokers"]), self.brokers, r.stderr[-3000:]))
        self.addresses = {b["id"]: b["kafka"] for b in state["brokers"]}
        return self

    def view(self):
        return ClusterBrokers(self, next(self._views))

    def logs(self):
        return [self.dir / ("broker-%d.log" % i) for i in sorted(self.addresses)]

    def stderr_tail(self, n=60):
        return "\n".join("-- %s\n%s" % (p.name, H.tail(p, n)) for p in self.logs())

    def dead(self):
        """The brokers that are not running any more."""
        r = self._run("status", self.dir, timeout=60)
        if r.returncode != 0:
            return ["status: " + r.stderr.strip()]
        return [b["id"] for b in json.loads(r.stdout)["brokers"] if not b["running"]]

    def assert_alive(self):
        dead = self.dead()
        assert not dead, "cluster brokers %r are not running\n%s" % (dead, self.stderr_tail())

    def down(self):
        """Stops everything; an AssertionError if a broker had died on its own."""
        if not (self.dir / "cluster.json").exists():
            return  # `up` failed before it started anything
        dead = self.dead() if self.addresses else []
        r = self._run("down", self.dir, timeout=180)
        assert r.returncode == 0, "scripts/cluster down failed:\n%s%s" % (r.stdout, r.stderr)
        assert not dead, "cluster brokers %r died during the module\n%s" % (dead, self.stderr_tail(80))
