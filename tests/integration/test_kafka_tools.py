"""Apache Kafka's own command-line tools (the 4.3.1 jars of tests/jvm/pom.xml) against
Sluice through `scripts/kafka-tool`, as a user runs them: their printed output is
checked, and what they did is cross-checked with librdkafka (confluent-kafka 1.7).
"""

import datetime
import json
import re
import subprocess

import pytest
from confluent_kafka import Producer

import sluice_helpers as H
from conftest import REPO

TOOL = str(REPO / "scripts" / "kafka-tool")


def tool(name, *args, input=None, check=True, timeout=180):
    """The tool's stdout (stderr is attached to a failure)."""
    proc = subprocess.run([TOOL, name, *map(str, args)], input=input, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError("kafka-tool %s %s exited %d:\n%s\n%s" % (
            name, " ".join(map(str, args)), proc.returncode, proc.stderr[-3000:], proc.stdout[-2000:]))
    return proc


def out(name, *args, **kw):
    return tool(name, *args, **kw).stdout


def group_lag_rows(desc, group):
    """kafka-consumer-groups --describe rows of GROUP: partition -> (current, end, lag)."""
    rows = {}
    for line in desc.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0] == group and f[3] != "-":
            rows[int(f[2])] = (int(f[3]), int(f[4]), int(f[5]))
    return rows


@pytest.fixture
def topic_name(topic_name):
    """kafka-topics warns about names with '_' or '.' (metric names): plain ones here."""
    return topic_name.replace("_", "-")


def test_wrapper_names_and_refusals():
    listed = out("--list").split()
    for t in ("kafka-topics", "kafka-configs", "kafka-consumer-groups", "kafka-console-producer",
              "kafka-console-consumer", "kafka-get-offsets", "kafka-delete-records",
              "kafka-producer-perf-test", "kafka-consumer-perf-test", "kafka-acls",
              "kafka-transactions", "connect-distributed"):
        assert t in listed
    bad = tool("kafka-nonesuch", check=False)
    assert bad.returncode == 2 and "unknown tool 'nonesuch'" in bad.stderr


def test_topics_and_configs(broker, topic_name):
    b = broker.bootstrap
    assert out("kafka-topics", "--bootstrap-server", b, "--create", "--topic", topic_name,
               "--partitions", 3, "--config", "retention.ms=3600000").strip() == "Created topic %s." % topic_name
    dup = tool("kafka-topics.sh", "--bootstrap-server", b, "--create", "--topic", topic_name, check=False)
    assert dup.returncode != 0 and "TopicExistsException" in dup.stdout + dup.stderr
    assert topic_name in out("topics", "--bootstrap-server", b, "--list").split()
    desc = out("kafka-topics", "--bootstrap-server", b, "--describe", "--topic", topic_name)
    head = desc.splitlines()[0]
    assert re.match(r"Topic: %s\tTopicId: \S+\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention.ms=3600000$"
                    % re.escape(topic_name), head), head
    # By id (Metadata v10+ with the name left ""): the same description.
    topic_id = re.search(r"TopicId: (\S+)", head).group(1)
    assert out("kafka-topics", "--bootstrap-server", b, "--describe", "--topic-id", topic_id) == desc
    parts = [l.split("\t") for l in desc.splitlines()[1:]]
    assert [(p[2], p[3], p[4], p[5]) for p in parts] == [
        ("Partition: %d" % i, "Leader: 0", "Replicas: 0", "Isr: 0") for i in range(3)], desc
    out("kafka-topics", "--bootstrap-server", b, "--alter", "--topic", topic_name, "--partitions", 5)
    assert "PartitionCount: 5" in out("kafka-topics", "--bootstrap-server", b, "--describe", "--topic", topic_name)
    assert len(H.admin_client(b).list_topics(topic_name, timeout=20).topics[topic_name].partitions) == 5

    cfg = out("kafka-configs", "--bootstrap-server", b, "--describe", "--entity-type", "topics",
              "--entity-name", topic_name)
    assert "retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000" in cfg, cfg
    assert out("kafka-configs", "--bootstrap-server", b, "--alter", "--entity-type", "topics",
               "--entity-name", topic_name, "--add-config", "retention.ms=7200000,cleanup.policy=[compact,delete]"
               ).strip() == "Completed updating config for topic %s." % topic_name
    cfg = out("kafka-configs", "--bootstrap-server", b, "--describe", "--entity-type", "topics",
              "--entity-name", topic_name)
    assert "retention.ms=7200000" in cfg and "cleanup.policy=compact,delete" in cfg, cfg
    refused = tool("kafka-configs", "--bootstrap-server", b, "--alter", "--entity-type", "topics",
                   "--entity-name", topic_name, "--add-config", "retention.ms=soon", check=False)
    assert refused.returncode != 0 and "InvalidConfigurationException" in refused.stdout + refused.stderr
    assert "retention.ms=7200000" in out("kafka-configs", "--bootstrap-server", b, "--describe", "--entity-type",
                                         "topics", "--entity-name", topic_name)
    assert out("kafka-topics", "--bootstrap-server", b, "--delete", "--topic", topic_name) == ""
    H.wait_until("topic gone", lambda: topic_name not in H.list_topic_names(b), timeout=30)


