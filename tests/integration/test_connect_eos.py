"""Kafka Connect 4.3.1 exactly-once source (KIP-618, issue 34): a distributed worker with
exactly.once.source.support=enabled, in the worker setup of docs/connect.md, runs Kafka's
FileStreamSource with exactly.once.support=required, so each poll's records and the
file position reached go out in one transaction (the task's transactional id is
GROUP-CONNECTOR-0). Lines are appended to the file while the worker is killed with
kill -9 and started again: the restarted task goes on from the last committed position,
and a read_committed consumer and SQL see every line exactly once, in order -- where an
at-least-once worker would write again what it had sent since its last offset flush.
"""

import threading
import time

import connect_helpers as C
import sluice_helpers as H
import sql_helpers as S
import txn_views as V

GROUP, CONNECTOR, TOPIC, LINES = "connect-eos", "eos-file", "connect-eos-lines", 3000


def test_exactly_once_source_across_a_worker_kill9(broker_factory, tmp_path):
    b = broker_factory(extra_args=S.SQL_ARGS + ["--transaction-abort-check-interval-ms", "1000",
                                                "--log-level", "debug"])
    H.create_topic(b.bootstrap, TOPIC, 1)
    worker = C.Worker(tmp_path / "connect", b.bootstrap, group_id=GROUP,
                      extra={"exactly.once.source.support": "enabled", "plugin.discovery": "service_load"})
    src = tmp_path / "lines.txt"
    src.write_text("")
    stop = threading.Event()
    written = [0]

    def writer():
        with open(src, "a") as f:
            while written[0] < LINES and not stop.is_set():
                for _ in range(20):
                    f.write("line-%05d\n" % written[0])
                    written[0] += 1
                f.flush()
                time.sleep(0.05)
    t = threading.Thread(target=writer, daemon=True)
    try:
        worker.start()
        worker.put_connector(CONNECTOR, dict(C.file_source(src, TOPIC), **{
            "exactly.once.support": "required", "transaction.boundary": "poll"}))
        worker.wait_running(CONNECTOR)
        t.start()
        H.wait_until("lines committed", lambda: len(V.read(b.bootstrap, TOPIC, 1)) >= 300, timeout=90,
                     interval=0.5)
        worker.kill9()
        killed_at = len(V.read(b.bootstrap, TOPIC, 1))
        assert killed_at < LINES, "the source finished before the kill"
        worker.start()
        worker.wait_running(CONNECTOR)
        t.join(120)
        want = ["line-%05d" % i for i in range(LINES)]
        view = H.wait_until("every line committed", lambda: (lambda v: len(v) >= LINES and v)(
            V.read(b.bootstrap, TOPIC, 1)), timeout=120, interval=1)
    finally:
        stop.set()
        worker.stop()
    got = V.values(view)
    assert got == want, ("%d lines, %d distinct" % (len(got), len(set(got))),
                         [g for g in got if got.count(g) > 1][:5], worker.log_tail(30))
    assert V.sql(b, TOPIC) == view
    # The records went out in the task's transactions.
    log = "".join(p.read_text(errors="replace") for p in b.stderr_paths)
    assert "transactional id '%s-%s-0'" % (GROUP, CONNECTOR) in log
    print("worker killed after %d committed lines" % killed_at)
