"""What operators use around transactions: Kafka's `kafka-transactions` tool (4.3.1 jars
through scripts/kafka-tool: list, describe, describe-producers, find-hanging, abort, i.e.
ListTransactions, DescribeTransactions, DescribeProducers and WriteTxnMarkers from the
Java Admin client), the system.transactions SQL table and
--transactional-id-expiration-ms.

The hanging transaction is made the way they arise in Kafka: a partition holds an open
transaction that its coordinator no longer knows (here the transactional id's rows are
removed from the catalog while the broker is down, as a coordinator that lost its state
would leave it). Its open transaction pins the partition's last stable offset, so a
read_committed consumer sees nothing after it until `kafka-transactions abort` writes
the ABORT marker.
"""

import sqlite3
import time

from confluent_kafka import Consumer, Producer, TopicPartition

import idempotence_helpers as I
import jvm_helpers as J
import kproto as K
import sluice_helpers as H
import sql_helpers as S

NONE = ("None", "-1")  # how the tool prints an absent value
TRANSACTIONAL_ID_NOT_FOUND = 105


def txn_tool(b, *args, check=True):
    proc = J.run_tool("kafka-transactions", "--bootstrap-server", b.bootstrap, *args)
    if check and proc.returncode != 0:
        raise AssertionError("kafka-transactions %s exited %d:\n%s\n%s" % (
            " ".join(args), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc


def table(out):
    """The tool's table (ToolsUtils.prettyPrintTable): a list of {header: value}."""
    lines = [ln for ln in out.splitlines() if ln.strip()]
    if not lines:
        return []
    head = lines[0].split()
    return [dict(zip(head, ln.split())) for ln in lines[1:]]


def read_committed(b, topic, want, timeout=20):
    c = Consumer(H.consumer_conf(b.bootstrap, **{"group.id": "reader-%s" % time.monotonic_ns(),
                                                 "isolation.level": "read_committed"}))
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        msg = c.poll(0.3)
        if msg is not None and not msg.error():
            got.append(msg.value().decode())
    c.close()
    return got


def transactional(b, tid, timeout_ms=60000):
    p = Producer(H.producer_conf(b.bootstrap, **{"transactional.id": tid, "enable.idempotence": True,
                                                 "transaction.timeout.ms": timeout_ms,
                                                 "message.timeout.ms": min(timeout_ms, 60000)}))
    p.init_transactions(20)
    return p


def test_find_hanging_and_abort_unblock_read_committed(broker_factory):
    b = broker_factory(extra_args=S.SQL_ARGS)
    topic = "hang"
    H.create_topic(b.bootstrap, topic, 1)
    hour_ago = int(time.time() * 1000) - 3600_000
    p = transactional(b, "lost-app", timeout_ms=900000)
    p.begin_transaction()
    p.produce(topic, value=b"stuck", partition=0, timestamp=hour_ago)
    p.flush(20)
    # The coordinator loses the id while its transaction is open in the partition.
    b.kill9()
    db = sqlite3.connect(str(b.data_dir / "catalog.db"))
    with db:
        for t in ("txn_metadata", "txn_partitions", "txn_groups", "txn_offsets"):
            db.execute("DELETE FROM %s WHERE transactional_id = 'lost-app'" % t)
    db.close()
    b.start()

    ok = transactional(b, "ok-app")
    ok.begin_transaction()
    ok.produce(topic, value=b"after", partition=0)
    ok.commit_transaction(20)
    # The open transaction at offset 0 holds the last stable offset there.
    assert read_committed(b, topic, 1, timeout=4) == []

    listed = table(txn_tool(b, "list").stdout)
    assert [(r["TransactionalId"], r["TransactionState"]) for r in listed] == [("ok-app", "CompleteCommit")]
    producers = table(txn_tool(b, "describe-producers", "--topic", topic, "--partition", "0").stdout)
    open_ones = [r for r in producers if r["CurrentTransactionStartOffset"] not in NONE]
    assert len(open_ones) == 1 and open_ones[0]["CurrentTransactionStartOffset"] == "0", producers
    lost_pid = open_ones[0]["ProducerId"]

    hanging = table(txn_tool(b, "find-hanging", "--topic", topic).stdout)
    assert [(r["Topic"], r["Partition"], r["ProducerId"], r["StartOffset"]) for r in hanging] == \
        [(topic, "0", lost_pid, "0")], hanging
    assert int(hanging[0]["Duration(min)"]) >= 59, hanging
    # Open in the partition and known to the coordinator: not hanging.
    live = transactional(b, "live-app")
    live.begin_transaction()
    live.produce(topic, value=b"live", partition=0, timestamp=hour_ago)
    live.flush(20)
    hanging = table(txn_tool(b, "find-hanging", "--topic", topic).stdout)
    assert [r["ProducerId"] for r in hanging] == [lost_pid], hanging
    live.abort_transaction(20)

    txn_tool(b, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
    assert read_committed(b, topic, 1) == ["after"]
    assert table(txn_tool(b, "find-hanging", "--topic", topic).stdout) == []
    producers = table(txn_tool(b, "describe-producers", "--topic", topic, "--partition", "0").stdout)
    assert producers and all(r["CurrentTransactionStartOffset"] in NONE for r in producers), producers
    # SQL sees what read_committed sees: the committed record only.
    conn = S.pg_connect(b.pg)
    try:
        assert [r[0] for r in S.pg_rows(conn, 'SELECT convert_from(value, \'UTF8\') FROM kafka_topics."hang"')] \
            == ["after"]
    finally:
        conn.close()
    # A second abort finds nothing open.
    proc = txn_tool(b, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0", check=False)
    assert proc.returncode != 0


def test_list_describe_and_system_transactions_show_an_open_transaction(broker_factory):
    b = broker_factory(extra_args=S.SQL_ARGS)
    H.create_topic(b.bootstrap, "t1", 2)
    p = transactional(b, "open-app", timeout_ms=300000)
    p.begin_transaction()
    p.produce("t1", value=b"a", partition=0)
    p.produce("t1", value=b"b", partition=1)
    p.flush(20)
    done = transactional(b, "done-app")
    done.begin_transaction()
    done.produce("t1", value=b"c", partition=0)
    done.commit_transaction(20)

    d = table(txn_tool(b, "describe", "--transactional-id", "open-app").stdout)
    assert len(d) == 1 and d[0]["TransactionState"] == "Ongoing", d
    assert d[0]["TransactionTimeoutMs"] == "300000"
    assert sorted(d[0]["TopicPartitions"].split(",")) == ["t1-0", "t1-1"], d
    assert int(d[0]["TransactionDurationMs"]) >= 0
    listed = {r["TransactionalId"]: r["TransactionState"] for r in table(txn_tool(b, "list").stdout)}
    assert listed == {"open-app": "Ongoing", "done-app": "CompleteCommit"}, listed
    # ListTransactions v2's pattern (a whole-id match) and v1's duration filter.
    pat = table(txn_tool(b, "list", "--transactional-id-pattern", "open.*").stdout)
    assert [r["TransactionalId"] for r in pat] == ["open-app"], pat
    assert table(txn_tool(b, "list", "--transactional-id-pattern", "open").stdout) == []
    dur = table(txn_tool(b, "list", "--duration-filter", "0").stdout)
    assert [r["TransactionalId"] for r in dur] == ["open-app"], dur
    assert table(txn_tool(b, "list", "--duration-filter", "3600000").stdout) == []
    missing = txn_tool(b, "describe", "--transactional-id", "nobody", check=False)
    assert missing.returncode != 0 and "could not be found" in missing.stderr, missing.stderr

    conn = S.pg_connect(b.pg)
    try:
        rows = S.pg_rows(conn, "SELECT transactional_id, state, partitions, timeout_ms, "
                               "start_timestamp IS NOT NULL, age_ms >= 0, producer_epoch >= 0 "
                               "FROM system.transactions ORDER BY transactional_id")
        assert rows == [("done-app", "CompleteCommit", "", 60000, False, None, True),
                        ("open-app", "Ongoing", "t1:0,1", 300000, True, True, True)], rows
        p.commit_transaction(20)
        rows = S.pg_rows(conn, "SELECT state, partitions, age_ms FROM system.transactions "
                               "WHERE transactional_id = 'open-app'")
        assert rows == [("CompleteCommit", "", None)], rows
    finally:
        conn.close()


def raw_describe(b, tid):
    with K.Conn(b.bootstrap) as conn:
        return I.describe_transactions(conn, [tid])[tid]


def raw_list(b):
    with K.Conn(b.bootstrap) as conn:
        return sorted(I.list_transactions(conn)["txns"])


def test_idle_transactional_ids_expire_durably(broker_factory):
    b = broker_factory(extra_args=["--transactional-id-expiration-ms", "3000",
                                   "--transaction-abort-check-interval-ms", "200"])
    H.create_topic(b.bootstrap, "exp", 1)
    p = transactional(b, "short-lived")
    p.begin_transaction()
    p.produce("exp", value=b"x", partition=0)
    p.commit_transaction(20)
    old = raw_describe(b, "short-lived")
    assert old["error"] == 0 and old["state"] == "CompleteCommit", old
    # A transaction open longer than the expiration keeps its id.
    busy = transactional(b, "busy", timeout_ms=60000)
    busy.begin_transaction()
    busy.produce("exp", value=b"y", partition=0)
    busy.flush(20)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and "short-lived" in raw_list(b):
        time.sleep(0.2)
    assert raw_list(b) == ["busy"]
    assert raw_describe(b, "short-lived")["error"] == TRANSACTIONAL_ID_NOT_FOUND
    assert "expiration" in H.tail(b.stderr_paths[-1], 1_000_000)
    # Durably: still forgotten after kill -9, as Kafka's tool sees it.
    b.kill9()
    b.start()
    listed = [r["TransactionalId"] for r in table(txn_tool(b, "list").stdout)]
    assert listed == ["busy"], listed
    # The id starts afresh, with another producer id.
    again = transactional(b, "short-lived")
    again.begin_transaction()
    again.produce("exp", value=b"z", partition=0)
    again.commit_transaction(20)
    new = raw_describe(b, "short-lived")
    assert new["error"] == 0 and new["producer_id"] != old["producer_id"], (old, new)
