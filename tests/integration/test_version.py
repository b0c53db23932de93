"""`sluice --version` and `sluice version` name the version (CMakeLists.txt's project())
and the commit of the build; the broker logs them at start-up and SQL's version() names
them after the PostgreSQL version that drivers parse."""

import re
import shutil
import subprocess
from pathlib import Path

import conftest
import sql_helpers as Q

REPO = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^sluice (\d+\.\d+\.\d+) \(commit ([0-9a-f]{12}(?:-dirty)?|unknown)\)$")


def project_version():
    m = re.search(r"project\(sluice\b[^)]*\bVERSION (\d+\.\d+\.\d+)", (REPO / "CMakeLists.txt").read_text())
    assert m, "no VERSION in CMakeLists.txt's project()"
    return m.group(1)


def run(args):
    proc = subprocess.run([conftest.require_binary()] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=20)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr)
    return proc.stdout.decode()


def version_and_commit():
    out = run(["version"])
    assert out.endswith("\n") and out.count("\n") == 1, out
    m = LINE.match(out.strip())
    assert m, "unexpected version line %r" % out
    return out.strip(), m.group(1), m.group(2)


def test_version_command_and_flag_agree():
    line, version, commit = version_and_commit()
    assert version == project_version()
    assert run(["--version"]).strip() == line
    if (REPO / ".git").exists() and shutil.which("git"):
        # A commit of this repository, which the binary was built from.
        sha = commit.removesuffix("-dirty")
        assert sha != "unknown", "a build from a git checkout must name its commit"
        rc = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", sha + "^{commit}"]).returncode
        assert rc == 0, "%s is not a commit of %s" % (sha, REPO)


def test_a_tree_without_git_says_unknown(tmp_path):
    """The version header of a build from a tarball (no .git): commit "unknown"."""
    cmake = shutil.which("cmake")
    assert cmake, "cmake is not installed"
    out = tmp_path / "version_info.h"
    subprocess.run([cmake, "-DVERSION=9.8.7", "-DSOURCE_DIR=%s" % tmp_path, "-DOUTPUT=%s" % out,
                    "-P", str(REPO / "cmake" / "version.cmake")], check=True, timeout=60)
    text = out.read_text()
    assert '#define SLUICE_VERSION_TEXT "9.8.7"' in text, text
    assert '#define SLUICE_COMMIT_TEXT "unknown"' in text, text


def test_broker_logs_version_and_sql_names_it(broker_factory):
    line, version, commit = version_and_commit()
    b = broker_factory(extra_args=Q.SQL_ARGS)
    want = "(Sluice %s %s)" % (version, commit)
    # psycopg2 parses the server's version the way drivers do.
    conn = Q.pg_connect(b.pg)
    try:
        assert conn.server_version == 150000, conn.server_version
        with conn.cursor() as cur:
            cur.execute("SELECT version()")
            pg_text = cur.fetchone()[0]
            cur.execute("SELECT pg_catalog.version()")
            assert cur.fetchone()[0] == pg_text
    finally:
        conn.close()
    assert pg_text.startswith("PostgreSQL 15.0 on ") and pg_text.endswith(want), pg_text
    http = Q.http_query(b.http, "SELECT version() AS v, upper(version()) = upper(version()) AS same")
    assert http["rows"] == [[pg_text, 1]], http
    b.stop()
    log = open(b.stderr_paths[-1], encoding="utf-8").read()
    assert re.search(r"INFO app: %s starting" % re.escape(line), log), log[:2000]
