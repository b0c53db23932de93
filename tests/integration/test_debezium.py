"""Debezium's PostgreSQL connector in a Kafka Connect 4.3 distributed worker against
Sluice: docs/connect.md's worked example, end to end.

One module-wide set-up, as a user would do it: a broker with SQL, a PostgreSQL 15 cluster
with wal_level=logical (postgres_helpers.py), `public.customers` with REPLICA IDENTITY
FULL, the compacted change topic and the three internal topics created beforehand, an
expansion of the change topic created before the connector starts, then one worker (the
user's settings only: no idempotence, compression or assignor overrides) and the
connector (pgoutput, a heartbeat, topics Connect may create itself).

The tests run in file order on that state, each adding to it: change events for
inserts, updates and deletes (a delete is a change event and a tombstone); a restarted
worker resumes from the stored offsets; the SQL of docs/connect.md through psycopg2;
the expansion keeps every change; deleting the topic names the expansion; and, last,
the broker's default compaction leaves the latest change per key while the expansion's
target keeps every row. Every expected row comes from PostgreSQL itself (RETURNING).
"""

import json
import time

import pytest

import connect_helpers as C
import expansion_helpers as X
import jvm_helpers as J
import postgres_helpers as P
import sluice_helpers as H
import sql_helpers as S

PREFIX = "dbserver1"
TOPIC = PREFIX + ".public.customers"
HEARTBEAT_TOPIC = "__debezium-heartbeat." + PREFIX
CONNECTOR = "customers-cdc"
GROUP = "cdc-connect"
TARGET = "cdc.customers_changes"
INTERNAL_TOPICS = {GROUP + "-configs": 1, GROUP + "-offsets": 25, GROUP + "-status": 5}
EVENT_TIMEOUT = 120.0
# max.compaction.lag.ms defaults to 30 s: a record is compacted within about that long
# once it is no longer the latest of its key; this leaves the cleaner three periods.
COMPACTION_TIMEOUT = 90.0

ROW = "id, email, name, balance::text"
CUSTOMER_FIELDS = [{"name": "id", "type": "int64"}, {"name": "email", "type": "string"},
                   {"name": "name", "type": "string"}, {"name": "balance", "type": "string"}]
EXPANSION_FIELDS = [{"name": "op", "type": "string"}, {"name": "ts_ms", "type": "timestamp_ms"},
                    {"name": "before", "type": "struct", "fields": CUSTOMER_FIELDS},
                    {"name": "after", "type": "struct", "fields": CUSTOMER_FIELDS}]

# Plain JSON change events, without the Connect schema wrapper.
WORKER_EXTRA = {"key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false"}


def connector_config(pg):
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "plugin.name": "pgoutput",
        "database.hostname": "127.0.0.1",
        "database.port": str(pg.port),
        "database.user": "postgres",
        "database.password": "unused-with-trust",
        "database.dbname": "postgres",
        "topic.prefix": PREFIX,
        "table.include.list": "public.customers",
        "slot.name": "sluice_cdc",
        "publication.name": "sluice_cdc",
        "publication.autocreate.mode": "filtered",
        "tombstones.on.delete": "true",
        "decimal.handling.mode": "string",
        "heartbeat.interval.ms": "1000",
        # The heartbeat topic is left to Connect to create.
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "1",
    }


def row_dict(r):
    return dict(zip(("id", "email", "name", "balance"), r))


class Cdc:
    """The module's broker, database and worker, and the change events expected so far:
    [(key id, op, before, after)], a tombstone being (id, None, None, None)."""

    def __init__(self, broker, pg, workdir):
        self.b, self.pg, self.workdir = broker, pg, workdir
        self.worker = None
        self.workers = 0
        self.expected = []

    def start_worker(self):
        self.workers += 1
        self.worker = C.Worker(self.workdir / "connect", self.b.bootstrap, group_id=GROUP,
                               extra=WORKER_EXTRA, name="worker%d" % self.workers).start()
        return self.worker

    def change(self, sql, op, key_id=None):
        """Runs a statement with `RETURNING <ROW>` (inserts, updates) or a delete of
        key_id, and appends the events Debezium must write for it."""
        before = None
        if op in ("u", "d"):
            before = row_dict(self.pg.execute("SELECT %s FROM customers WHERE id = %%s" % ROW, (key_id,))[0])
        rows = self.pg.execute(sql)
        if op == "d":
            self.expected += [(key_id, "d", before, None), (key_id, None, None, None)]
        else:
            after = row_dict(rows[0])
            self.expected.append((after["id"], op, before, after))

    def events(self, n, timeout=EVENT_TIMEOUT):
        """The change topic's first n records, read from the beginning once there are n."""
        H.wait_until("%d records in %s" % (n, TOPIC),
                     lambda: H.high_watermarks(self.b.bootstrap, TOPIC, 1)[0] >= n, timeout=timeout, interval=0.5)
        return [r for r in H.consume_all(self.b.bootstrap, TOPIC, {0: n}) if r["offset"] < n]


