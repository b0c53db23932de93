"""`make install` gives a broker that runs on its own: the Makefile's install command
(as `make -n install` prints it, so the test cannot drift from the Makefile) installs
the build into a scratch prefix outside the repository; the prefix is then moved, and
the installed broker serves SQL on DuckDB (the default `--sql-engine`: DuckDB's library
comes from PREFIX/lib/sluice, stripped as the broker is) from another directory, with the build directory and the
repository hidden from it by empty file systems mounted over them in a mount namespace
of its own (as if they had been moved away). Where namespaces are not allowed the broker
sees them, and /proc/PID/maps still shows that the library it loaded is the installed one."""

import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from confluent_kafka import Producer

import conftest
import sql_helpers as Q

REPO = Path(__file__).resolve().parents[2]


def install_command(build_dir, prefix):
    """The install step of `make install`, as `make -n` prints it (not the deps and build
    steps before it: the build is there already)."""
    out = subprocess.run(["make", "-n", "-s", "install", "PREFIX=" + str(prefix), "BUILD_DIR=" + str(build_dir)],
                         cwd=REPO, capture_output=True, text=True, timeout=60, check=True).stdout
    lines = [ln for ln in out.splitlines() if "cmake --install" in ln]
    assert len(lines) == 1, "make -n install: expected one `cmake --install` line:\n" + out
    return lines[0]


def runpath(binary):
    out = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True, check=True).stdout
    return [ln.split("[", 1)[1].rstrip("]") for ln in out.splitlines() if "(RUNPATH)" in ln or "(RPATH)" in ln]


def section_names(binary):
    out = subprocess.run(["readelf", "-SW", str(binary)], capture_output=True, text=True, check=True).stdout
    return {ln.split("]", 1)[1].split()[0] for ln in out.splitlines() if ln.strip().startswith("[") and "]" in ln
            and ln.split("]", 1)[1].split()}


def namespaces_work():
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10).returncode == 0


class InstalledBroker(conftest.Broker):
    """The installed binary, started in a mount namespace where `hidden` are empty."""

    def __init__(self, workdir, binary, hidden):
        # No --sql-engine: the default is DuckDB.
        super().__init__(workdir, extra_args=["--pg", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        self.binary, self.hidden = str(binary), [str(h) for h in hidden]

    def wrapped(self, args):
        """`sluice ARGS` of the installed binary, in a namespace of its own that hides `hidden`."""
        cmd = [self.binary] + args
        if not self.hidden:
            return cmd
        mounts = " && ".join("mount -t tmpfs tmpfs " + shlex.quote(h) for h in self.hidden)
        # unshare and sh exec: the broker keeps the process id Popen knows.
        return ["unshare", "-rm", "sh", "-c", mounts + ' && exec "$@"', "sh"] + cmd

    def command(self):
        return self.wrapped(["serve", "--data-dir", str(self.data_dir), "--listen", self.listen] + self.extra_args)


@pytest.fixture
def scratch(request):
    """A directory outside the repository and the build directory (which get hidden), and
    the brokers of the test, stopped at its end."""
    d = Path(tempfile.mkdtemp(prefix="sluice-install-"))
    request.node._sluice_brokers = []
    yield d
    try:
        conftest._teardown_brokers(request.node._sluice_brokers)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_installed_broker_runs_duckdb_without_the_build(scratch, request):
    binary = Path(conftest.require_binary()).resolve()
    build_dir = binary.parent
    cmd = install_command(build_dir, scratch / "prefix")
    done = subprocess.run(cmd, shell=True, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, "%s\n%s%s" % (cmd, done.stdout, done.stderr)
    installed = sorted(str(p.relative_to(scratch / "prefix")) for p in (scratch / "prefix").rglob("*")
                       if p.is_file())
    assert installed == ["bin/sluice", "lib/sluice/libduckdb.so"], installed
    assert runpath(scratch / "prefix" / "bin" / "sluice") == ["$ORIGIN/../lib/sluice"]
    # Installed stripped: no symbol table, no debug information (the build's copy keeps them).
    sections = section_names(scratch / "prefix" / "bin" / "sluice")
    assert ".dynsym" in sections and ".text" in sections, sections
    assert not {".symtab", ".debug_info", ".debug_line"} & sections, sections
    assert {".symtab", ".debug_info"} <= section_names(binary)
    # DuckDB's library too (its symbol table, 11 MB of the npm package's 70.5 MB): the
    # dynamic symbols, C and C++, which the broker links against, stay (it runs below).
    lib = scratch / "prefix" / "lib" / "sluice" / "libduckdb.so"
    built_lib = Path(runpath(binary)[0]) / "libduckdb.so"
    assert ".dynsym" in section_names(lib) and ".symtab" not in section_names(lib), section_names(lib)
    assert ".symtab" in section_names(built_lib)
    assert lib.stat().st_size < built_lib.stat().st_size - 8_000_000, (lib.stat().st_size,
                                                                        built_lib.stat().st_size)

    # The installation moves as one tree; the broker runs from elsewhere.
    prefix = scratch / "moved" / "usr"
    prefix.parent.mkdir()
    (scratch / "prefix").rename(prefix)
    # The build directory, and the repository (which usually holds it): the outermost.
    hidden = [d for d in {REPO, build_dir} if not any(o != d and o in d.parents for o in {REPO, build_dir})]
    if not namespaces_work():
        hidden = []
    workdir = scratch / "run"
    workdir.mkdir()
    b = InstalledBroker(workdir, prefix / "bin" / "sluice", hidden)
    request.node._sluice_brokers.append(b)
    b.start()
    mounts = {(ln.split()[4], ln.split(" - ")[1].split()[0])
              for ln in Path("/proc/%d/mountinfo" % b.proc.pid).read_text().splitlines()}
    assert {(str(h), "tmpfs") for h in hidden} <= mounts, (hidden, mounts)
    maps = Path("/proc/%d/maps" % b.proc.pid).read_text()
    duck = {ln.split()[-1] for ln in maps.splitlines() if ln.endswith("libduckdb.so")}
    assert duck == {str(prefix / "lib" / "sluice" / "libduckdb.so")}, duck

    # DuckDB's own SQL (range(), a DuckDB table function) in a table of the user's.
    Q.http_rows(b.http, "CREATE TABLE t AS SELECT range AS n FROM range(1000)")
    assert Q.http_rows(b.http, "SELECT count(*), sum(n) FROM t") == [[1000, 499500]]

    # A topic as a table, read by DuckDB: what a producer had acknowledged.
    topic = subprocess.run(b.wrapped(["topic", "create", "events", "--partitions", "2",
                                      "--bootstrap", b.bootstrap]),
                           capture_output=True, text=True, timeout=60)
    assert topic.returncode == 0, topic.stderr
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    for i in range(10):
        p.produce("events", key=b"k%d" % i, value=b'{"n": %d}' % i)
    assert p.flush(30) == 0
    rows = Q.http_rows(b.http, "SELECT count(*), sum((value ->> '$.n')::INT) FROM kafka_topics.events")
    assert rows == [[10, 45]], rows
    b.stop()