def test_console_producer_and_consumer_with_keys_and_headers(broker, topic_name):
    b = broker.bootstrap
    H.create_topic(b, topic_name, 1)
    lines = "".join("h1:a%d,h2:b%d\tk%d\tv%d\n" % (i, i, i, i) for i in range(20))
    out("kafka-console-producer", "--bootstrap-server", b, "--topic", topic_name,
        "--reader-property", "parse.key=true", "--reader-property", "parse.headers=true", input=lines)
    got = H.consume_all(b, topic_name, {0: 20})
    assert [(r["key"], r["value"], r["headers"]) for r in got] == [
        (b"k%d" % i, b"v%d" % i, [("h1", b"a%d" % i), ("h2", b"b%d" % i)]) for i in range(20)]
    printed = out("kafka-console-consumer", "--bootstrap-server", b, "--topic", topic_name, "--from-beginning",
                  "--max-messages", 20, "--formatter-property", "print.key=true",
                  "--formatter-property", "print.headers=true", "--formatter-property", "print.offset=true",
                  "--timeout-ms", 60000)
    rows = [l for l in printed.splitlines() if l.startswith("Offset:")]
    assert rows == ["Offset:%d\th1:a%d,h2:b%d\tk%d\tv%d" % (i, i, i, i, i) for i in range(20)], printed


def test_consumer_groups_lag_reset_and_delete(broker, topic_name):
    b = broker.bootstrap
    H.create_topic(b, topic_name, 2)
    p = Producer(H.producer_conf(b))
    for i in range(10):
        H.produce_one(p, topic_name, b"k", b"old%d" % i, partition=i % 2, timestamp=1_600_000_000_000 + i)
    cut = 1_700_000_000_000
    for i in range(10):
        H.produce_one(p, topic_name, b"k", b"new%d" % i, partition=i % 2, timestamp=cut + i)
    group = "tools-" + topic_name
    # A console consumer in the group reads 6 of the 20 records and commits.
    out("kafka-console-consumer", "--bootstrap-server", b, "--topic", topic_name, "--group", group,
        "--from-beginning", "--max-messages", 6, "--timeout-ms", 60000)
    desc = out("kafka-consumer-groups", "--bootstrap-server", b, "--describe", "--group", group)
    rows = group_lag_rows(desc, group)
    assert sum(v[0] for v in rows.values()) == 6 and all(v[1] == 10 for v in rows.values()), desc
    assert all(v[2] == v[1] - v[0] for v in rows.values()), desc
    assert sum(v[2] for v in rows.values()) == 14
    when = datetime.datetime.fromtimestamp(cut / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    reset = out("kafka-consumer-groups", "--bootstrap-server", b, "--group", group, "--topic", topic_name,
                "--reset-offsets", "--to-datetime", when, "--execute")
    new = {int(f[2]): int(f[3]) for f in (l.split() for l in reset.splitlines()) if len(f) >= 4 and f[0] == group}
    assert new == {0: 5, 1: 5}, reset
    c = H.make_consumer(b, **{"group.id": group})
    committed = c.committed([H.TopicPartition(topic_name, 0), H.TopicPartition(topic_name, 1)], timeout=20)
    c.close()
    assert [tp.offset for tp in committed] == [5, 5]
    assert "Deletion of requested consumer groups ('%s') was successful." % group in out(
        "kafka-consumer-groups", "--bootstrap-server", b, "--delete", "--group", group)
    assert group not in out("kafka-consumer-groups", "--bootstrap-server", b, "--list").split()


def test_consumer_groups_live_member(broker, topic_name, procs):
    """A console consumer in a group: --members and --state show it, and a reset or a
    delete of the live group is refused as Kafka refuses them."""
    b = broker.bootstrap
    group = "live-" + topic_name
    H.create_topic(b, topic_name, 2)
    p = Producer(H.producer_conf(b))
    for i in range(6):
        H.produce_one(p, topic_name, b"k", b"v%d" % i, partition=i % 2)
    cmd = [TOOL, "console-consumer", "--bootstrap-server", b, "--topic", topic_name, "--group", group,
           "--from-beginning", "--timeout-ms", "120000"]
    procs.append(H.register_proc(subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL, text=True)))

    def member_row():
        desc = out("consumer-groups", "--bootstrap-server", b, "--describe", "--group", group, "--members")
        rows = [l.split() for l in desc.splitlines() if l.startswith(group + " ")]
        return rows[0] if len(rows) == 1 and rows[0][-1] == "2" else None
    row = H.wait_until("the console consumer in the group", member_row, timeout=120, interval=1)
    assert row[1].startswith("console-consumer-") and row[3] == "console-consumer", row
    state = out("consumer-groups", "--bootstrap-server", b, "--describe", "--group", group, "--state")
    assert re.search(r"^%s\s+\S+\s+\(\d+\)\s+range\s+Stable\s+1\s*$" % re.escape(group), state, re.M), state
    H.wait_until("offsets committed", lambda: group_lag_rows(out(
        "consumer-groups", "--bootstrap-server", b, "--describe", "--group", group), group) ==
        {0: (3, 3, 0), 1: (3, 3, 0)}, timeout=60, interval=1)
    reset = tool("consumer-groups", "--bootstrap-server", b, "--reset-offsets", "--group", group,
                 "--topic", topic_name, "--to-earliest", "--execute", check=False)
    assert "can only be reset if the group '%s' is inactive" % group in reset.stdout + reset.stderr, reset
    delete = tool("consumer-groups", "--bootstrap-server", b, "--delete", "--group", group, check=False)
    assert "GroupNotEmptyException" in delete.stdout + delete.stderr, delete