def decoded(rec):
    """(key id, op, before, after) of a change-topic record."""
    key = json.loads(rec["key"])
    if rec["value"] is None:
        return (key["id"], None, None, None)
    v = json.loads(rec["value"])
    return (key["id"], v["op"], v["before"], v["after"])


def assert_events(got, expected):
    got = [decoded(r) for r in got]
    assert len(got) == len(expected), "got %d events, expected %d:\n%r\n%r" % (len(got), len(expected), got, expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g == e, "event at offset %d: got %r, expected %r" % (i, g, e)


@pytest.fixture(scope="module")
def cdc(module_broker_factory, tmp_path_factory):
    b = module_broker_factory(extra_args=S.SQL_ARGS)
    workdir = tmp_path_factory.mktemp("cdc")
    pg = P.PostgresCluster(workdir).start()
    c = Cdc(b, pg, workdir)
    try:
        pg.execute("CREATE TABLE customers (id serial PRIMARY KEY, email text NOT NULL, name text, "
                   "balance numeric(10, 2))")
        pg.execute("ALTER TABLE customers REPLICA IDENTITY FULL")
        # A row from before the connector: it comes in the snapshot, as a read ('r').
        c.change("INSERT INTO customers (email, name, balance) VALUES ('ada@example.com', 'Ada', 10.50) "
                 "RETURNING %s" % ROW, "r")
        for name, parts in INTERNAL_TOPICS.items():
            H.create_topic(b.bootstrap, name, parts, {"cleanup.policy": "compact"})
        H.create_topic(b.bootstrap, TOPIC, 1, {"cleanup.policy": "compact"})
        X.create(b.http, TOPIC, TARGET, {"fields": EXPANSION_FIELDS, "key": {"type": "string"}}, flatten=True)
        c.start_worker().put_connector(CONNECTOR, connector_config(pg))
        c.worker.wait_running(CONNECTOR)
        yield c
    finally:
        if c.worker:
            c.worker.stop()
        pg.stop()


def test_inserts_updates_deletes_arrive_as_change_events(cdc):
    # The snapshot's read first: once it is in, the slot exists and streaming follows.
    assert_events(cdc.events(1), cdc.expected)
    ins = "INSERT INTO customers (email, name, balance) VALUES ('%s', '%s', %s) RETURNING " + ROW
    cdc.change(ins % ("grace@example.com", "Grace", "20.00"), "c")
    cdc.change(ins % ("linus@example.com", "Linus", "0.99"), "c")
    cdc.change(ins % ("ken@example.com", "Ken", "5.00"), "c")
    cdc.change("UPDATE customers SET email = 'grace@navy.example' WHERE id = 2 RETURNING " + ROW, "u", 2)
    cdc.change("UPDATE customers SET balance = balance + 100 WHERE id = 3 RETURNING " + ROW, "u", 3)
    cdc.change("UPDATE customers SET name = 'Grace Hopper' WHERE id = 2 RETURNING " + ROW, "u", 2)
    cdc.change("DELETE FROM customers WHERE id = 4", "d", 4)
    # r, 3 c, 3 u, d and its tombstone, in commit order.
    assert len(cdc.expected) == 9
    got = cdc.events(len(cdc.expected))
    assert_events(got, cdc.expected)
    assert got[-1]["value"] is None and got[-2]["key"] == got[-1]["key"] == b'{"id":4}'


def test_heartbeats_reach_the_topic_connect_created(cdc):
    H.wait_topic(cdc.b.bootstrap, HEARTBEAT_TOPIC, 1, timeout=60)
    H.wait_until("a heartbeat", lambda: H.high_watermarks(cdc.b.bootstrap, HEARTBEAT_TOPIC, 1)[0] >= 1,
                 timeout=60, interval=0.5)
    # Heartbeats go on arriving: read the first one only.
    c = H.make_consumer(cdc.b.bootstrap)
    try:
        c.assign([H.TopicPartition(HEARTBEAT_TOPIC, 0, 0)])
        m = None
        deadline = time.monotonic() + 30
        while (m is None or m.error()) and time.monotonic() < deadline:
            m = c.poll(1.0)
        assert m is not None and not m.error(), m and m.error()
        beat = {"key": m.key(), "value": m.value(), "offset": m.offset()}
    finally:
        c.close()
    assert beat["offset"] == 0
    assert json.loads(beat["key"]) == {"serverName": PREFIX}
    assert json.loads(beat["value"])["ts_ms"] > time.time() * 1000 - 3600_000


def test_restarted_worker_resumes_from_stored_offsets(cdc):
    n = len(cdc.expected)
    cdc.events(n)
    cdc.worker.stop()
    assert cdc.worker.proc.returncode is not None
    # Changes while no worker runs: the slot keeps them, the stored offset says where to resume.
    cdc.change("INSERT INTO customers (email, name, balance) VALUES ('barbara@example.com', 'Barbara', 7.25) "
               "RETURNING " + ROW, "c")
    cdc.change("UPDATE customers SET balance = 11.00 WHERE id = 1 RETURNING " + ROW, "u", 1)
    offsets = {}
    for r in H.consume_all(cdc.b.bootstrap, GROUP + "-offsets", H.high_watermarks(cdc.b.bootstrap, GROUP + "-offsets", 25)):
        if r["key"] and json.loads(r["key"])[0] == CONNECTOR:
            offsets[r["key"]] = r["value"]
    assert list(offsets) == [json.dumps([CONNECTOR, {"server": PREFIX}], separators=(",", ":")).encode()], offsets
    assert "lsn" in json.loads(list(offsets.values())[0])
    cdc.start_worker().wait_running(CONNECTOR)
    cdc.change("UPDATE customers SET name = 'Barbara Liskov' WHERE id = 5 RETURNING " + ROW, "u", 5)
    # No second snapshot and nothing twice: exactly the three changes after the first nine.
    got = cdc.events(len(cdc.expected))
    assert_events(got, cdc.expected)
    time.sleep(3)
    assert H.high_watermarks(cdc.b.bootstrap, TOPIC, 1)[0] == len(cdc.expected)


LATEST_SQL = """
SELECT CAST(key AS TEXT), value ->> '$.op', CAST(value ->> '$.after.id' AS BIGINT), value ->> '$.after.email',
       value ->> '$.after.name', value ->> '$.after.balance'
FROM (SELECT key, value,
             row_number() OVER (PARTITION BY key ORDER BY timestamp_broker DESC, "offset" DESC) AS rn
      FROM kafka_topics."%s")
WHERE rn = 1 AND value IS NOT NULL
ORDER BY 3
""" % TOPIC


def test_latest_change_per_key_in_sql_is_the_table(cdc):
    cdc.events(len(cdc.expected))
    conn = S.pg_connect(cdc.b.pg)
    try:
        rows = S.pg_rows(conn, LATEST_SQL)
    finally:
        conn.close()
    table = cdc.pg.execute("SELECT %s FROM customers ORDER BY id" % ROW)
    assert [r[2:] for r in rows] == [(r[0], r[1], r[2], r[3]) for r in table], rows
    assert [r[0] for r in rows] == ['{"id":%d}' % r[0] for r in table]
    assert 4 not in [r[2] for r in rows]


def target_rows(b):
    conn = S.pg_connect(b.pg)
    try:
        return S.pg_rows(conn, "SELECT _offset, _key, op, before__id, before__email, before__name, before__balance, "
                               "after__id, after__email, after__name, after__balance, _parse_error "
                               "FROM %s ORDER BY _offset" % TARGET)
    finally:
        conn.close()


def expected_target_rows(expected):
    def side(row):
        return (None,) * 4 if row is None else (row["id"], row["email"], row["name"], row["balance"])
    return [(i, '{"id":%d}' % k, op) + side(before) + side(after) + (0,)
            for i, (k, op, before, after) in enumerate(expected)]


def test_expansion_has_every_change_as_typed_columns(cdc):
    cdc.events(len(cdc.expected))
    X.wait_caught_up(cdc.b.http, TARGET)
    assert target_rows(cdc.b) == expected_target_rows(cdc.expected)


def test_deleting_the_topic_names_the_expansion(cdc):
    # kafka-topics.sh --delete, as a user would try it.
    proc = J.run_java("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", cdc.b.bootstrap,
                      "--delete", "--topic", TOPIC, check=False, timeout=120)
    out = proc.stdout + proc.stderr
    assert "PolicyViolationException" in out and TARGET in out, out[-3000:]
    assert TOPIC in H.list_topic_names(cdc.b.bootstrap)
    cdc.b.assert_alive()


def test_compaction_keeps_latest_change_per_key_target_keeps_all(cdc):
    """Against the broker's defaults (no segment settings): see max.compaction.lag.ms."""
    n = len(cdc.expected)
    cdc.events(n)
    latest = {}
    for off, ev in enumerate(cdc.expected):
        latest[ev[0]] = (off, ev)
    want = sorted(latest.values())

    def compacted():
        hw = H.high_watermarks(cdc.b.bootstrap, TOPIC, 1)[0]
        got = H.consume_all(cdc.b.bootstrap, TOPIC, {0: hw})
        return [(r["offset"], decoded(r)) for r in got] == want

    H.wait_until("the change topic compacted to the latest change per key", compacted,
                 timeout=COMPACTION_TIMEOUT, interval=2.0)
    assert target_rows(cdc.b) == expected_target_rows(cdc.expected)
    conn = S.pg_connect(cdc.b.pg)
    try:
        assert S.pg_rows(conn, 'SELECT count(*) FROM kafka_topics."%s"' % TOPIC) == [(len(want),)]
        assert len(S.pg_rows(conn, LATEST_SQL)) == len(cdc.pg.execute("SELECT id FROM customers"))
    finally:
        conn.close()
