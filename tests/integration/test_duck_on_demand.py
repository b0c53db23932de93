"""DuckDB opened on first need (docs/sql.md, "Engines"; src/app/duck_on_demand.h): a
broker with no SQL listener (no --pg, no --http) and no expansion never opens its DuckDB
database, so its data directory has none after records are produced and consumed; an
expansion opens it (one of the catalog at start; in shared mode one created at another
broker while this one runs), and a SQL listener opens it at start. An older data
directory (the SQLite engine's `sql/main.db`, made here with Python's sqlite3 as
docs/formats/sql-dir.md describes it) stays unmigrated on a Kafka-only broker and is
copied once, at the first start that needs DuckDB."""

import sqlite3

from confluent_kafka import Producer

import expansion_helpers as X
import sluice_helpers as H
import sql_helpers as S

DUCK_FILE = ("sql-duck", "sluice.duckdb")
SCHEMA = [{"name": "n", "type": "int64"}, {"name": "name", "type": "string"}]


def duck_file(b):
    return b.data_dir.joinpath(*DUCK_FILE)


def produce(b, topic, start, count):
    """Events start..start+count-1, acknowledged (acks=all)."""
    p = Producer(H.producer_conf(b.bootstrap))
    H.produce_all(p, topic, [{"key": b"k%d" % n, "value": b'{"n": %d, "name": "e%d"}' % (n, n),
                              "partition": n % 2} for n in range(start, start + count)])


def opened_lines(b):
    return [ln for ln in b.log_lines() if "DuckDB opened for" in ln]


def test_kafka_only_broker_opens_duckdb_for_an_expansion(broker_factory):
    b = broker_factory()  # Kafka only
    H.create_topic(b.bootstrap, "events", 2)
    produce(b, "events", 0, 10)
    got = H.consume_all(b.bootstrap, "events", {0: 5, 1: 5})
    assert sorted(r["value"] for r in got) == sorted(b'{"n": %d, "name": "e%d"}' % (n, n) for n in range(10))
    assert not b.data_dir.joinpath("sql-duck").exists(), sorted(p.name for p in b.data_dir.iterdir())
    assert not b.data_dir.joinpath("sql-duck-tmp").exists()
    assert opened_lines(b) == []

    # A SQL listener opens it at start; the expansion is created over HTTP and backfills.
    b.extra_args = ["--http", "127.0.0.1:0"]
    b.restart()
    assert duck_file(b).exists()
    assert [ln for ln in opened_lines(b) if "the SQL listeners" in ln], b.log_lines()
    X.create(b.http, "events", "shop.events", SCHEMA, backfill=True)
    X.wait_caught_up(b.http, "shop.events")
    assert S.http_rows(b.http, "SELECT count(*), sum(n) FROM shop.events") == [[10, 45]]

    # Kafka only again, with an expansion in the catalog: it opens DuckDB at start, for the
    # expansion, and expands what is produced (a producer is answered once it is).
    b.extra_args = []
    b.restart()
    assert [ln for ln in opened_lines(b) if "an expansion's target" in ln], b.log_lines()
    produce(b, "events", 10, 6)
    b.extra_args = ["--http", "127.0.0.1:0"]
    b.restart()
    assert S.http_rows(b.http, "SELECT count(*), sum(n), max(name) FROM shop.events") == [[16, 120, "e9"]]


def old_data_dir(data_dir):
    """The SQLite engine's users' schema file of an older broker, with one table."""
    (data_dir / "sql").mkdir(parents=True)
    with sqlite3.connect(str(data_dir / "sql" / "main.db")) as con:
        con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        con.executemany("INSERT INTO notes (body) VALUES (?)", [("first",), ("second",), ("third",)])
    con.close()


def test_older_data_dir_is_migrated_at_the_first_need_once(broker_factory):
    b = broker_factory(start=False)
    old_data_dir(b.data_dir)
    b.start()  # Kafka only
    H.create_topic(b.bootstrap, "t", 2)
    produce(b, "t", 0, 2)
    b.stop()
    assert not b.data_dir.joinpath("sql-duck").exists()
    assert not [ln for ln in b.log_lines() if "notes" in ln], b.log_lines()

    b.extra_args = S.SQL_ARGS
    b.start()
    copied = [ln for ln in b.log_lines() if "copied main.notes (3 rows)" in ln]
    assert len(copied) == 1, b.log_lines()
    assert S.http_rows(b.http, "SELECT id, body FROM notes ORDER BY id") == [[1, "first"], [2, "second"],
                                                                              [3, "third"]]
    S.http_rows(b.http, "INSERT INTO notes (body) VALUES ('fourth')")
    b.restart()
    assert not [ln for ln in b.log_lines() if "main.notes" in ln], b.log_lines()
    assert S.http_rows(b.http, "SELECT count(*), max(id) FROM notes") == [[4, 4]]


def test_shared_mode_broker_opens_duckdb_when_another_creates_an_expansion(tmp_path, broker_factory,
                                                                           monkeypatch):
    """Shared mode: broker 0 of scripts/cluster (with its SQL listeners) and broker 1
    started here with Kafka only. An expansion created at broker 0 reaches broker 1 through
    the shared catalog: broker 1 opens DuckDB then, not before, and expands every event
    into its own copy of the target (read after a restart with --http)."""
    from cluster_helpers import running_cluster, state, wait_for
    cluster = running_cluster(tmp_path / "cluster", "--brokers", "1")
    d = next(cluster)
    try:
        st = state(d)
        for line in (d / "env").read_text().splitlines():
            key, value = line[len("export "):].split("=", 1)
            monkeypatch.setenv(key, value)
        b = broker_factory(extra_args=["--node-id", "1", "--shared-storage", "s3://%s/cluster/" % st["s3_bucket"],
                                       "--shared-catalog", st["postgres"]])
        http0 = st["brokers"][0]["http"]
        H.create_topic(b.bootstrap, "events", 2, config={"retention.ms": "-1"})
        produce(b, "events", 0, 10)
        assert not b.data_dir.joinpath("sql-duck").exists()

        X.create(http0, "events", "shop.events", SCHEMA, backfill=True)
        wait_for(lambda: opened_lines(b), timeout=30, what="broker 1 opening DuckDB for the expansion")
        assert duck_file(b).exists()
        assert all("an expansion's target" in ln for ln in opened_lines(b)), opened_lines(b)
        produce(b, "events", 10, 6)
        X.wait_caught_up(http0, "shop.events")
        b.extra_args += ["--http", "127.0.0.1:0"]
        b.restart()
        wait_for(lambda: S.http_rows(b.http, "SELECT count(*), sum(n) FROM shop.events") == [[16, 120]],
                 timeout=30, what="broker 1's copy of the target with every event")
        b.stop()
    finally:
        cluster.close()
