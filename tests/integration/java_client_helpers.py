"""The Java client programs of tests/jvm (package dev.sluice.jvmtests.clients) from
pytest: one-shot runs whose JSON lines are returned, and long-running group members
whose lines are collected on a thread as they come.
"""

import json
import subprocess
import threading
import time

import jvm_helpers as J
import sluice_helpers as H

PKG = "dev.sluice.jvmtests.clients."


def lines(stdout):
    """The program's JSON lines (anything else it printed is not ours)."""
    return [json.loads(x) for x in stdout.splitlines() if x.startswith("{")]


def run(main, *args, timeout=240):
    """Runs PKG+main to its end; its JSON lines."""
    return lines(J.run_java(PKG + main, *args, timeout=timeout).stdout)


def by_kind(out, kind):
    return [x for x in out if x["kind"] == kind]


def one(out, kind):
    found = by_kind(out, kind)
    assert len(found) == 1, (kind, found, out[-20:])
    return found[0]


class Member:
    """A GroupMember process: `events` grows as it prints; stop() ends it (bounded)."""

    def __init__(self, procs, bootstrap, group, topic, name, *props, main="GroupMember"):
        self.name = name
        self.events = []
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            J.java_command(PKG + main, bootstrap, group, topic, name, *props),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(self.proc)
        H.register_proc(self.proc)
        self._stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("{"):
                with self._lock:
                    self.events.append(json.loads(line))

    def snapshot(self, kind=None):
        with self._lock:
            return [e for e in self.events if kind is None or e["kind"] == kind]

    def assignment(self):
        """Partitions owned now, from the assigned/revoked/lost callbacks (cooperative
        assignments add to what is kept, eager ones follow a revocation of all)."""
        owned = set()
        for e in self.snapshot():
            if e["kind"] == "assigned":
                owned |= set(e["partitions"])
            elif e["kind"] in ("revoked", "lost"):
                owned -= set(e["partitions"])
        return owned

    def values(self):
        return [(e["partition"], e["offset"], e["value"]) for e in self.snapshot("record")]

    def describe(self):
        return "%s: %s; stderr: %s" % (self.name, self.snapshot()[-10:], "".join(self._stderr[-15:]))

    def stop(self, leave=False, timeout=90):
        self.proc.stdin.write("close-leave\n" if leave else "stop\n")
        self.proc.stdin.flush()
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=timeout)
        assert rc == 0, self.describe()
        # The reader thread may still be draining the pipe.
        H.wait_until("%s's closed line" % self.name, lambda: self.snapshot("closed"), timeout=10)


def wait_for(what, fn, timeout=90):
    return H.wait_until(what, fn, timeout=timeout, interval=0.2)


def settle(seconds):
    time.sleep(seconds)
