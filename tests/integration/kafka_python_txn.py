"""kafka-python's transactional producer (2.3.3 from PyPI, requirements-pypi.txt; Debian's
2.0.2 has none), run with the virtual environment's interpreter by
test_transactions_clients.py.

Usage: kafka_python_txn.py BOOTSTRAP TOPIC GROUP INPUT_TOPIC
Three transactions on TOPIC's partitions 0 and 1: "c1" (five records, committed with
send_offsets_to_transaction committing GROUP's offset of INPUT_TOPIC partition 0 at 5),
"ab" (five records and offset 7, aborted) and "c2" (five records, offset 10,
committed). Prints one JSON line per transaction.
"""

import json
import sys

from kafka import KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata


def main():
    bootstrap, topic, group, input_topic = sys.argv[1:5]
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kafka-python-txn",
                      enable_idempotence=True, acks="all", client_id="sluice-it-kafka-python-txn")
    p.init_transactions()
    for name, commit, offset in (("c1", True, 5), ("ab", False, 7), ("c2", True, 10)):
        p.begin_transaction()
        for i in range(5):
            p.send(topic, value=("%s-%d" % (name, i)).encode(), key=b"k%d" % i, partition=i % 2)
        p.flush(30)
        p.send_offsets_to_transaction({TopicPartition(input_topic, 0): OffsetAndMetadata(offset, "", -1)}, group)
        if commit:
            p.commit_transaction()
        else:
            p.abort_transaction()
        print(json.dumps({"kind": "txn", "name": name, "committed": commit}), flush=True)
    p.close(timeout=10)


if __name__ == "__main__":
    main()
