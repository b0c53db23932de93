"""The `sluice` command line: topic create/list/describe/delete, serve --help, --advertise."""

import json
import re
import shutil
import socket
import subprocess

from confluent_kafka import Producer

import conftest
import kproto as K
import sluice_helpers as H

SERVE_FLAGS = ["--data-dir", "--listen", "--advertise", "--auto-create-topics", "--default-partitions"]


def sluice(args, timeout=60):
    proc = subprocess.run([conftest.require_binary()] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def sluice_ok(args, timeout=60):
    rc, out, err = sluice(args, timeout)
    assert rc == 0, "sluice %s exited %d\nstdout:\n%s\nstderr:\n%s" % (" ".join(args), rc, out, err)
    return out


def sluice_fails(args, timeout=60):
    rc, out, err = sluice(args, timeout)
    assert rc != 0, "sluice %s unexpectedly succeeded\nstdout:\n%s" % (" ".join(args), out)
    msg = (out + err).strip()
    assert msg, "sluice %s failed (exit %d) without any message" % (" ".join(args), rc)
    return msg


def listed_topics(bootstrap):
    out = sluice_ok(["topic", "list", "--bootstrap", bootstrap])
    return [ln.strip() for ln in out.splitlines() if ln.strip()]


def test_serve_help_mentions_every_flag():
    rc, out, err = sluice(["serve", "--help"], timeout=20)
    assert rc == 0, "serve --help exited %d: %s" % (rc, err)
    text = out + err
    missing = [f for f in SERVE_FLAGS if f not in text]
    assert not missing, "serve --help does not mention %r:\n%s" % (missing, text)


def test_serve_output_and_log_format(broker_factory, topic_name):
    """stdout: exactly one `listening kafka` line per listener; stderr: `LEVEL component: message` lines."""
    b = broker_factory()
    H.create_topic(b.bootstrap, topic_name, 1)
    producer = Producer(H.producer_conf(b.bootstrap))
    d = H.produce_one(producer, topic_name, b"k", b"v", partition=0)
    assert d.err is None
    b.stop()
    assert b.stdout_lines == ["listening kafka %s" % b.bootstrap], b.stdout_lines
    lines = [ln for ln in H.tail(b.stderr_paths[-1], 100000).splitlines() if ln.strip()]
    assert lines, "the broker logged nothing to stderr"
    # An ISO-8601 timestamp in front of LEVEL is tolerated.
    pattern = re.compile(r"^(\d{4}-\d\d-\d\dT[\d:.]+Z? )?[A-Z]+ [A-Za-z0-9_.\-/]+: \S")
    bad = [ln for ln in lines if not pattern.match(ln)]
    assert not bad, "stderr lines not in 'LEVEL component: message' form: %r" % bad[:5]


def test_topic_create_list_describe_delete(broker, topic_name):
    b = broker.bootstrap
    other = topic_name + "-other"
    assert listed_topics(b) == []

    out = sluice_ok(["topic", "create", topic_name, "--partitions", "4", "--config", "max.message.bytes=10000",
                     "--config", "segment.bytes=1048576", "--bootstrap", b])
    assert out == "created topic '%s' with 4 partitions\n" % topic_name, out
    out = sluice_ok(["topic", "create", other, "--partitions", "1", "--bootstrap", b])
    assert out == "created topic '%s' with 1 partition\n" % other, out
    H.wait_topic(b, topic_name, 4)   # cross-check with librdkafka's view
    H.wait_topic(b, other, 1)

    names = listed_topics(b)
    assert sorted(names) == sorted([topic_name, other]), names
    assert set(names) == H.list_topic_names(b)

    out = sluice_ok(["topic", "describe", topic_name, "--bootstrap", b])
    assert topic_name in out
    per_partition_lines = [ln for ln in out.splitlines() if re.search(r"partition\D{0,12}[0-3]\b", ln, re.I)]
    summary = re.search(r"partitions?\W{0,3}(count)?\W{0,3}4\b", out, re.I)
    assert summary or len(per_partition_lines) >= 4, "partition count (4) not recognisable in:\n" + out
    if per_partition_lines and not summary:
        for p in range(4):
            assert any(re.search(r"partition\D{0,12}%d\b" % p, ln, re.I) for ln in per_partition_lines), out

    # The config given on the command line is in force.
    producer = Producer(H.producer_conf(b, **{"message.max.bytes": 1000000}))
    d = H.produce_one(producer, topic_name, b"big", b"x" * 20000, partition=0)
    assert d.err is not None and d.err.code() == 10, d
    d = H.produce_one(producer, topic_name, b"ok", b"x" * 200, partition=3)
    assert d.err is None and (d.partition, d.offset) == (3, 0), d

    msg = sluice_fails(["topic", "create", topic_name, "--partitions", "4", "--bootstrap", b])
    assert "exist" in msg.lower(), "duplicate create message does not say the topic exists: %r" % msg

    sluice_ok(["topic", "delete", topic_name, "--bootstrap", b])
    assert listed_topics(b) == [other]
    assert topic_name not in H.list_topic_names(b)
    sluice_fails(["topic", "describe", topic_name, "--bootstrap", b])
    sluice_fails(["topic", "delete", topic_name, "--bootstrap", b])
    # The other topic is untouched.
    assert other in sluice_ok(["topic", "describe", other, "--bootstrap", b])


def test_topic_describe_shows_configs(broker, topic_name):
    """The contract says `topic describe` prints partitions and configs."""
    sluice_ok(["topic", "create", topic_name, "--partitions", "2", "--config", "max.message.bytes=12345",
               "--config", "message.timestamp.type=LogAppendTime", "--bootstrap", broker.bootstrap])
    out = sluice_ok(["topic", "describe", topic_name, "--bootstrap", broker.bootstrap])
    assert re.search(r"max\.message\.bytes\W+12345\b", out), "config max.message.bytes not shown:\n" + out
    assert re.search(r"message\.timestamp\.type\W+LogAppendTime\b", out), "config not shown:\n" + out


def test_topic_create_rejects_bad_input(broker, topic_name):
    b = broker.bootstrap
    sluice_fails(["topic", "create", topic_name, "--partitions", "0", "--bootstrap", b])
    sluice_fails(["topic", "create", "bad name!", "--partitions", "1", "--bootstrap", b])
    assert listed_topics(b) == []


def test_topic_cli_unreachable_broker_fails():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    try:
        port = s.getsockname()[1]
        rc, out, err = sluice(["topic", "list", "--bootstrap", "127.0.0.1:%d" % port], timeout=60)
    finally:
        s.close()
    assert rc != 0 and (out + err).strip()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_advertise_twice_gives_two_brokers(broker_factory, topic_name):
    """One process advertised under two addresses that both reach its single listener.

    127.0.0.1:P and localhost:P are distinct broker addresses to a client but the
    same socket here (clients use IPv4 only: broker.address.family=v4).
    """
    port = free_port()
    addrs = ["127.0.0.1:%d" % port, "localhost:%d" % port]
    b = broker_factory(listen="127.0.0.1:%d" % port, advertise=addrs)
    assert b.port == port
    parts = 6
    H.create_topic(b.bootstrap, topic_name, parts)

    kcat = shutil.which("kcat")
    assert kcat, "kcat is not installed"
    proc = subprocess.run([kcat, "-L", "-J", "-b", b.bootstrap, "-X", "broker.address.family=v4"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr
    md = json.loads(proc.stdout)
    brokers = {x["id"]: x["name"] for x in md["brokers"]}
    assert len(brokers) == 2, md["brokers"]
    assert sorted(brokers.values()) == sorted(addrs)
    t = {x["topic"]: x for x in md["topics"]}[topic_name]
    leaders = {p["partition"]: p["leader"] for p in t["partitions"]}
    assert sorted(leaders) == list(range(parts))
    assert set(leaders.values()) == set(brokers), "leaders not spread over both brokers: %r" % leaders

    with K.Conn(b.bootstrap) as conn:
        raw = K.metadata_v1(conn, [topic_name])
    assert sorted((x["host"], x["port"]) for x in raw["brokers"]) == sorted(
        [("127.0.0.1", port), ("localhost", port)])
    assert {x["node_id"] for x in raw["brokers"]} == set(brokers)
    assert raw["controller_id"] in brokers

    # Produce through one bootstrap address, consume through the other, and vice versa.
    base = H.now_ms() - 10_000
    for i, (via_p, via_c) in enumerate([(addrs[0], addrs[1]), (addrs[1], addrs[0])]):
        topic = "%s-%d" % (topic_name, i)
        H.create_topic(via_p, topic, parts)
        records = [dict(key=H.key_for(j, b"a"), value=H.value_for(j, b"adv"), headers=H.headers_for(j),
                        timestamp=base + j, partition=j % parts) for j in range(600)]
        dr = H.produce_all(Producer(H.producer_conf(via_p)), topic, records)
        expected = {(d.partition, d.offset): r for r, d in zip(records, dr)}
        H.assert_contiguous(expected)
        got = H.consume_all(via_c, topic, H.counts_by_partition(expected))
        H.assert_records_match(expected, got)


def test_second_broker_on_the_same_data_dir_is_refused(broker):
    msg = sluice_fails(["serve", "--data-dir", str(broker.data_dir), "--listen", "127.0.0.1:0"],
                       timeout=20)
    assert "in use" in msg, msg
    # The first broker keeps serving.
    with K.Conn(broker.bootstrap) as conn:
        err, apis = K.api_versions_v0(conn)
        assert err == 0 and 0 in apis


def test_usage_names_the_program():
    rc, out, err = sluice(["--help"], timeout=20)
    assert rc == 0 and re.search(r"^Usage: sluice \[OPTIONS\] SUBCOMMAND", out, re.M), out
    rc, out, err = sluice(["topic", "--help"], timeout=20)
    assert rc == 0 and re.search(r"^Usage: sluice topic ", out, re.M), out


def test_start_up_log_says_new_then_clean(broker_factory):
    b = broker_factory()
    b.stop()
    b.start()
    b.stop()
    logs = [open(p, encoding="utf-8").read() for p in b.stderr_paths[-2:]]
    opened = [re.findall(r"storage: logs opened at \S+: ([a-z ]+),", log) for log in logs]
    assert opened == [["a new data directory"], ["clean shutdown"]], opened
    # A new catalog is created, not migrated from a version 0.
    assert re.search(r"INFO catalog: .*schema created at version \d+", logs[0]), logs[0]
    assert "migrated" not in logs[0] + logs[1]


def test_usage_errors_say_what_exists_and_exit_2():
    rc, out, err = sluice(["srve"], timeout=20)
    assert rc == 2, (rc, err)
    assert "unknown command 'srve' (did you mean 'serve'?)" in err, err
    assert re.search(r"the commands are: .*serve.*topic.*sql", err), err
    rc, out, err = sluice(["topic", "crate", "t"], timeout=20)
    assert rc == 2 and "sluice topic: unknown command 'crate' (did you mean 'create'?)" in err, err
    assert "create, list, describe, delete" in err, err
    rc, out, err = sluice([], timeout=20)
    assert rc == 2 and "a command is required: " in err and "serve" in err, err
    rc, out, err = sluice(["serve", "--data-dir", "/nonexistent/unused", "--lisen", "127.0.0.1:0"], timeout=20)
    assert rc == 2 and "sluice serve: unknown option '--lisen'; did you mean '--listen'?" in err, err
    rc, out, err = sluice(["topic", "list", "--bootstrp=127.0.0.1:1"], timeout=20)
    assert rc == 2 and "did you mean '--bootstrap'?" in err, err
    rc, out, err = sluice(["serve", "--no-such-thing"], timeout=20)
    assert rc == 2 and "unknown option '--no-such-thing'" in err and "did you mean" not in err, err
    # Other usage errors (a missing argument, a value of the wrong type): 2 as well.
    rc, out, err = sluice(["topic", "create", "--bootstrap", "127.0.0.1:1"], timeout=20)
    assert rc == 2 and "name" in err.lower(), err
    rc, out, err = sluice(["topic", "create", "t", "--partitions", "many", "--bootstrap", "127.0.0.1:1"], timeout=20)
    assert rc == 2 and "many" in err, err


def test_busy_ports_are_all_named_with_the_way_out(tmp_path):
    taken = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        taken.append(s)
    try:
        kafka, pg = ("127.0.0.1:%d" % s.getsockname()[1] for s in taken)
        data = tmp_path / "data"
        rc, out, err = sluice(["serve", "--data-dir", str(data), "--listen", kafka, "--pg", pg,
                               "--http", "127.0.0.1:0"], timeout=20)
    finally:
        for s in taken:
            s.close()
    assert rc == 1, (rc, err)
    assert "--listen: cannot listen on %s: Address already in use" % kafka in err, err
    assert "--pg: cannot listen on %s: Address already in use" % pg in err, err
    assert "make run KAFKA=" in err and "README" in err, err
    assert not data.exists()
