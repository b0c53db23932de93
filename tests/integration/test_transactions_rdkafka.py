"""librdkafka's transactions in a read-process-write loop (issue 34), run under Debian's
confluent-kafka 1.7 and again under each confluent-kafka 2.x of tests.cmake's ck venvs:
a read_committed group consumer and a transactional producer that sends the consumer's
positions with send_offsets_to_transaction (the consumer's group metadata, so generation
and member are checked), aborting every third transaction and rewinding to the committed
offsets; then a second producer with the same transactional.id fences the first. A
read_committed consumer and SQL see each input's output exactly once.
"""

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

import sluice_helpers as H
import sql_helpers as S
import txn_views as V


@pytest.fixture(scope="module")
def b(module_broker_factory):
    return module_broker_factory(extra_args=S.SQL_ARGS)


def txn_producer(bootstrap, tid):
    p = Producer(H.producer_conf(bootstrap, **{"transactional.id": tid, "enable.idempotence": True}))
    p.init_transactions(30)
    return p


def rewind(c):
    """Back to the group's committed offsets (after an abort)."""
    for tp in c.committed(c.assignment(), timeout=10):
        c.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))


def test_read_process_write_each_input_once(b):
    n, parts = 120, 2
    V.inputs(b.bootstrap, "rdk-rpw-in", "rdk-rpw-out", n, parts, 10)
    c = Consumer(H.consumer_conf(b.bootstrap, **{
        "group.id": "rdk-rpw", "isolation.level": "read_committed", "enable.partition.eof": False,
        "auto.offset.reset": "earliest"}))
    c.subscribe(["rdk-rpw-in"])
    p = txn_producer(b.bootstrap, "rdk-rpw")
    committed, aborted, txns = 0, 0, 0
    deadline = time.monotonic() + 90
    while committed < n:
        assert time.monotonic() < deadline, (committed, aborted)
        msgs = [m for m in c.consume(25, 1.0) if not m.error()]
        if not msgs:
            continue
        txns += 1
        p.begin_transaction()
        for m in msgs:
            p.produce("rdk-rpw-out", value=b"OUT:" + m.value(), partition=m.partition())
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 20)
        if txns % 3 == 0:
            p.abort_transaction(20)
            aborted += len(msgs)
            rewind(c)
        else:
            p.commit_transaction(20)
            committed += len(msgs)
    c.close()
    assert aborted and committed == n, (aborted, committed)
    view = V.read(b.bootstrap, "rdk-rpw-out", parts)
    assert sorted(V.values(view)) == sorted("OUT:in-%d" % i for i in range(n))
    assert V.sql(b, "rdk-rpw-out") == view
    check = Consumer(H.consumer_conf(b.bootstrap, **{"group.id": "rdk-rpw"}))
    offs = check.committed([TopicPartition("rdk-rpw-in", q) for q in range(parts)], timeout=10)
    check.close()
    assert [tp.offset for tp in offs] == [n // parts] * parts


def test_second_instance_fences_the_first(b):
    H.create_topic(b.bootstrap, "rdk-fence", 1)
    zombie = txn_producer(b.bootstrap, "rdk-fence")
    zombie.begin_transaction()
    zombie.produce("rdk-fence", value=b"zombie", partition=0)
    assert zombie.flush(10) == 0
    winner = txn_producer(b.bootstrap, "rdk-fence")  # aborts the zombie's open transaction
    winner.begin_transaction()
    winner.produce("rdk-fence", value=b"winner", partition=0)
    winner.commit_transaction(20)
    with pytest.raises(KafkaException) as e:
        zombie.commit_transaction(20)
    err = e.value.args[0]
    assert err.fatal() or err.txn_requires_abort() or "fenced" in err.str().lower(), err
    assert V.values(V.read(b.bootstrap, "rdk-fence", 1)) == ["winner"]
    assert V.values(V.sql(b, "rdk-fence")) == ["winner"]
