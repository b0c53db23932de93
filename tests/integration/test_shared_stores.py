"""Shared mode's metadata stores and broker leases (src/shared/pg_*_store, broker_registry)
against Debian's PostgreSQL 15 in a private cluster (postgres_helpers.py). The tests are
C++ (tests/unit/shared/metadata_stores_test.cc, one test for the local and the shared
implementation of each store, shared_catalog_test.cc and group_fence_test.cc); without a database their
PostgreSQL half skips, so this file starts one, runs the binary with SLUICE_TEST_PG_URL
set and fails on any failure or skip."""

import os
import re
import subprocess

import pytest

import postgres_helpers as P
from test_shared_engines import CATALOG_VERSION


def store_test_bin():
    return P.H.built_binary("SLUICE_SHARED_STORE_TEST", "tests/unit/shared/shared_store_test")


@pytest.fixture(scope="module")
def pg(tmp_path_factory):
    cluster = P.PostgresCluster(tmp_path_factory.mktemp("pg")).start()
    yield cluster
    cluster.stop()


def test_stores_and_leases_against_postgresql(pg):
    env = dict(os.environ, SLUICE_TEST_PG_URL=pg.url)
    proc = subprocess.run([store_test_bin(), "--gtest_color=no"], capture_output=True, env=env, timeout=300)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out[-4000:] + proc.stderr.decode()[-2000:]
    assert "SKIPPED" not in out, out[-4000:]
    passed = int(re.search(r"\[  PASSED  \] (\d+) tests?", out).group(1))
    local = len(re.findall(r"\[       OK \] (?:metadata|security)_stores/local\.", out))
    postgresql = len(re.findall(r"\[       OK \] (?:metadata|security)_stores/postgresql\.", out))
    shared_only = len(re.findall(r"\[       OK \] (?:shared_catalog|broker_leases|shared_security|group_fence_test)\.", out))
    # Every behavioural test ran against both implementations, and the shared-only ones ran.
    assert local >= 12 and postgresql == local and shared_only >= 9, out[-4000:]
    # The group coordinator epochs' tests (group_fence_test.cc) among them.
    assert len(re.findall(r"\[       OK \] group_fence_test\.", out)) == 5, out[-4000:]
    assert passed == local + postgresql + shared_only, out[-4000:]
    # The tables are the documented version's.
    assert pg.execute("SELECT version FROM sluice_catalog_version") == [(CATALOG_VERSION,)]
    # A user created on one store authenticated on the other (shared_security_test.cc):
    # the time it took, through NOTIFY and through the poll alone.
    for line in re.findall(r"^\w+ authenticated on broker B .*$", out, re.M):
        print(line)
    # Two brokers changing one transaction's record at once (shared_catalog_test.cc).
    for line in re.findall(r"^concurrent transaction record writes: .*$", out, re.M):
        print(line)
    assert len(re.findall(r"authenticated on broker B", out)) == 2, out[-4000:]
