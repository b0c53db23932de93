#!/usr/bin/python3
"""Shared mode against single-node mode, in one run (issue 35's benchmark).

    bench/shared_bench.py [--build DIR] [--repeats N] [--secs S] [--rate-mbps R] [--loads L] [--keep]

Runs the same loads against, in turn: one single-node broker (`sluice serve` on a
scratch data dir), then `scripts/cluster up DIR --brokers 1` and `--brokers 3`
(PostgreSQL 15, s3proxy and the brokers in shared mode, 20 ms produce window). For each:

- idle: the database transactions and the CPU the brokers cost with nothing to do;
- per repeat, on fresh topics: flat-out produce, acks=all, `sluice-loadgen` (librdkafka)
  bootstrapped at broker 0 into 4 partitions; then a steady R MB/s (10) into 4 and
  into 64 partitions (the produce latency target, and object-store PUTs/s against the
  partition count); then `bench/shared_latency.py`: one record at a time, acks=all,
  produced through its partition's leader and read by a long-polling Fetch sent to
  another broker (the same one in the one-broker setups);
- after the three-broker runs, with the brokers idle: `sluice-objstore-bench pg`, the
  produce commit (one object's batches over 4 and 64 partitions) from 4 connections
  flat out: the windows per second this database sustains.

For every run: MB/s, p50/p99 produce latency, object-store requests by kind (counted
from s3proxy's request log, `scripts/cluster up --s3-log-requests`), database
transactions (write transactions from the transaction-id counter, exact; all
transactions from pg_stat_database's xact_commit, which backends publish up to a second
late), per second and per MB, and CPU seconds per MB of the brokers, of PostgreSQL (the
postmaster and its backends, from /proc) and of s3proxy, with what the rest of the
machine used meanwhile (other work on a shared machine). Prints each run as it ends,
then markdown tables of medians (min-max over the repeats) and shared / single-node
ratios, and writes the raw figures as JSON to --json. Everything started is stopped on
exit (Ctrl-C included); the scratch dir is removed unless --keep.
"""

import argparse
import json
import os
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psycopg2
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[1]
TICKS = os.sysconf("SC_CLK_TCK")
S3_REQUEST = re.compile(r"S3ProxyHandler request: Request\((\w+) ([^)\s]*)")


# The produce window's histograms on each broker's /metrics (docs/operations.md): its
# phases, and the whole from closing to answers ("window") and the wait for room before.
PHASES = ("build", "put", "commit_wait", "lock", "statements", "commit", "answer")
WINDOW_HISTOGRAMS = {"sluice_shared_window_seconds": "window",
                     "sluice_shared_window_room_wait_seconds": "room_wait"}
BUCKET = re.compile(r'^(sluice_shared_window\w*?)_bucket\{(?:phase="(\w+)",)?le="([^"]+)"\} (\S+)$', re.M)


def window_buckets(brokers):
    """{histogram: {le: count}} summed over the brokers' /metrics, le as a float."""
    out = {}
    for b in brokers:
        if not b.get("http"):
            continue
        try:
            with urllib.request.urlopen("http://%s/metrics" % b["http"].split("://")[-1], timeout=10) as r:
                text = r.read().decode()
        except OSError:
            continue
        for name, phase, le, n in BUCKET.findall(text):
            key = phase if name == "sluice_shared_window_phase_seconds" else WINDOW_HISTOGRAMS.get(name)
            if key:
                h = out.setdefault(key, {})
                bound = float("inf") if le == "+Inf" else float(le)
                h[bound] = h.get(bound, 0) + float(n)
    return out


def quantile(buckets, q):
    """The q-quantile of a cumulative histogram {le: count}, interpolated inside its
    bucket as Prometheus's histogram_quantile does (the last finite bound past it)."""
    bounds = sorted(buckets)
    total = buckets[bounds[-1]] if bounds else 0
    if total <= 0:
        return None
    rank, lower, below = q * total, 0.0, 0.0
    for le in bounds:
        if buckets[le] >= rank:
            if le == float("inf"):
                return lower
            return lower + (le - lower) * (rank - below) / max(buckets[le] - below, 1e-9)
        lower, below = le, buckets[le]
    return lower


