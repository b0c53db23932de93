"""Helpers of bench/sql_analytical.py: the broker over HTTP (SQL, expansions) and the
produce load that runs with and without a loop of SQL queries beside it."""

import json
import subprocess
import threading
import time
import urllib.error
import urllib.request

# The expansion every engine's broker gets: the four fields of the events, typed.
TARGET = "x.events"
SCHEMA = {"fields": [{"name": "ts", "type": "int64"}, {"name": "user", "type": "string"},
                     {"name": "kind", "type": "string"}, {"name": "amount", "type": "int64"}]}


def http_sql(url, sql, timeout_ms=600000):
    req = urllib.request.Request(url + "/v1/sql?format=json&timeout_ms=%d" % timeout_ms,
                                 data=sql.encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout_ms / 1000 + 300) as r:
            body = json.loads(r.read())
    except urllib.error.HTTPError as e:
        body = json.loads(e.read() or b"{}")
        if "error" not in body:
            raise
    if "error" in body:
        raise RuntimeError("%s: %s" % (sql, body["error"]))
    return body["rows"]


def http_json(url, path, method="GET", body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def create_expansion(url, topic, backfill):
    """(Re)creates TARGET over topic's values; an expansion left from the other engine
    (its target copied into DuckDB at the engine's first start) is dropped first, with
    its table, so that the backfill timed here writes a new table."""
    code, _ = http_json(url, "/v1/expansions/" + TARGET)
    if code == 200:
        code, body = http_json(url, "/v1/expansions/" + TARGET + "?drop_target=true", "DELETE")
        assert code == 200, body
    code, body = http_json(url, "/v1/expansions", "POST", {
        "topic": topic, "target": TARGET, "schema": SCHEMA, "source": "value",
        "backfill": backfill})
    assert code == 201, body


def wait_expansion(url, rows, limit_s=3600):
    """Waits until TARGET holds rows rows with no lag; returns the seconds waited."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        code, x = http_json(url, "/v1/expansions/" + TARGET)
        assert code == 200, x
        if x.get("state") == "failed":
            raise RuntimeError("expansion failed: %s" % x.get("error"))
        if x.get("rows") == rows and not x.get("lag") and x.get("state") == "running":
            return time.monotonic() - t0
        time.sleep(1)
    raise RuntimeError("expansion not done after %d s: %s" % (limit_s, x))


class QueryLoop:
    """Runs statements over HTTP one after another, round robin, until stopped; each
    with a statement timeout so that stopping waits at most that long."""

    def __init__(self, url, statements, timeout_ms):
        self.url, self.statements, self.timeout_ms = url, statements, timeout_ms
        self.done = self.timed_out = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        i = 0
        while not self._stop.is_set():
            try:
                http_sql(self.url, self.statements[i % len(self.statements)], self.timeout_ms)
                self.done += 1
            except RuntimeError:
                self.timed_out += 1
            i += 1

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def loadgen_produce(loadgen, bootstrap, topic, seconds, record_size):
    """Flat-out acks=all produce for seconds into a fresh 4-partition topic; its
    RESULT fields."""
    out = subprocess.run([loadgen, "--mode", "produce", "--bootstrap", bootstrap, "--topic", topic,
                          "--records", "1000000000", "--duration-s", str(seconds),
                          "--record-size", str(record_size), "--acks", "-1"],
                         check=True, capture_output=True, text=True).stdout
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1]
    return dict(kv.split("=", 1) for kv in line.split()[1:])


def produce_alongside(loadgen, bootstrap, http, admin_create, statements, seconds, record_size,
                      timeout_ms, tag):
    """Producer throughput without, then with, a loop of statements over HTTP; each
    load into its own fresh topic. Returns {"quiet": RESULT, "busy": RESULT, "loop": (done,
    timed out)}."""
    out = {}
    admin_create("load-quiet-" + tag)
    out["quiet"] = loadgen_produce(loadgen, bootstrap, "load-quiet-" + tag, seconds, record_size)
    admin_create("load-busy-" + tag)
    with QueryLoop(http, statements, timeout_ms) as loop:
        time.sleep(2)  # the first statements are running
        out["busy"] = loadgen_produce(loadgen, bootstrap, "load-busy-" + tag, seconds, record_size)
    out["loop"] = (loop.done, loop.timed_out)
    return out


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])
