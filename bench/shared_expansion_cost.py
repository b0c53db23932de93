"""What expansions cost in shared mode, where every broker expands every event into a copy
of the target of its own (docs/expansions.md, "Shared mode"). Starts a two-broker
`scripts/cluster` in DIR, creates an expansion at broker 1, produces N JSON events at
broker 0 with librdkafka, and prints when the produce was acknowledged, when each
broker's copy held every row (GET /v1/expansions/T), and each broker's CPU seconds
meanwhile; then the same produce to a topic without an expansion.

    SLUICE_BIN=build/sluice python3 bench/shared_expansion_cost.py DIR [N]
"""

import json, os, subprocess, sys, time, urllib.request
from pathlib import Path
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
from cluster_helpers import cluster_cmd, state, kafka
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

d = Path(sys.argv[1])
N = int(sys.argv[2]) if len(sys.argv) > 2 else 50000
def http(i): return next(b["http"] for b in state(d)["brokers"] if b["id"] == i)
def pid(i):
    for e in os.listdir("/proc"):
        if e.isdigit():
            try: c = open("/proc/%s/cmdline" % e, "rb").read().split(b"\0")
            except OSError: continue
            if b"serve" in c and str(d / ("broker-%d-cache" % i)).encode() in c: return int(e)
def cpu(p):
    f = open("/proc/%d/stat" % p).read().split(")")[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def api(i, method, path, body=None):
    req = urllib.request.Request("http://" + http(i).split("://")[-1] + path, method=method,
        data=json.dumps(body).encode() if body else None, headers={"Content-Type": "application/json"} if body else {})
    with urllib.request.urlopen(req, timeout=30) as r: return json.loads(r.read())
try:
    cluster_cmd("up", d, "--brokers", 2)
    a = AdminClient({"bootstrap.servers": kafka(d, 0)})
    for f in a.create_topics([NewTopic("m", 4, 1)]).values(): f.result(30)
    time.sleep(2)
    api(1, "POST", "/v1/expansions", {"topic": "m", "target": "b.ev", "schema": {"fields": [
        {"name": "n", "type": "int64"}, {"name": "name", "type": "string"}, {"name": "x", "type": "float64"}]}})
    time.sleep(2)
    c0, c1 = cpu(pid(0)), cpu(pid(1))
    t0 = time.monotonic()
    p = Producer({"bootstrap.servers": kafka(d, 0), "linger.ms": 20})
    for n in range(N):
        p.produce("m", value=b'{"n":%d,"name":"event-%d","x":%d.5}' % (n, n, n), partition=n % 4)
        if n % 1000 == 0: p.poll(0)
    p.flush(60)
    t_prod = time.monotonic() - t0
    done = {}
    while len(done) < 2 and time.monotonic() - t0 < 300:
        for i in (0, 1):
            if i not in done and api(i, "GET", "/v1/expansions/b.ev")["rows"] == N:
                done[i] = time.monotonic() - t0
        time.sleep(0.1)
    print("events", N, "produced+acked in %.2fs" % t_prod, "rows complete at", {k: "%.2fs" % v for k, v in done.items()})
    print("cpu s during run: broker0 (producing+expanding) %.2f, broker1 (expanding only) %.2f" % (cpu(pid(0)) - c0, cpu(pid(1)) - c1))
    # without expansion: a second topic
    for f in a.create_topics([NewTopic("m2", 4, 1)]).values(): f.result(30)
    time.sleep(2)
    c0, c1 = cpu(pid(0)), cpu(pid(1))
    t0 = time.monotonic()
    for n in range(N):
        p.produce("m2", value=b'{"n":%d,"name":"event-%d","x":%d.5}' % (n, n, n), partition=n % 4)
        if n % 1000 == 0: p.poll(0)
    p.flush(60)
    time.sleep(done.get(1, 0) - t_prod if done else 0)
    print("same without expansion: produced in %.2fs; cpu s broker0 %.2f, broker1 %.2f" % (time.monotonic() - t0, cpu(pid(0)) - c0, cpu(pid(1)) - c1))
finally:
    subprocess.run([str(REPO / "scripts" / "cluster"), "down", str(d)], capture_output=True, timeout=120)
