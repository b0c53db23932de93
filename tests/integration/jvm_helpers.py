"""The JVM side of the suite: Java programs under tests/jvm (the Java client, Kafka's
tools, Kafka Connect, Debezium, the PostgreSQL JDBC driver) run with the class path that
`make test-deps` resolved from tests/jvm/pom.xml.

A missing class path is a failure naming `make test-deps`, never a skip.
"""

import os
import pathlib
import select
import subprocess
import time

JVM_DIR = pathlib.Path(__file__).resolve().parent.parent / "jvm"
JAR = JVM_DIR / "target" / "sluice-jvm-tests.jar"
CLASSPATH_FILE = JVM_DIR / "target" / "classpath.txt"
# The class-data-sharing archive `make test-deps` writes (scripts/jvm-class-archive): a JVM
# maps the classes it holds instead of loading them, a third of the start time. A JVM that
# cannot use it (jars changed since, another Java) starts as before; -Xlog keeps it quiet.
CLASS_ARCHIVE = JVM_DIR / "target" / "classes.jsa"
JAVA = os.environ.get("SLUICE_JAVA", "java")
KAFKA_TOOL = JVM_DIR.parent.parent / "scripts" / "kafka-tool"


def class_archive_args():
    """The JVM flags that map the test-deps class archive, or none when there is none."""
    if not CLASS_ARCHIVE.exists():
        return []
    return [f"-XX:SharedArchiveFile={CLASS_ARCHIVE}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]


def classpath():
    """The jar of tests/jvm's own classes, then every dependency the pom resolved."""
    if not JAR.exists() or not CLASSPATH_FILE.exists():
        raise AssertionError(f"{JAR} or {CLASSPATH_FILE} is missing: run `make test-deps`")
    return f"{JAR}:{CLASSPATH_FILE.read_text().strip()}"


def java_command(main_class, *args, jvm_args=()):
    """The argv that runs MAIN_CLASS (a class of tests/jvm or of a dependency)."""
    return [JAVA, "-Xms64m", "-Xmx512m", *class_archive_args(), *jvm_args, "-cp", classpath(), main_class,
            *map(str, args)]


def run_java(main_class, *args, timeout=120, input=None, check=True, jvm_args=()):
    """Runs MAIN_CLASS to its end and returns the CompletedProcess (text stdout/stderr).

    With check, a non-zero exit fails the test with the program's stderr tail. A program
    run to its end is short: C1 only (-XX:TieredStopAtLevel=1) starts it sooner."""
    jvm_args = ("-XX:TieredStopAtLevel=1", *jvm_args)
    proc = subprocess.run(java_command(main_class, *args, jvm_args=jvm_args), input=input,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{main_class} {' '.join(map(str, args))} exited {proc.returncode}:\n"
                             f"{proc.stderr[-4000:]}\n--- stdout ---\n{proc.stdout[-2000:]}")
    return proc


class ToolRunner:
    """Kafka's command-line tools run one after another in one JVM (ToolRunner, tests/jvm):
    each run is the tool's main class with its arguments, as scripts/kafka-tool starts it,
    with its own stdout, stderr, empty stdin and exit code; the JVM starts once, not once
    per run (about 2 s each on a shared machine). For suites that call tools tens of times;
    a tool reading stdin or run for its start-up keeps scripts/kafka-tool."""

    def __init__(self):
        self.proc = None
        self.classes = {}

    def main_class(self, tool):
        """The main class scripts/kafka-tool runs for TOOL (kafka-acls, acls, ...)."""
        if tool not in self.classes:
            self.classes[tool] = subprocess.run([str(KAFKA_TOOL), "--class", tool], capture_output=True,
                                                text=True, check=True, timeout=30).stdout.strip()
        return self.classes[tool]

    def run(self, tool, *args, timeout=120):
        """Runs TOOL with ARGS; a CompletedProcess (text stdout and stderr, returncode)."""
        argv = [self.main_class(tool), *map(str, args)]
        assert not any("\0" in a or "\n" in a for a in argv), argv
        if self.proc is None or self.proc.poll() is not None:
            import sluice_helpers as H
            self.proc = H.register_proc(subprocess.Popen(
                java_command("dev.sluice.jvmtests.tools.ToolRunner", jvm_args=("-XX:TieredStopAtLevel=1",)),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
        self.proc.stdin.write(("\0".join(argv) + "\n").encode())
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        head = self._read_until(b"\n", deadline, argv)
        fields = head.decode().split()
        assert len(fields) == 4 and fields[0] == "EXIT", f"ToolRunner answered {head!r}"
        code, n_out, n_err = map(int, fields[1:])
        out = self._read_exactly(n_out, deadline, argv)
        err = self._read_exactly(n_err, deadline, argv)
        return subprocess.CompletedProcess(argv, code, out.decode("utf-8", "replace"),
                                           err.decode("utf-8", "replace"))

    def _wait_readable(self, deadline, argv):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
            self.close()
            raise subprocess.TimeoutExpired(argv, 0)

    def _read_until(self, sep, deadline, argv):
        buf = b""
        while not buf.endswith(sep):
            self._wait_readable(deadline, argv)
            chunk = os.read(self.proc.stdout.fileno(), 1)
            if not chunk:
                raise AssertionError(f"ToolRunner exited {self.proc.wait()} running {argv}")
            buf += chunk
        return buf

    def _read_exactly(self, n, deadline, argv):
        buf = b""
        while len(buf) < n:
            self._wait_readable(deadline, argv)
            chunk = os.read(self.proc.stdout.fileno(), n - len(buf))
            if not chunk:
                raise AssertionError(f"ToolRunner exited {self.proc.wait()} running {argv}")
            buf += chunk
        return buf

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_TOOLS = ToolRunner()


def run_tool(tool, *args, timeout=180):
    """Runs one of Kafka's tools (a scripts/kafka-tool name) with ARGS in the suite's one
    ToolRunner JVM; a CompletedProcess with text stdout and stderr, as subprocess.run's."""
    return _TOOLS.run(tool, *args, timeout=timeout)
