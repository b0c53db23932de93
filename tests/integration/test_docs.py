"""Every command in the docs works as written.

The shell blocks of README.md and docs/*.md marked runnable (```` ```sh run ````, see
docs_blocks.py for the conventions) run page by page, in page order, as a reader would
type them from the repository's root: one bash process per page (`set -euo pipefail`,
so variables and `cd` carry over between its blocks) in a scratch directory whose
`scripts` links to the repository's, with `sluice` on PATH (SLUICE_BIN, as after
`make install`). Each `text output` block must match what its block printed.

The docs name fixed ports (127.0.0.1:9092, 5432, 8080...), as a reader's broker uses
them, so each page runs in a network namespace of its own (`unshare -rn`, with only a
loopback interface): its ports are always free, pages cannot disturb each other or
other brokers on the machine, and the docs say exactly what a reader types. Where
namespaces are not allowed, the page runs on the host if every port it names is free,
and fails otherwise.

A page's broker is its own `sh background` block that runs `sluice serve` (security.md
starts one with TLS and SASL). A page with runnable blocks and no such block gets the
broker of `make run`, first: the command `make -n run` prints, with SLUICE_BIN for build/sluice, so the
flags cannot drift from the Makefile.

Every other shell block is listed in EXEMPT with the reason it is not run; a shell block
neither runnable nor listed, or a listed one that no longer exists, fails
test_every_shell_block_is_run_or_exempt.
"""

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import docs_blocks as D
import jvm_helpers as J

REPO = Path(__file__).resolve().parents[2]
PAGES = ["README.md"] + sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))
PAGE_TIMEOUT = 240  # seconds for one page's blocks, its brokers' start and stop included
PORT_TIMEOUT = 60   # seconds for a background block's ports to accept connections (a JVM's too)

# Pages none of whose shell blocks run, with the reason.
EXEMPT_PAGES = {
    "docs/benchmarks.md": "benchmark runs: minutes of load each, on a quiet dedicated machine",
    "docs/benchmarks-history.md": "the dated record of past benchmark runs and their commands",
    "docs/shared-mode.md": "starts PostgreSQL (which refuses root, and the test's namespace is root) and "
                           "s3proxy from Maven Central; test_shared_engines.py runs scripts/cluster and "
                           "the clients",
}

NO_ROOT_PG = ("PostgreSQL refuses to run as root, and every command in the test's namespace is root "
              "(unshare -r); test_debezium.py runs this connector configuration against PostgreSQL 15")

# (page, first line of the block) -> why the block is not run.
EXEMPT = {
    ("docs/compatibility.md", "scripts/kafka-tool kafka-share-groups --bootstrap-server 127.0.0.1:9092 --list"):
        "needs a share group (the group jobs, consumed and then stopped) that the page's broker does not "
        "have; test_share_groups_admin.py runs each command against a broker that has one",
    ("docs/transactions.md", "scripts/kafka-tool kafka-transactions --bootstrap-server 127.0.0.1:9092 list"):
        "names a topic, an id and the start offset of a hanging transaction the page's broker does not "
        "have; test_transactions_admin.py runs each command against a broker that has them",
    ("README.md", "make run    # installs what is missing, builds, serves Kafka on 127.0.0.1:9092 with data in ./data"):
        "builds, then serves until stopped; pages without a broker of their own get its "
        "broker, started from `make -n run`",
    ("README.md", "make run KAFKA=127.0.0.1:19092 PG=127.0.0.1:15432 HTTP=127.0.0.1:18080 DATA=./data2"):
        "the same broker as `make run` on other ports",
    ("README.md", "make install PREFIX=~/.local     # builds, then installs ~/.local/bin/sluice and DuckDB's library in ~/.local/lib/sluice, both stripped (default PREFIX: /usr/local)"):
        "builds and installs; test_install.py runs the Makefile's install command into a scratch "
        "prefix, and this test runs SLUICE_BIN as `sluice` instead",
    ("docs/security.md", "echo PASSWORD | sluice user add NAME [--mechanism SCRAM-SHA-256|SCRAM-SHA-512]... [--iterations N]"):
        "a synopsis: NAME, PASSWORD and [...] are placeholders",
    ("docs/security.md", "sluice policy put NAME FILE.json      # validated first; replaces a policy of that name"):
        "a synopsis: NAME, FILE and USER are placeholders",
    ("docs/sql-http.md", "curl -s --cacert ca.pem -u alice:alice-secret --data-binary 'SELECT count(*) FROM kafka_topics.orders' \\"):
        "needs security.md's broker (TLS, SASL, the user alice); test_security_sql.py covers HTTPS logins",
    ("docs/sql-http.md", "SLUICE_PASSWORD=alice-secret sluice sql --server https://127.0.0.1:8443 --auth alice \\"):
        "needs security.md's broker (TLS, SASL, the user alice); test_security_sql.py covers HTTPS logins",
    ("docs/sql-pg.md", 'PGPASSWORD=alice-secret psql "host=127.0.0.1 port=5432 user=alice dbname=sluice sslmode=disable" \\'):
        "needs a broker with users (security.md) and a host broker.example; test_security_sql.py covers both logins",
    ("docs/connect.md", "mvn -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy -DoutputDirectory=plugins \\"):
        "downloads from Maven Central, and the test's namespace has no network",
    ("docs/connect.md", "PATH=/usr/lib/postgresql/15/bin:$PATH"): NO_ROOT_PG,
    ("docs/connect.md", "curl -s -X PUT -H 'Content-Type: application/json' \\"): NO_ROOT_PG,
    ("docs/connect.md", "psql -h 127.0.0.1 -p 5433 -U cdc -d shop \\"): NO_ROOT_PG,
}


