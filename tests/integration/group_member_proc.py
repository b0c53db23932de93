#!/usr/bin/env python3
"""One librdkafka consumer-group member in its own process, driven by
group_helpers.ProcMember (the tests SIGKILL it to simulate a crash).

It subscribes to one topic and prints one JSON object per line on stdout,
flushed immediately, so that the parent knows exactly what happened up to the
moment of the kill:
    {"ev": "assign", "partitions": [...]}   on_assign
    {"ev": "revoke", "partitions": [...]}   on_revoke
    {"ev": "rec", "p": P, "o": O, "k": hex, "v": hex}   a record was handled
    {"ev": "committing", "offsets": {P: O}}  about to commit (sync)
    {"ev": "committed", "offsets": {P: O}}   the commit succeeded
    {"ev": "commit_error", "error": "..."}
Records are handled one at a time (optionally slowed down); every
--commit-every handled records, the positions are committed synchronously.
"""

import argparse
import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--client-id", default="proc-member")
    ap.add_argument("--per-message-delay-ms", type=float, default=0)
    ap.add_argument("--commit-every", type=int, default=1)
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    ap.add_argument("--heartbeat-interval-ms", type=int, default=500)
    ap.add_argument("--max-seconds", type=float, default=120)
    a = ap.parse_args()

    c = Consumer({
        "bootstrap.servers": a.bootstrap,
        "broker.address.family": "v4",
        "group.id": a.group,
        "client.id": a.client_id,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": a.session_timeout_ms,
        "heartbeat.interval.ms": a.heartbeat_interval_ms,
        "max.poll.interval.ms": 20000,
        "fetch.wait.max.ms": 100,
        "check.crcs": True,
    })

    def on_assign(consumer, parts):
        emit({"ev": "assign", "partitions": sorted(tp.partition for tp in parts)})

    def on_revoke(consumer, parts):
        emit({"ev": "revoke", "partitions": sorted(tp.partition for tp in parts)})

    c.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke)
    pending = {}
    handled = 0
    deadline = time.monotonic() + a.max_seconds  # a safety net; the parent kills us long before
    while time.monotonic() < deadline:
        m = c.poll(0.1)
        if m is None:
            continue
        if m.error() is not None:
            emit({"ev": "error", "error": str(m.error())})
            continue
        if a.per_message_delay_ms:
            time.sleep(a.per_message_delay_ms / 1000.0)
        emit({"ev": "rec", "p": m.partition(), "o": m.offset(),
              "k": m.key().hex() if m.key() is not None else None,
              "v": m.value().hex() if m.value() is not None else None})
        pending[m.partition()] = m.offset() + 1
        handled += 1
        if handled % a.commit_every == 0:
            offs = {str(p): o for p, o in sorted(pending.items())}
            emit({"ev": "committing", "offsets": offs})
            try:
                res = c.commit(offsets=[TopicPartition(a.topic, p, o) for p, o in sorted(pending.items())],
                               asynchronous=False)
                errs = [str(tp.error) for tp in res or [] if tp.error is not None]
                if errs:
                    emit({"ev": "commit_error", "error": errs})
                else:
                    emit({"ev": "committed", "offsets": offs})
            except KafkaException as e:
                emit({"ev": "commit_error", "error": str(e)})
            pending = {}
    c.close()
    emit({"ev": "exit"})


if __name__ == "__main__":
    main()