def phase_figures(a, b):
    """p50/p99 in ms and the count of each window histogram between two scrapes."""
    out = {}
    for key, hb in b.items():
        ha = a.get(key, {})
        d = {le: n - ha.get(le, 0) for le, n in hb.items()}
        count = d.get(float("inf"), 0)
        if count > 0:
            out[key] = {"count": int(count), "p50_ms": 1000 * quantile(d, 0.5),
                        "p99_ms": 1000 * quantile(d, 0.99)}
    return out


def stat_fields(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cpu_of(pid, reaped=False):
    """utime + stime of PID (with its reaped children's when `reaped`), seconds."""
    f = stat_fields(pid)
    if f is None:
        return 0.0
    return (int(f[11]) + int(f[12]) + ((int(f[13]) + int(f[14])) if reaped else 0)) / TICKS


def tree_cpu(root):
    """CPU seconds of ROOT (PostgreSQL's postmaster) and of its children, alive or
    reaped: the backends, the WAL writer, the checkpointer..."""
    total = cpu_of(root, reaped=True)
    for d in os.listdir("/proc"):
        if d.isdigit():
            f = stat_fields(int(d))
            if f is not None and int(f[1]) == root:
                total += (int(f[11]) + int(f[12])) / TICKS
    return total


def machine_busy():
    with open("/proc/stat") as f:
        v = f.readline().split()[1:]
    return sum(int(v[i]) for i in (0, 1, 2, 5, 6, 7)) / TICKS


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def load_avg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def median_range(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None, None
    return statistics.median(xs), min(xs), max(xs)


class SingleNode:
    name = "single node"
    key = "single"

    def __init__(self, sluice, work):
        self.sluice = sluice
        self.dir = work / "single"
        self.proc = None

    def start(self):
        sluice = self.sluice
        self.dir.mkdir()
        self.log = self.dir / "broker.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([sluice, "serve", "--data-dir", str(self.dir / "data"),
                                          "--listen", "127.0.0.1:0"], stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        addr = None
        while addr is None:
            m = re.search(r"^listening kafka (?:PLAINTEXT://)?(\S+)$", self.log.read_text(errors="replace"), re.M)
            addr = m and m.group(1)
            if addr is None:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("shared_bench: the single-node broker did not start (%s)" % self.log)
                time.sleep(0.05)
        self.brokers = [{"id": 0, "kafka": addr, "pid": self.proc.pid}]
        self.pg_url = self.pg_pid = self.s3_pid = self.s3_log = None
        return self

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Cluster:
    def __init__(self, n, work, sluice, in_flight=None, s3_delay_ms=0, broker_flags=""):
        self.n = n
        self.name = "shared, %d broker%s" % (n, "s" if n > 1 else "")
        self.key = "shared%d" % n
        self.flags = []
        if in_flight is not None:
            # --windows-in-flight: one setup per value, named after it.
            self.name += ", %d in flight" % in_flight
            self.key += "-w%d" % in_flight
            self.flags = ["--shared-windows-in-flight", str(in_flight)]
        if broker_flags:
            self.name += ", " + broker_flags
            self.flags += shlex.split(broker_flags)
        self.s3_delay_ms = s3_delay_ms
        self.proxy = None
        self.dir = work / ("cluster-%s" % self.key)
        self.env = dict(os.environ, SLUICE_BIN=sluice)

    def cluster(self, *args, timeout=300):
        r = subprocess.run([str(ROOT / "scripts" / "cluster"), *map(str, args)], env=self.env,
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise SystemExit("shared_bench: scripts/cluster %s failed:\n%s%s" % (args[0], r.stdout, r.stderr))

    def start(self):
        # A short lease when the brokers are restarted behind the delaying proxy (a
        # restarted broker waits for its old lease to pass).
        lease = ["--lease-ms", "2000"] if self.s3_delay_ms else []
        self.cluster("up", self.dir, "--brokers", self.n, "--s3-log-requests", *lease,
                     *(["--", *self.flags] if self.flags else []))
        state = json.loads((self.dir / "cluster.json").read_text())
        if self.s3_delay_ms:
            # Every object-store request delayed (tests/integration/s3_helpers.py's proxy),
            # as a remote store answers later than one on this host.
            sys.path.insert(0, str(ROOT / "tests" / "integration"))
            import s3_helpers
            self.proxy = s3_helpers.FaultProxy(state["services"]["s3"]["port"])
            self.proxy.delay = self.s3_delay_ms / 1000.0
            self.name += ", S3 +%d ms" % self.s3_delay_ms
            for b in state["brokers"]:
                self.cluster("kill", self.dir, b["id"])
            for b in state["brokers"]:
                self.cluster("start", self.dir, b["id"], "--", "--s3-endpoint", self.proxy.endpoint)
            state = json.loads((self.dir / "cluster.json").read_text())
        self.brokers = state["brokers"]
        self.pg_url = state["postgres"]
        self.pg_pid = state["services"]["postgres"]["pid"]
        self.s3_pid = state["services"]["s3"]["pid"]
        self.s3_log = self.dir / "s3.log"
        self.engine_env = dict(os.environ)
        for line in (self.dir / "env").read_text().splitlines():
            k, v = line.removeprefix("export ").split("=", 1)
            self.engine_env[k] = v
        return self

    def stop(self):
        # `down` stops what a half-finished `up` started too (cluster.json is written as
        # each piece starts).
        if (self.dir / "cluster.json").exists():
            subprocess.run([str(ROOT / "scripts" / "cluster"), "down", str(self.dir)], env=self.env,
                           capture_output=True, timeout=300)
        if self.proxy is not None:
            self.proxy.close()


class Meter:
    """Snapshots of everything a run is charged for."""

    def __init__(self, setup):
        self.s = setup
        self.db = None
        if setup.pg_url:
            self.db = psycopg2.connect(setup.pg_url)
            self.db.autocommit = True
        self.s3_pos = 0

    def s3_counts(self):
        counts = {"PUT": 0, "PUT merged": 0, "GET": 0, "LIST": 0, "DELETE": 0, "other": 0}
        if not self.s.s3_log or not self.s.s3_log.exists():
            return counts
        with open(self.s.s3_log, "rb") as f:
            f.seek(self.s3_pos)
            data = f.read()
        # Only whole lines; the rest is read next time.
        data = data[:data.rfind(b"\n") + 1]
        self.s3_pos += len(data)
        for m in S3_REQUEST.finditer(data.decode(errors="replace")):
            method, url = m.groups()
            if method == "GET" and ("list-type" in url or url.rstrip("/").count("/") <= 3):
                counts["LIST"] += 1
            elif method == "PUT" and "/merged/" in url:  # the background merge's objects
                counts["PUT merged"] += 1
            elif method in counts:
                counts[method] += 1
            elif method == "POST" and "delete" in url:
                counts["DELETE"] += 1
            else:
                counts["other"] += 1
        return counts

    def snap(self):
        x = {"t": time.monotonic(), "busy": machine_busy(), "children": children_cpu(),
             "brokers": sum(cpu_of(b["pid"]) for b in self.s.brokers),
             "pg": tree_cpu(self.s.pg_pid) if self.s.pg_pid else 0.0,
             "s3": cpu_of(self.s.s3_pid, reaped=True) if self.s.s3_pid else 0.0,
             "s3req": self.s3_counts(), "xid": 0, "xacts": 0, "jobs": 0,
             "windows": window_buckets(self.s.brokers) if self.s.pg_url else {}}
        if self.db:
            with self.db.cursor() as c:
                # The next transaction id (exact: one per transaction that wrote), all
                # transactions (published by each backend up to a second late), and the
                # background jobs taken (each take adds one to its row's fencing token).
                c.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint, "
                          "(SELECT xact_commit + xact_rollback FROM pg_stat_database "
                          "WHERE datname = current_database()), "
                          "(SELECT coalesce(sum(fencing_token), 0)::bigint FROM sluice_job_leases)")
                x["xid"], x["xacts"], x["jobs"] = c.fetchone()
                x["xacts"] -= 1  # this query's own
        return x

    @staticmethod
    def delta(a, b, mb):
        secs = b["t"] - a["t"]
        d = {"secs": secs, "mb": mb}
        for k in ("brokers", "pg", "s3", "children", "busy"):
            d[k + "_cpu"] = b[k] - a[k]
        d["others_cpu"] = max(0.0, d["busy_cpu"] - d["brokers_cpu"] - d["pg_cpu"] - d["s3_cpu"] - d["children_cpu"])
        d["s3req"] = b["s3req"]  # counted since the previous snapshot
        d["write_xacts"] = b["xid"] - a["xid"]
        d["xacts"] = b["xacts"] - a["xacts"]
        d["jobs"] = b["jobs"] - a["jobs"]
        d["phases"] = phase_figures(a["windows"], b["windows"])
        return d

    def close(self):
        if self.db:
            self.db.close()


def result_fields(text):
    line = [ln for ln in text.splitlines() if ln.startswith("RESULT ")]
    if not line:
        return None
    return dict(kv.split("=", 1) for kv in line[-1].split()[1:] if "=" in kv)


def run_child(cmd, timeout, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if r.returncode != 0:
        raise SystemExit("shared_bench: %s failed (%d):\n%s%s" % (" ".join(cmd[:3]), r.returncode,
                                                                   r.stdout[-3000:], r.stderr[-3000:]))
    return r.stdout


def create_topics(setup, names_parts):
    admin = AdminClient({"bootstrap.servers": setup.brokers[0]["kafka"]})
    fs = admin.create_topics([NewTopic(n, p, 1) for n, p in names_parts], operation_timeout=30)
    for f in fs.values():
        f.result(timeout=60)
    # The other brokers read the topics every half second.
    time.sleep(1.5 if len(setup.brokers) > 1 else 0.2)


def figures(run, d, res):
    """The per-run figures, from a Meter delta and loadgen's/the latency script's result."""
    mb, secs = d["mb"], d["secs"]
    s3 = d["s3req"]
    out = {"run": run, "secs": round(secs, 2), "mb": round(mb, 1), **res}
    out.update({
        "put_per_s": s3["PUT"] / secs, "get_per_s": s3["GET"] / secs,
        "list_per_s": s3["LIST"] / secs, "delete_per_s": s3["DELETE"] / secs,
        "write_xacts_per_s": d["write_xacts"] / secs, "xacts_per_s": d["xacts"] / secs,
        "merged_put_per_s": s3["PUT merged"] / secs, "jobs_per_s": d["jobs"] / secs,
        "s3": s3, "write_xacts": d["write_xacts"], "xacts": d["xacts"], "jobs": d["jobs"],
        "brokers_cpu_s": d["brokers_cpu"], "pg_cpu_s": d["pg_cpu"], "s3_cpu_s": d["s3_cpu"],
        "client_cpu_s": d["children_cpu"], "others_cpu_s": d["others_cpu"], "phases": d["phases"],
    })
    if mb > 0:
        out.update({
            "put_per_mb": s3["PUT"] / mb, "get_per_mb": s3["GET"] / mb,
            "write_xacts_per_mb": d["write_xacts"] / mb, "xacts_per_mb": d["xacts"] / mb,
            "brokers_cpu_ms_per_mb": 1000 * d["brokers_cpu"] / mb, "pg_cpu_ms_per_mb": 1000 * d["pg_cpu"] / mb,
            "s3_cpu_ms_per_mb": 1000 * d["s3_cpu"] / mb,
        })
        if d["brokers_cpu"] + d["pg_cpu"] > 0:
            out["pg_share"] = d["pg_cpu"] / (d["brokers_cpu"] + d["pg_cpu"])
    return out


def show(setup, f):
    s = "%-18s %-12s" % (setup.name, f["run"])
    for k, pattern in (("mbps", "%s MB/s"), ("p50_ms", "p50 %s"), ("p99_ms", "p99 %s"),
                       ("e2e_p50_ms", "e2e p50 %s"), ("e2e_p99_ms", "e2e p99 %s")):
        if k in f:
            s += "  " + pattern % f[k]
    s += "  PUT/s %.1f (+%.1f merged) GET/s %.1f LIST/s %.1f  wxact/s %.1f xact/s %.1f jobs/s %.1f" % (
        f["put_per_s"], f["merged_put_per_s"], f["get_per_s"], f["list_per_s"], f["write_xacts_per_s"],
        f["xacts_per_s"], f["jobs_per_s"])
    s += "  cpu s: brokers %.2f pg %.2f s3 %.2f client %.2f others %.2f" % (
        f["brokers_cpu_s"], f["pg_cpu_s"], f["s3_cpu_s"], f["client_cpu_s"], f["others_cpu_s"])
    print(s, flush=True)
    ph = f.get("phases") or {}
    if ph:
        print("%-31s windows %d; p50/p99 ms: %s" % ("", ph.get("window", {}).get("count", 0), ", ".join(
            "%s %s/%s" % (k, fmt(ph[k]["p50_ms"]), fmt(ph[k]["p99_ms"]))
            for k in ("room_wait", *PHASES, "window") if k in ph)), flush=True)


def bench_setup(setup, a, loadgen, results):
    meter = Meter(setup)
    runs = results.setdefault(setup.key, {"name": setup.name, "load_at_start": load_avg(), "runs": []})
    try:
        print("%s: brokers %s, load average %s" % (setup.name, ", ".join(b["kafka"] for b in setup.brokers),
                                                    load_avg()), flush=True)
        time.sleep(1)
        m0 = meter.snap()
        time.sleep(a.idle_secs)
        f = figures("idle", meter.delta(m0, meter.snap(), 0), {})
        show(setup, f)
        runs["runs"].append(f)
        boot = setup.brokers[0]["kafka"]
        reader = setup.brokers[1 % len(setup.brokers)]["kafka"]
        for r in range(1, a.repeats + 1):
            t4, t64 = "bench4-r%d" % r, "bench64-r%d" % r
            create_topics(setup, [(t4, 4), (t64, 64)])
            loads = [("flat", t4, []), ("steady4", t4, ["--rate-mbps", str(a.rate_mbps)]),
                     ("steady64", t64, ["--rate-mbps", str(a.rate_mbps)])]
            for name, topic, extra in (x for x in loads if x[0] in a.loads):
                m0 = meter.snap()
                out = run_child([loadgen, "--bootstrap", boot, "--topic", topic, "--mode", "produce",
                                 "--acks", "-1", "--records", "100000000", "--duration-s", str(a.secs),
                                 "--record-size", "1024", *extra], timeout=a.secs + 120)
                res = result_fields(out)
                mb = float(res["mbps"]) * float(res["elapsed_s"])
                f = figures(name, meter.delta(m0, meter.snap(), mb),
                            {k: float(res[k]) for k in ("mbps", "rps", "p50_ms", "p99_ms", "elapsed_s")})
                f["repeat"] = r
                show(setup, f)
                runs["runs"].append(f)
            if "e2e" not in a.loads:
                continue
            m0 = meter.snap()
            out = run_child([sys.executable, str(ROOT / "bench" / "shared_latency.py"), "--bootstrap", boot,
                             "--consume", reader, "--topic", t4, "--count", str(a.e2e_count)], timeout=300)
            res = result_fields(out)
            f = figures("e2e", meter.delta(m0, meter.snap(), 0),
                        {k: float(res[k]) for k in ("e2e_p50_ms", "e2e_p99_ms", "ack_p50_ms", "ack_p99_ms")})
            f["repeat"] = r
            f["path"] = out.splitlines()[0]
            show(setup, f)
            runs["runs"].append(f)
        if isinstance(setup, Cluster) and setup.n == max(a.brokers) and a.db_count:
            runs["db_capacity"] = db_capacity(setup, meter, a)
    finally:
        meter.close()


def db_capacity(setup, meter, a):
    """Produce commits (one object's batches over P partitions) from --db-threads
    connections flat out, the brokers stopped: the windows per second the database takes."""
    bench = str(Path(a.build) / "bench" / "sluice-objstore-bench")
    # Its commits name objects that are not in the store: no broker may run background
    # work on them (and the brokers' own transactions stay out of the count).
    for b in setup.brokers:
        subprocess.run([str(ROOT / "scripts" / "cluster"), "kill", str(setup.dir), str(b["id"])],
                       env=setup.env, capture_output=True, timeout=60)
    time.sleep(1)
    m0 = meter.snap()
    out = run_child([bench, "pg", "--partitions", "4,64", "--threads", str(a.db_threads),
                     "--count", str(a.db_count)],
                    timeout=300, env=setup.engine_env)
    d = meter.delta(m0, meter.snap(), 0)
    rows = []
    for line in out.splitlines():
        v = line.split()
        if len(v) == 6 and v[0].isdigit():
            rows.append({"partitions": int(v[0]), "threads": int(v[1]), "p50_ms": float(v[2]),
                         "p99_ms": float(v[3]), "commits_per_s": float(v[5])})
        elif v and v[0] == "phases" and rows:  # the commit's parts: NAME P50/P99 ...
            rows[-1]["phases"] = {v[i]: [float(x) for x in v[i + 1].split("/")] for i in range(1, len(v) - 1, 2)}
    commits = a.db_count * len(rows)
    cap = {"rows": rows, "pg_cpu_s": d["pg_cpu"], "bench_cpu_s": d["children_cpu"],
           "others_cpu_s": d["others_cpu"], "secs": d["secs"], "write_xacts": d["write_xacts"],
           "pg_cpu_ms_per_commit": 1000 * d["pg_cpu"] / commits if commits else None}
    print("database capacity: %s; PostgreSQL CPU %.2f ms per commit (its own %.1f s of %.1f s)" % (
        ", ".join("%d partitions %.0f commits/s (p50 %.1f ms; %s)" % (
            r["partitions"], r["commits_per_s"], r["p50_ms"],
            " ".join("%s %.1f/%.1f" % (k, *v) for k, v in r.get("phases", {}).items()))
                  for r in rows), cap["pg_cpu_ms_per_commit"] or 0, d["pg_cpu"], d["secs"]), flush=True)
    return cap


def fmt(v, digits=1):
    if v is None:
        return ""
    if abs(v) >= 100:
        return "{:,.0f}".format(v)
    return ("%." + str(digits) + "f") % v


def summary(results, a):
    setups = [k for k, v in results.items() if isinstance(v, dict) and "runs" in v]

    def med(key, run, field):
        return median_range([f.get(field) for f in results[key]["runs"] if f["run"] == run])

    def cell(key, run, field, digits=1):
        m, lo, hi = med(key, run, field)
        if m is None:
            return ""
        if lo == hi or a.repeats < 2:
            return fmt(m, digits)
        return "%s (%s-%s)" % (fmt(m, digits), fmt(lo, digits), fmt(hi, digits))

    rows = [
        ("flat out, 4 partitions", "flat", [("MB/s", "mbps", 1), ("p50 / p99 ms", ("p50_ms", "p99_ms"), 1)]),
        ("steady %g MB/s, 4 partitions" % a.rate_mbps, "steady4",
         [("p50 / p99 ms", ("p50_ms", "p99_ms"), 1), ("PUTs/s", "put_per_s", 1)]),
        ("steady %g MB/s, 64 partitions" % a.rate_mbps, "steady64",
         [("p50 / p99 ms", ("p50_ms", "p99_ms"), 1), ("PUTs/s", "put_per_s", 1)]),
        ("one record at a time", "e2e", [("acknowledged: p50 / p99 ms", ("ack_p50_ms", "ack_p99_ms"), 1),
                                        ("read at another broker: p50 / p99 ms", ("e2e_p50_ms", "e2e_p99_ms"), 1)]),
    ]
    def base(k):
        """What setup k's ratios are against: single-node mode, or, without it, the
        cluster of the same size with the fewest windows in flight (--windows-in-flight)."""
        if "single" in results:
            return "single"
        m = re.fullmatch(r"(shared\d+)-w\d+", k)
        if m is None:
            return None
        return min((x for x in setups if x.startswith(m.group(1) + "-w")),
                   key=lambda x: int(x.rsplit("-w", 1)[1]))

    ratio_keys = [k for k in setups if base(k) not in (None, k)]
    lines = ["| load | figure | " + " | ".join(results[k]["name"] for k in setups) +
             " | " + " | ".join("%s / %s" % (results[k]["name"], results[base(k)]["name"]) for k in ratio_keys) +
             " |", "|---|---|" + "---:|" * (len(setups) + len(ratio_keys))]
    for label, run, items in rows:
        for i, (name, field, digits) in enumerate(items):
            cells, ratios = [], []
            for k in setups:
                if isinstance(field, tuple):
                    cells.append(" / ".join(fmt(med(k, run, f)[0], digits) for f in field))
                else:
                    cells.append(cell(k, run, field, digits))
            for k in ratio_keys:
                fields = field if isinstance(field, tuple) else (field,)
                rs = []
                for f in fields:
                    s, x = med(base(k), run, f)[0], med(k, run, f)[0]
                    rs.append(fmt(x / s, 2) if s and x is not None else "")
                ratios.append(" / ".join(rs))
            lines.append("| %s | %s | %s | %s |" % (label if i == 0 else "", name, " | ".join(cells),
                                                    " | ".join(ratios)))
    print("\n" + "\n".join(lines))

    # The price: requests, transactions and CPU per second and per MB.
    cols = [("MB/s", "mbps", 1), ("PUT/s", "put_per_s", 1), ("GET/s", "get_per_s", 1),
            ("LIST+DELETE/s", None, 1), ("PUT/MB", "put_per_mb", 3), ("write txn/s", "write_xacts_per_s", 1),
            ("all txn/s", "xacts_per_s", 1), ("write txn/MB", "write_xacts_per_mb", 3),
            ("jobs/s", "jobs_per_s", 1), ("merged PUT/s", "merged_put_per_s", 1),
            ("brokers CPU ms/MB", "brokers_cpu_ms_per_mb", 2), ("PostgreSQL CPU ms/MB", "pg_cpu_ms_per_mb", 2),
            ("s3proxy CPU ms/MB", "s3_cpu_ms_per_mb", 2), ("PostgreSQL share", "pg_share", 2),
            ("others' CPU s", "others_cpu_s", 1)]
    lines = ["| setup | run | " + " | ".join(c[0] for c in cols) + " |", "|---|---|" + "---:|" * len(cols)]
    for k in setups:
        for run in ("idle", "flat", "steady4", "steady64", "e2e"):
            cells = []
            for name, field, digits in cols:
                if field is None:
                    a1 = med(k, run, "list_per_s")[0]
                    a2 = med(k, run, "delete_per_s")[0]
                    cells.append(fmt((a1 or 0) + (a2 or 0), digits) if a1 is not None else "")
                else:
                    cells.append(fmt(med(k, run, field)[0], digits))
            lines.append("| %s | %s | %s |" % (results[k]["name"], run, " | ".join(cells)))
    print("\n" + "\n".join(lines))
    # Where a window's time goes: each phase's p50 / p99 (ms), medians over the repeats.
    keys = ("room_wait", *PHASES, "window")
    lines = ["| setup | run | windows | " + " | ".join(keys) + " |", "|---|---|" + "---:|" * (len(keys) + 1)]
    for k in setups:
        for run in ("flat", "steady4", "steady64", "e2e"):
            fs = [f.get("phases") or {} for f in results[k]["runs"] if f["run"] == run]
            if not any(fs):
                continue

            def pm(key, q):
                return median_range([f[key][q] for f in fs if key in f])[0]
            cells = [fmt(median_range([f.get("window", {}).get("count") for f in fs])[0], 0)]
            cells += ["%s / %s" % (fmt(pm(key, "p50_ms")), fmt(pm(key, "p99_ms"))) if pm(key, "p50_ms") is not None
                      else "" for key in keys]
            lines.append("| %s | %s | %s |" % (results[k]["name"], run, " | ".join(cells)))
    if len(lines) > 2:
        print("\nproduce window phases, p50 / p99 ms (sluice_shared_window_phase_seconds, all brokers):")
        print("\n".join(lines))
    for k in setups:
        cap = results[k].get("db_capacity")
        if cap:
            print("\ndatabase capacity (%s's PostgreSQL, brokers stopped, %d connections): %s; %.2f ms of "
                  "PostgreSQL CPU per commit" % (results[k]["name"], a.db_threads, ", ".join(
                      "%d partitions: %.0f commits/s, p50 %.1f ms, p99 %.1f ms" % (
                          r["partitions"], r["commits_per_s"], r["p50_ms"], r["p99_ms"]) for r in cap["rows"]),
                      cap["pg_cpu_ms_per_commit"] or 0))
    print("\nload average at each setup's start: " + "; ".join(
        "%s %s" % (results[k]["name"], results[k]["load_at_start"]) for k in setups))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--secs", type=int, default=8, help="each loadgen run")
    ap.add_argument("--rate-mbps", type=float, default=10, help="the steady runs")
    ap.add_argument("--idle-secs", type=float, default=4)
    ap.add_argument("--e2e-count", type=int, default=150)
    ap.add_argument("--db-count", type=int, default=300, help="produce commits per partition count (0: skip)")
    ap.add_argument("--db-threads", type=int, default=4, help="connections of the database capacity run")
    ap.add_argument("--brokers", default="1,3", help="cluster sizes to run, after single node")
    ap.add_argument("--loads", default="flat,steady4,steady64,e2e",
                    help="comma-separated loads to run of flat, steady4, steady64, e2e (all by default)")
    ap.add_argument("--no-single", action="store_true")
    ap.add_argument("--windows-in-flight", default="",
                    help="comma-separated --shared-windows-in-flight values: one cluster of each size per value")
    ap.add_argument("--s3-delay-ms", type=int, default=0,
                    help="delay every object-store request this long (a proxy in front of s3proxy)")
    ap.add_argument("--broker-flags", default="",
                    help="more `sluice serve` flags for the clusters' brokers (one string, shell-quoted)")
    ap.add_argument("--json", help="write the raw figures here")
    ap.add_argument("--keep", action="store_true", help="keep the scratch dir (logs, cluster data)")
    a = ap.parse_args()
    a.brokers = [int(x) for x in a.brokers.split(",") if x]
    a.loads = [x for x in a.loads.split(",") if x]
    if not a.loads or set(a.loads) - {"flat", "steady4", "steady64", "e2e"}:
        raise SystemExit("shared_bench: --loads takes flat, steady4, steady64 and e2e, comma-separated")
    sluice = str(Path(a.build) / "sluice")
    loadgen = str(Path(a.build) / "bench" / "sluice-loadgen")
    for b in (sluice, loadgen):
        if not os.access(b, os.X_OK):
            raise SystemExit("shared_bench: %s is missing (cmake --build build --target sluice sluice-loadgen "
                             "sluice-objstore-bench)" % b)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="sluice-sharedbench-"))
    start = time.monotonic()
    git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    print("shared_bench: %s, commit %s, %d cores, load average %s, scratch %s" % (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), git, os.cpu_count(), load_avg(), work), flush=True)
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": git,
               "args": {k: v for k, v in vars(a).items()}}
    try:
        in_flight = [int(x) for x in a.windows_in_flight.split(",") if x] or [None]
        makers = ([] if a.no_single else [lambda: SingleNode(sluice, work)]) + \
            [lambda n=n, w=w: Cluster(n, work, sluice, w, a.s3_delay_ms, a.broker_flags) for n in a.brokers for w in in_flight]
        for make in makers:
            setup = make()
            try:
                bench_setup(setup.start(), a, loadgen, results)
            finally:
                setup.stop()
        summary(results, a)
    finally:
        results["secs"] = time.monotonic() - start
        results["load_at_end"] = load_avg()
        if a.json:
            Path(a.json).write_text(json.dumps(results, indent=1) + "\n")
        print("\nshared_bench: %.0f s, load average at the end %s" % (results["secs"], load_avg()), flush=True)
        if a.keep:
            print("shared_bench: scratch dir kept at %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