def sluice_bin():
    path = os.environ.get("SLUICE_BIN") or str(REPO / "build" / "sluice")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"sluice binary not found at {path} (build it, or set SLUICE_BIN)", pytrace=False)
    return path


def link_sluice(path):
    """The page's `sluice`: the binary under test."""
    path.symlink_to(sluice_bin())


def page_blocks(page):
    return D.read_blocks(REPO / page, page)


def make_run_command():
    """`make run`'s broker command, as `make -n run` prints it (without building)."""
    out = subprocess.run(["make", "-n", "-s", "run"], cwd=REPO, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    serve = out.replace("\\\n", " ").splitlines()
    line = next(ln for ln in serve if " serve " in ln)
    return re.sub(r"^\S*sluice ", "sluice ", line.strip())


def test_every_shell_block_is_run_or_exempt():
    problems = []
    used = set()
    for page in PAGES:
        for b in page_blocks(page):
            if b.lang not in D.SHELL_LANGS or b.runnable or page in EXEMPT_PAGES:
                continue
            key = (page, b.first_line)
            if key in EXEMPT:
                used.add(key)
            else:
                problems.append(f"{b.where()}: neither `sh run` nor in EXEMPT: {b.first_line}")
    problems += [f"EXEMPT names no block of {p}: {ln}" for p, ln in EXEMPT if (p, ln) not in used]
    assert not problems, "\n".join(problems)
    assert sum(1 for p in PAGES for b in page_blocks(p) if b.runnable) > 0


def _namespaces_work():
    try:
        return subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _port_free(host, port):
    import socket
    with socket.socket() as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def _wait_ports_snippet(addresses):
    """Bash that waits until each address accepts a connection (the server in $bg_pid
    must stay alive meanwhile), PORT_TIMEOUT at most."""
    lines = []
    for host, port in addresses:
        lines.append(
            f"for _i in $(seq {PORT_TIMEOUT * 10}); do "
            f"(exec 3<>/dev/tcp/{host}/{port}) 2>/dev/null && break; "
            f"kill -0 \"$bg_pid\" 2>/dev/null || {{ echo 'exited before listening on {host}:{port}' >&2; exit 1; }}; "
            f"sleep 0.1; done; (exec 3<>/dev/tcp/{host}/{port}) 2>/dev/null || "
            f"{{ echo 'nothing listens on {host}:{port} after {PORT_TIMEOUT} s' >&2; exit 1; }}")
    return "\n".join(lines)


def driver_script(blocks, state):
    """The bash program that runs BLOCKS in order, recording each block's output in
    STATE/out.N and err.N and the block being run in STATE/current."""
    s = [
        "set -euo pipefail",
        f"state={shlex.quote(str(state))}",
        "bg_pids=()",
        "stop_servers() {  # the last started first: a worker before the broker it uses",
        "  for ((i = ${#bg_pids[@]} - 1; i >= 0; i--)); do",
        "    kill -TERM -- \"-${bg_pids[i]}\" 2>/dev/null || true; wait \"${bg_pids[i]}\" 2>/dev/null || true",
        "    for _ in $(seq 300); do kill -0 -- \"-${bg_pids[i]}\" 2>/dev/null || break; sleep 0.1; done",
        "  done",
        "}",
        "trap 'rc=$?; stop_servers; echo $rc > \"$state/rc\"' EXIT",
    ]
    for n, b in enumerate(blocks):
        body = state / f"block.{n}.{'py' if b.lang == 'python' else 'sh'}"
        body.write_text(b.text if b.lang == "python" else "set -euo pipefail\n" + b.text)
        s.append(f"echo {n} > \"$state/current\"")
        if b.background:
            s.append(f"setsid bash {body} > \"$state/out.{n}\" 2> \"$state/err.{n}\" < /dev/null &")
            s.append("bg_pid=$!; bg_pids+=(\"$bg_pid\"); echo \"$bg_pid\" >> \"$state/bg\"")
            s.append(_wait_ports_snippet(b.addresses()))
        elif b.lang == "python":
            s.append(f"{sys.executable} {body} > \"$state/out.{n}\" 2> \"$state/err.{n}\" < /dev/null")
        else:
            # Sourced, so that exports and `cd` carry over to the page's next blocks.
            s.append(f"{{ source {body}; }} > \"$state/out.{n}\" 2> \"$state/err.{n}\" < /dev/null")
    s.append("echo done > \"$state/current\"")
    return "\n".join(s) + "\n"


def _kill_session(pgid):
    """Every process of the process group PGID (the driver's, or a server's)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def runnable_pages():
    return [p for p in PAGES if any(b.runnable for b in page_blocks(p))]


@pytest.mark.parametrize("page", runnable_pages())
def test_page_runs_as_written(page, tmp_path):
    blocks = [b for b in page_blocks(page) if b.runnable]
    if any("scripts/kafka-tool" in b.text for b in blocks):
        J.classpath()  # resolved by `make test-deps`: the page's namespace has no network
    if not any(b.background and "sluice serve" in b.text for b in blocks):
        blocks.insert(0, D.Block(page, 0, "sh", ["background"], make_run_command() + "\n"))
    work = tmp_path / "work"
    state = tmp_path / "state"
    bindir = tmp_path / "bin"
    for d in (work, state, bindir):
        d.mkdir()
    (work / "scripts").symlink_to(REPO / "scripts")
    link_sluice(bindir / "sluice")
    script = state / "driver.sh"
    script.write_text(driver_script(blocks, state))

    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    if _namespaces_work():
        argv = ["unshare", "-rn", "bash", "-c", 'ip link set lo up && exec bash "$0"', str(script)]
    else:
        taken = [f"{h}:{p}" for b in blocks if b.background for h, p in b.addresses() if not _port_free(h, p)]
        assert not taken, (f"{page}: no network namespaces here (unshare -rn), and the ports the "
                           f"page names are taken: {taken}")
        argv = ["bash", str(script)]
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        driver_out, _ = proc.communicate(timeout=PAGE_TIMEOUT)
    except subprocess.TimeoutExpired:
        _kill_session(proc.pid)
        driver_out, _ = proc.communicate()
    finally:
        _kill_session(proc.pid)
        bg = state / "bg"
        for pid in (bg.read_text().split() if bg.exists() else []):
            _kill_session(int(pid))  # each background block is a session of its own (setsid)
    elapsed = time.monotonic() - started

    current = (state / "current").read_text().strip() if (state / "current").exists() else "none"
    if current != "done" or proc.returncode != 0:
        if current.isdigit():
            b = blocks[int(current)]
            n = int(current)
            read = lambda name: (state / f"{name}.{n}").read_text(errors="replace") if (state / f"{name}.{n}").exists() else ""
            raise AssertionError(
                f"{b.where() if b.line else 'make run broker'} failed after {elapsed:.0f} s "
                f"(exit {proc.returncode}):\n{b.text}\n--- stderr ---\n{read('err')[-4000:]}\n"
                f"--- stdout ---\n{read('out')[-3000:]}\n--- driver ---\n{driver_out.decode(errors='replace')[-2000:]}"
                + _background_logs(blocks, state))
        raise AssertionError(f"{page}: the driver stopped at '{current}' (exit {proc.returncode}):\n"
                             f"{driver_out.decode(errors='replace')[-3000:]}")

    mismatches = []
    for n, b in enumerate(blocks):
        if b.output is None:
            continue
        got = (state / f"out.{n}").read_text(errors="replace")
        if not D.output_matches(b.output, got):
            mismatches.append(f"{b.output.where()}: the output of {b.where()} differs.\n--- the doc ---\n"
                              f"{b.output.text}--- printed ---\n{got}")
    assert not mismatches, "\n".join(mismatches)
    print(f"{page}: {len(blocks)} blocks in {elapsed:.1f} s")


def _background_logs(blocks, state):
    out = []
    for n, b in enumerate(blocks):
        if b.background and (state / f"err.{n}").exists():
            out.append(f"\n--- stderr of the server of {b.where() if b.line else 'make run'} ---\n"
                       + (state / f"err.{n}").read_text(errors="replace")[-3000:])
    return "".join(out)
