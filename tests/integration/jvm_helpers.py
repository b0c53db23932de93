"""The JVM side of the suite: Java programs under tests/jvm (the Java client, Kafka's
tools, Kafka Connect, Debezium, the PostgreSQL JDBC driver) run with the class path that
`make test-deps` resolved from tests/jvm/pom.xml.

A missing class path is a failure naming `make test-deps`, never a skip.
"""

import os
import pathlib
import subprocess

JVM_DIR = pathlib.Path(__file__).resolve().parent.parent / "jvm"
JAR = JVM_DIR / "target" / "sluice-jvm-tests.jar"
CLASSPATH_FILE = JVM_DIR / "target" / "classpath.txt"
# The class-data-sharing archive `make test-deps` writes (scripts/jvm-class-archive): a JVM
# maps the classes it holds instead of loading them, a third of the start time. A JVM that
# cannot use it (jars changed since, another Java) starts as before; -Xlog keeps it quiet.
CLASS_ARCHIVE = JVM_DIR / "target" / "classes.jsa"
JAVA = os.environ.get("SLUICE_JAVA", "java")


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
