"""Kafka Connect distributed workers (connect-runtime from tests/jvm/pom.xml) against a
Sluice broker, and the worker's REST API.

A worker is configured only with what a Kafka user writes: bootstrap servers, group id,
the three internal topics and converters, plus whatever the test passes in `extra`
(security settings, the REST port). Connectors on the class path (Debezium's PostgreSQL
connector, Kafka's FileStream connectors) are found without a plugin.path.
"""

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import jvm_helpers as J
import sluice_helpers as H

WORKER_CLASS = "org.apache.kafka.connect.cli.ConnectDistributed"
START_TIMEOUT = 120.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_properties(bootstrap, group_id, rest_port, extra=None, prefix=None):
    """The worker file's settings: nothing Sluice-specific."""
    prefix = prefix or group_id
    props = {
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "config.storage.topic": f"{prefix}-configs",
        "offset.storage.topic": f"{prefix}-offsets",
        "status.storage.topic": f"{prefix}-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "listeners": f"http://127.0.0.1:{rest_port}",
        "offset.flush.interval.ms": "1000",
        # Every plugin on the class path (Kafka's, Debezium's) has a ServiceLoader manifest,
        # as the worker's own warning says: finding them that way skips the reflective
        # scan of every jar, most of a worker's start-up CPU (KIP-898).
        "plugin.discovery": "service_load",
    }
    props.update(extra or {})
    return props


class Worker:
    """One ConnectDistributed process; `url` is its REST API."""

    def __init__(self, workdir, bootstrap, group_id="connect-cluster", extra=None, name="worker",
                 prefix=None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.rest_port = free_port()
        self.url = f"http://127.0.0.1:{self.rest_port}"
        self.props = worker_properties(bootstrap, group_id, self.rest_port, extra, prefix)
        self.props_file = self.workdir / f"{name}.properties"
        self.log_file = self.workdir / f"{name}.log"
        self.proc = None

    def launch(self):
        """Starts the worker's process without waiting for its REST API."""
        self.props_file.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        log = open(self.log_file, "ab")
        # C1 only (-XX:TieredStopAtLevel=1): a test's worker moves tens of records, and the
        # optimising compiler's threads would take most of a shared core while it starts.
        self.proc = H.register_proc(subprocess.Popen(
            J.java_command(WORKER_CLASS, self.props_file, jvm_args=("-Xmx768m", "-XX:TieredStopAtLevel=1")),
            stdout=log, stderr=subprocess.STDOUT))
        log.close()
        return self

    def start(self, timeout=START_TIMEOUT):
        self.launch()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker {self.name} exited {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if self.get("/").get("version"):
                    return self
            except (OSError, ValueError):
                pass
            time.sleep(0.5)
        raise AssertionError(f"worker {self.name} gave no REST answer in {timeout}s:\n{self.log_tail()}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill9(self):
        H.kill_proc(self.proc)

    def log_tail(self, n=80):
        return H.tail(self.log_file, n)

    def request(self, method, path, body=None, timeout=30):
        """(status, parsed JSON or None) of one REST call; HTTP errors are returned too."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                raw = r.read()
                return r.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, raw.decode("utf-8", "replace")

    def get(self, path):
        status, body = self.request("GET", path)
        if status != 200:
            raise ValueError(f"GET {path}: {status} {body}")
        return body

    def put_connector(self, name, config):
        """Creates or updates connector NAME; returns the REST answer's body."""
        status, body = self.request("PUT", f"/connectors/{name}/config", config)
        assert status in (200, 201), f"PUT connector {name}: {status} {body}\n{self.log_tail()}"
        return body

    def wait_running(self, name, tasks=1, timeout=120):
        """Waits until connector NAME and TASKS of its tasks are RUNNING; returns the status."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            status, last = self.request("GET", f"/connectors/{name}/status")
            if status == 200:
                states = [t["state"] for t in last.get("tasks", [])]
                if any(s == "FAILED" for s in states) or last["connector"]["state"] == "FAILED":
                    raise AssertionError(f"connector {name} failed: {json.dumps(last)[:4000]}")
                if last["connector"]["state"] == "RUNNING" and states.count("RUNNING") >= tasks:
                    return last
            time.sleep(0.5)
        raise AssertionError(f"connector {name} not running in {timeout}s: {last}\n{self.log_tail()}")


# --------------------------------------------------------------------------
# Added for test_connect_cluster.py / test_connect_security.py
# --------------------------------------------------------------------------

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"


def file_source(path, topic):
    """Kafka's FileStreamSource: each line of PATH becomes one record (its text) of TOPIC."""
    return {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "tasks.max": "1", "file": str(path), "topic": topic,
            "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}


def file_sink(path, topic, tasks=1):
    """Kafka's FileStreamSink: every record of TOPIC becomes one line (its value) of PATH."""
    return {"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "tasks.max": str(tasks), "file": str(path), "topics": topic,
            "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}


def placement(worker, names):
    """{connector or "connector/task": worker_id} of RUNNING connectors and tasks, as one
    worker's REST API reports them (status of each named connector)."""
    out = {}
    for name in names:
        st = worker.get(f"/connectors/{name}/status")
        if st["connector"]["state"] == "RUNNING":
            out[name] = st["connector"]["worker_id"]
        for t in st.get("tasks", []):
            if t["state"] == "RUNNING":
                out[f"{name}/{t['id']}"] = t["worker_id"]
    return out


def pem_keystore(cert, key, path):
    """One PEM file with the private key (PKCS#8) and the certificate, as the Java client's
    ssl.keystore.type=PEM reads it."""
    pkcs8 = subprocess.run(["openssl", "pkcs8", "-topk8", "-nocrypt", "-in", str(key)],
                           capture_output=True, text=True, timeout=30, check=True).stdout
    Path(path).write_text(pkcs8 + Path(cert).read_text())
    return Path(path)


def with_prefixes(props, prefixes=("", "producer.", "consumer.", "admin.")):
    """The worker's client settings repeated for the connectors' producers, consumers and
    admin clients, as the worker file must carry them."""
    return {p + k: v for p in prefixes for k, v in props.items()}
