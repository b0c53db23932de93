"""A Kafka Connect worker running Debezium's PostgreSQL connector carries on across a
broker restart, clean (SIGTERM) and not (`kill -9`): issue 33's report, where the
worker lost its group membership at every restart, its connector went UNASSIGNED and
changes reached the topic again only after `scheduled.rebalance.max.delay.ms` (5 min).

One broker on a fixed port (the worker's bootstrap must stay valid across restarts), one
PostgreSQL, one worker and the connector of test_debezium.py for the file. Each test
restarts the broker, then inserts a row: its change event must be in the topic within
RESUME_BOUND s (the measured time is printed), so must a second one made SETTLE_S s
later, once the worker has heartbeated the restarted broker, and the worker's group must
still be at the generation it had before the restart (system.groups).
"""

import json
import time

import pytest

import connect_helpers as C
import postgres_helpers as P
import sluice_helpers as H
import sql_helpers as S
from test_debezium import PREFIX, TOPIC, WORKER_EXTRA, connector_config

CONNECTOR = "customers-restart"
GROUP = "cdc-restart"
INTERNAL_TOPICS = {GROUP + "-configs": 1, GROUP + "-offsets": 5, GROUP + "-status": 1}
RESUME_BOUND = 30.0
SETTLE_S = 7.0


class Setup:
    def __init__(self, b, pg, worker):
        self.b, self.pg, self.worker = b, pg, worker
        self.events = 0  # change events in TOPIC so far

    def generation(self):
        rows = S.http_rows(self.b.http, "SELECT state, generation FROM system.groups WHERE group_id = '%s'" % GROUP)
        assert len(rows) == 1, rows
        return tuple(rows[0])

    def insert(self, email):
        (row,) = self.pg.execute("INSERT INTO customers (email, name, balance) VALUES (%s, 'x', 1.00) "
                                 "RETURNING id", (email,))
        return row[0]

    def wait_event(self, timeout):
        """Waits for the next change event; returns (its decoded value, seconds waited)."""
        t0 = time.monotonic()
        n = self.events + 1
        H.wait_until("change event #%d in %s" % (n, TOPIC),
                     lambda: H.high_watermarks(self.b.bootstrap, TOPIC, 1)[0] >= n, timeout=timeout, interval=0.2)
        took = time.monotonic() - t0
        (rec,) = [r for r in H.consume_all(self.b.bootstrap, TOPIC, {0: n}) if r["offset"] == n - 1]
        self.events = n
        return json.loads(rec["value"]), took


@pytest.fixture(scope="module")
def cdc(module_broker_factory, tmp_path_factory):
    b = module_broker_factory(extra_args=S.SQL_ARGS, listen="127.0.0.1:%d" % C.free_port())
    workdir = tmp_path_factory.mktemp("cdc-restart")
    pg = P.PostgresCluster(workdir).start()
    worker = None
    try:
        pg.execute("CREATE TABLE customers (id serial PRIMARY KEY, email text NOT NULL, name text, "
                   "balance numeric(10, 2))")
        for name, parts in INTERNAL_TOPICS.items():
            H.create_topic(b.bootstrap, name, parts, {"cleanup.policy": "compact"})
        H.create_topic(b.bootstrap, TOPIC, 1)
        worker = C.Worker(workdir / "connect", b.bootstrap, group_id=GROUP, extra=WORKER_EXTRA).start()
        config = dict(connector_config(pg), **{"slot.name": "sluice_restart", "publication.name": "sluice_restart"})
        worker.put_connector(CONNECTOR, config)
        worker.wait_running(CONNECTOR)
        s = Setup(b, pg, worker)
        # Streaming runs once a first change has come through.
        s.insert("before@example.com")
        value, _ = s.wait_event(120)
        assert value["after"]["email"] == "before@example.com", value
        yield s
    finally:
        if worker:
            worker.stop()
        pg.stop()


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
def test_changes_flow_within_seconds_of_a_broker_restart(cdc, how):
    before = cdc.generation()
    assert before[0] == "Stable", before
    if how == "kill9":
        cdc.b.kill9()
    else:
        cdc.b.stop()
    cdc.b.start()
    t_up = time.monotonic()
    email = "after-%s@example.com" % how
    key = cdc.insert(email)
    value, _ = cdc.wait_event(RESUME_BOUND)
    took = time.monotonic() - t_up
    print("%s: first change event %.1f s after the broker was back (bound %.0f s)" % (how, took, RESUME_BOUND))
    assert (value["op"], value["after"]["id"], value["after"]["email"]) == ("c", key, email), value
    # By the end of the sleep the worker has heartbeated the restarted broker (every 3 s);
    # one that had lost its membership would have rejoined as a new member by then.
    time.sleep(SETTLE_S)
    email = "later-%s@example.com" % how
    key = cdc.insert(email)
    value, took = cdc.wait_event(RESUME_BOUND)
    print("%s: a change %.0f s after the restart arrived in %.1f s" % (how, SETTLE_S, took))
    assert (value["op"], value["after"]["id"], value["after"]["email"]) == ("c", key, email), value
    status = cdc.worker.get("/connectors/%s/status" % CONNECTOR)
    assert status["connector"]["state"] == "RUNNING", status
    assert [t["state"] for t in status["tasks"]] == ["RUNNING"], status
    assert cdc.generation() == before, "the worker's group rebalanced across the restart"