def test_get_offsets_and_delete_records(broker, topic_name, tmp_path):
    b = broker.bootstrap
    H.create_topic(b, topic_name, 2)
    p = Producer(H.producer_conf(b))
    for i in range(8):
        H.produce_one(p, topic_name, b"k", b"v%d" % i, partition=i % 2, timestamp=1_700_000_000_000 + 1000 * i)

    def offsets(*extra):
        text = out("kafka-get-offsets", "--bootstrap-server", b, "--topic", topic_name, *extra)
        return sorted(tuple(l.split(":")) for l in text.split())

    assert offsets() == [(topic_name, "0", "4"), (topic_name, "1", "4")]
    assert offsets("--time", "-2") == [(topic_name, "0", "0"), (topic_name, "1", "0")]
    # Partition 0 holds t0, t0+2s, t0+4s, t0+6s: the first at or after t0+3s is offset 2.
    assert offsets("--time", 1_700_000_003_000) == [(topic_name, "0", "2"), (topic_name, "1", "1")]
    spec = tmp_path / "delete.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic_name, "partition": 0, "offset": 3}]}))
    done = out("kafka-delete-records", "--bootstrap-server", b, "--offset-json-file", spec)
    assert "partition: %s-0\tlow_watermark: 3" % topic_name in done, done
    assert offsets("--time", "-2") == [(topic_name, "0", "3"), (topic_name, "1", "0")]


def test_perf_tests_count_what_they_sent_and_read(broker, topic_name):
    b = broker.bootstrap
    H.create_topic(b, topic_name, 3)
    n = 20000
    prod = out("kafka-producer-perf-test", "--topic", topic_name, "--num-records", n, "--record-size", 100,
               "--throughput", -1, "--producer-props", "bootstrap.servers=" + b, "acks=all")
    last = prod.strip().splitlines()[-1]
    assert last.startswith("%d records sent" % n), prod
    assert sum(H.high_watermarks(b, topic_name, 3).values()) == n
    cons = out("kafka-consumer-perf-test", "--bootstrap-server", b, "--topic", topic_name, "--messages", n,
               "--timeout", 60000)
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, ...
    fields = [l for l in cons.splitlines() if re.match(r"^\d{4}-\d\d-\d\d", l)][-1].split(", ")
    assert int(fields[4]) == n, cons
    assert abs(float(fields[2]) - n * 100 / 1024 / 1024) < 0.01, cons
