"""Kafka's max.connections, max.connections.per.ip and max.connections.per.ip.overrides as
dynamic broker configs: set with Apache Kafka's kafka-configs (or IncrementalAlterConfigs
on a connection already open, when the limit leaves no room for the tool), they refuse
the next connection of a real client (confluent-kafka's AdminClient) at once and let it
in again once raised; the static value from the command line is described with its
source.

One broker for the module, started with --max-connections-per-ip 50 (a static value);
the tests run in file order.
"""

import subprocess

import pytest
from confluent_kafka import KafkaException

import kproto as K
import sluice_helpers as H
from conftest import REPO

TOOL = str(REPO / "scripts" / "kafka-tool")


@pytest.fixture(scope="module")
def b(module_broker_factory):
    return module_broker_factory(extra_args=["--max-connections-per-ip", "50"])


def configs(b, *args, check=True):
    proc = subprocess.run([TOOL, "kafka-configs", "--bootstrap-server", b.bootstrap, "--entity-type", "brokers",
                           *map(str, args)], capture_output=True, text=True, timeout=180)
    if check and proc.returncode != 0:
        raise AssertionError("kafka-configs %s exited %d:\n%s" % (" ".join(map(str, args)), proc.returncode,
                                                                  proc.stderr[-3000:]))
    return proc


def client_gets_in(b):
    """A new confluent-kafka AdminClient lists the topics (its connection admitted)."""
    adm = H.admin_client(b.bootstrap)
    try:
        adm.list_topics(timeout=4)
        return True
    except KafkaException:
        return False


def open_conns(b, n):
    """n raw connections, each answered (so admitted); the tool's own ones may still be
    closing, so each is retried for a while."""
    out = []
    for _ in range(n):
        def one():
            c = K.Conn(b.bootstrap)
            try:
                K.api_versions_v0(c)
            except Exception:
                c.close()
                raise
            return c
        out.append(H.wait_until("an admitted connection", one, timeout=15,
                                errors=(AssertionError, OSError, K.ConnectionClosed)))
    return out


def refused(b):
    """A raw connection is closed without an answer."""
    with K.Conn(b.bootstrap) as c:
        try:
            K.api_versions_v0(c)
            return False
        except (K.ConnectionClosed, OSError):
            return True


def set_broker(conn, name, ops):
    (r,) = K.incremental_alter_configs(conn, 0, [(K.RESOURCE_BROKER, name, ops)])
    return r["error"], r["error_message"]


def describe(b, keys):
    with K.Conn(b.bootstrap) as conn:
        (res,) = K.describe_configs(conn, 1, [(K.RESOURCE_BROKER, "0", keys)], include_synonyms=True)
    assert res["error"] == 0, res
    return {c["name"]: (c["value"], c["source"]) for c in res["configs"]}


def test_static_and_default_values_are_described(b):
    assert describe(b, ["max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides"]) == {
        "max.connections": ("2147483647", 5),
        "max.connections.per.ip": ("50", 4),
        "max.connections.per.ip.overrides": ("", 5),
    }


def test_max_connections_refuses_the_next_and_raising_it_lets_it_in(b):
    assert client_gets_in(b)
    configs(b, "--entity-default", "--alter", "--add-config", "max.connections=3")
    assert describe(b, ["max.connections"])["max.connections"] == ("3", 3)
    conns = open_conns(b, 3)
    try:
        assert refused(b)
        assert not client_gets_in(b)
        H.wait_until("the refusal logged",
                     lambda: "connection refused: 3 connections open, max.connections is 3" in
                     b.stderr_paths[-1].read_text())
        # This broker's level above the cluster default, set over a connection held.
        assert set_broker(conns[0], "0", [("max.connections", K.OP_SET, "4")]) == (0, None)
        assert client_gets_in(b)
        assert set_broker(conns[0], "0", [("max.connections", K.OP_DELETE, None)]) == (0, None)
        assert set_broker(conns[0], "", [("max.connections", K.OP_DELETE, None)]) == (0, None)
    finally:
        for c in conns:
            c.close()
    assert client_gets_in(b)


def test_per_ip_limit_and_its_overrides(b):
    configs(b, "--entity-name", 0, "--alter", "--add-config", "max.connections.per.ip=2")
    conns = open_conns(b, 2)
    try:
        assert refused(b)
        assert not client_gets_in(b)
        H.wait_until("the refusal logged",
                     lambda: "2 connections open from 127.0.0.1, max.connections.per.ip is 2" in
                     b.stderr_paths[-1].read_text())
        assert set_broker(conns[0], "0", [("max.connections.per.ip.overrides", K.OP_SET, "127.0.0.1:3")]) == \
            (0, None)
        assert client_gets_in(b)
        # Bad values are refused as Kafka refuses them (INVALID_REQUEST), nothing changed.
        err, msg = set_broker(conns[0], "0", [("max.connections.per.ip.overrides", K.OP_SET, "localhost:3")])
        assert err == K.INVALID_REQUEST and "IP:COUNT" in msg, msg
        assert set_broker(conns[0], "0", [("max.connections.per.ip", K.OP_SET, "-1")])[0] == K.INVALID_REQUEST
        assert describe(b, ["max.connections.per.ip.overrides"])["max.connections.per.ip.overrides"] == \
            ("127.0.0.1:3", 2)
        assert set_broker(conns[0], "0", [("max.connections.per.ip.overrides", K.OP_DELETE, None),
                                          ("max.connections.per.ip", K.OP_DELETE, None)]) == (0, None)
    finally:
        for c in conns:
            c.close()
    assert describe(b, ["max.connections.per.ip"])["max.connections.per.ip"] == ("50", 4)
    assert client_gets_in(b)
