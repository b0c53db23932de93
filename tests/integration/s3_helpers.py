"""A real S3-compatible server for shared mode's tests and scripts/cluster, and a fault
proxy to put in front of it.

`S3Server(workdir).start()` runs s3proxy (Maven Central, tests/s3proxy/pom.xml, fetched
by `make test-deps`) with its filesystem backend under WORKDIR/s3-data, on a free
127.0.0.1 port, with SigV4 authentication (ACCESS_KEY/SECRET_KEY below); the bucket
BUCKET exists from the start (a bucket is a directory of the backend).

`FaultProxy(upstream)` forwards HTTP requests unchanged (the Host header too, so that
signatures still match) and can answer the next N requests itself with an error, as a
throttling object store answers 503 SlowDown, or delay them.
"""

import http.client
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLASSPATH_FILE = REPO / "tests" / "s3proxy" / "target" / "classpath.txt"
ACCESS_KEY = "sluice-test"
SECRET_KEY = "sluice-test-secret"
BUCKET = "sluice"
REGION = "us-east-1"
# s3proxy is a JVM: under load on 2 cores its start has taken 25 s.
START_TIMEOUT = 120.0

LOGBACK = """<configuration>
  <appender name="out" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d %-5level %logger{20} %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="out"/></root>
</configuration>
"""
# With log_requests, s3proxy's handler logs each request it receives
# ("... S3ProxyHandler request: Request(PUT http://HOST:PORT/BUCKET/KEY)@..."), as
# bench/shared_bench.py counts them; a line per request, no proxy in the data path.
REQUEST_LOGGER = '<logger name="org.gaul.s3proxy.S3ProxyHandler" level="DEBUG"/>'


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def classpath():
    if not CLASSPATH_FILE.exists():
        raise AssertionError("%s missing: run `make test-deps` (or `make s3proxy`)" % CLASSPATH_FILE)
    return CLASSPATH_FILE.read_text().strip()


class S3Server:
    def __init__(self, workdir, port=None, register=None, detach=False, fast_start=True, log_requests=False):
        self.workdir = Path(workdir)
        self.data = self.workdir / "s3-data"
        self.log_file = self.workdir / "s3.log"
        self.port = port
        self.proc = None
        self._register = register
        self._detach = detach
        self._fast_start = fast_start
        self._log_requests = log_requests

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def env(self, endpoint=None, prefix=""):
        """The probe's and the benchmark's settings (src/shared/engine_env.h)."""
        return {"SLUICE_S3_ENDPOINT": endpoint or self.endpoint, "SLUICE_S3_BUCKET": BUCKET,
                "SLUICE_S3_PREFIX": prefix, "SLUICE_S3_REGION": REGION,
                "SLUICE_S3_ACCESS_KEY": ACCESS_KEY, "SLUICE_S3_SECRET_KEY": SECRET_KEY}

    def start(self):
        (self.data / BUCKET).mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        conf = self.workdir / "s3proxy.conf"
        conf.write_text("\n".join([
            "s3proxy.endpoint=%s" % self.endpoint,
            "s3proxy.authorization=aws-v4",
            "s3proxy.identity=%s" % ACCESS_KEY, "s3proxy.credential=%s" % SECRET_KEY,
            "jclouds.provider=filesystem-nio2",
            "jclouds.identity=%s" % ACCESS_KEY, "jclouds.credential=%s" % SECRET_KEY,
            "jclouds.filesystem.basedir=%s" % self.data, ""]))
        logback = self.workdir / "s3-logback.xml"
        logback.write_text(LOGBACK.replace("  <root", "  %s\n  <root" % REQUEST_LOGGER) if self._log_requests
                           else LOGBACK)
        # fast_start: C1 only, the server starts in half the time, and the tests' loads are
        # small; a long-running server (scripts/cluster) gets the optimizing compiler,
        # which verifies signed payloads (SHA-256) several times faster.
        jit = ["-XX:TieredStopAtLevel=1"] if self._fast_start else []
        cmd = ["java", *jit, "-Xmx512m", "-Dlogback.configurationFile=%s" % logback,
               "-cp", classpath(), "org.gaul.s3proxy.Main", "--properties", str(conf)]
        with open(self.log_file, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         cwd=str(self.workdir), start_new_session=self._detach)
        if self._register:
            self._register(self.proc)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("s3proxy exited %s at start-up:\n%s" % (self.proc.returncode, self.log_tail()))
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/")
                conn.getresponse().read()
                conn.close()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("s3proxy not answering after %.0fs:\n%s" % (START_TIMEOUT, self.log_tail()))
                time.sleep(0.2)

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def remove(self):
        self.stop()
        shutil.rmtree(self.data, ignore_errors=True)

    def log_tail(self, n=60):
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-n:])
        except OSError as e:
            return "<cannot read %s: %s>" % (self.log_file, e)


class FaultProxy:
    """Forwards to UPSTREAM (host, port); `fail_next(n)` answers the next n requests with
    `status`/`code` itself, `fail_always()` every request until `heal()`, and `delay`
    seconds are waited before each request is forwarded; requests whose path holds
    `slow_match` wait `slow_delay` seconds instead, and are listed in `slowed` (method,
    path) when they arrive; requests whose path holds `fail_match` are answered with
    `status`/`code` (after their delay) as long as it is set."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.lock = threading.Lock()
        self.failures_left = 0
        self.status = 503
        self.code = "SlowDown"
        self.delay = 0.0
        self.slow_match = None
        self.slow_delay = 0.0
        self.slowed = []
        self.fail_match = None
        self.requests = 0  # every request received
        self.failed = 0    # answered with an injected error
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy.lock:
                    proxy.requests += 1
                    fail = proxy.failures_left != 0 or (
                        proxy.fail_match is not None and proxy.fail_match in self.path)
                    if proxy.failures_left > 0:
                        proxy.failures_left -= 1
                    if fail:
                        proxy.failed += 1
                    delay = proxy.delay
                    if proxy.slow_match and proxy.slow_match in self.path:
                        delay = proxy.slow_delay
                        proxy.slowed.append((self.command, self.path))
                if delay:
                    time.sleep(delay)
                if fail:
                    text = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code>"
                            "<Message>Please reduce your request rate.</Message></Error>" % proxy.code).encode()
                    self.send_response(proxy.status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(text)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(text)
                    return
                up = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=60)
                headers = {k: v for k, v in self.headers.items()}
                up.request(self.command, self.path, body=body if body else None, headers=headers)
                resp = up.getresponse()
                data = resp.read()
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data) if self.command != "HEAD"
                                                       else resp.getheader("Content-Length") or 0))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                up.close()

            do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _handle

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a client that gave up on a delayed answer closed its connection

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def fail_next(self, n, status=503, code="SlowDown"):
        with self.lock:
            self.failures_left, self.status, self.code = n, status, code

    def fail_always(self, status=503, code="SlowDown"):
        self.fail_next(-1, status, code)

    def heal(self):
        with self.lock:
            self.failures_left = 0

    def close(self):
        self.server.shutdown()
        self.server.server_close()
