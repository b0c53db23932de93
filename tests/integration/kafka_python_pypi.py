"""kafka-python from PyPI (requirements-pypi.txt), run with the virtual environment's
interpreter by test_kafka_python_pypi.py, which itself runs under Debian's interpreter
(whose kafka-python is 2.0.2).

Reads one JSON request on stdin:
    {"bootstrap": "HOST:PORT", "security": {kafka-python keyword arguments},
     "topics": [names to describe], "delete": [[topic, partition, offset], ...],
     "offsets": [[topic, partition], ...]}
runs KafkaAdminClient's list_topics, describe_topics, describe_cluster and
delete_records, then asks a KafkaConsumer for the beginning and end offsets of the
partitions in "offsets", and prints one JSON answer on stdout. A call that raises is answered with the
exception's class and message instead of its result, so that the test asserts on what
the client really did (an old broker's answer shows as ValueError "31 is not a valid
ACLOperation").
"""

import json
import sys

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition


def call(fn):
    try:
        return {"ok": fn()}
    except Exception as e:  # noqa: BLE001 - the test asserts on the class and message
        return {"error": type(e).__name__, "message": str(e)}


def offsets(conf, partitions):
    consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, client_id="sluice-it-pypi-consumer",
                             **conf)
    try:
        begin = consumer.beginning_offsets(partitions)
        end = consumer.end_offsets(partitions)
        return [[tp.topic, tp.partition, begin[tp], end[tp]] for tp in partitions]
    finally:
        consumer.close()


def main():
    req = json.load(sys.stdin)
    conf = dict(bootstrap_servers=req["bootstrap"], request_timeout_ms=15000,
                api_version_auto_timeout_ms=10000, **req.get("security", {}))
    deletes = {TopicPartition(t, p): o for t, p, o in req.get("delete", [])}
    out = {"version": kafka.__version__}
    admin = KafkaAdminClient(client_id="sluice-it-pypi-admin", **conf)
    try:
        out["list_topics"] = call(admin.list_topics)
        out["describe_topics"] = call(lambda: admin.describe_topics(req["topics"]))
        out["describe_cluster"] = call(admin.describe_cluster)
        if deletes:
            out["delete_records"] = call(lambda: [[tp.topic, tp.partition, r]
                                                  for tp, r in admin.delete_records(deletes).items()])
    finally:
        admin.close()
    if req.get("offsets"):
        out["offsets"] = call(lambda: offsets(conf, [TopicPartition(t, p) for t, p in req["offsets"]]))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
