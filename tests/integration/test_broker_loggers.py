"""Log levels changed at run time, as Kafka's broker loggers: Apache Kafka's kafka-configs
--entity-type broker-loggers against Sluice lists "root" and one "sluice.<component>"
logger per component with the level it writes at, SET and DELETE change what the broker
writes at once (checked in its log), Kafka's refusals come back with Kafka's error codes
and messages, and a restart starts again from --log-level (Kafka keeps no logger level
either).

One broker for the module; the tests run in file order (the last restarts it).
"""

import pytest

import jvm_helpers as J
import kproto as K
import sluice_helpers as H


@pytest.fixture(scope="module")
def b(module_broker_factory):
    return module_broker_factory()


def loggers(b, *args, check=True):
    proc = J.run_tool("kafka-configs", "--bootstrap-server", b.bootstrap, "--entity-type", "broker-loggers",
                      "--entity-name", "0", *args)
    if check and proc.returncode != 0:
        raise AssertionError("kafka-configs %s exited %d:\n%s" % (" ".join(args), proc.returncode,
                                                                  proc.stderr[-3000:]))
    return proc


def described(b):
    """{logger: level} from kafka-configs --describe."""
    out = {}
    for line in loggers(b, "--describe").stdout.splitlines():
        if line.startswith("  "):
            name_level = line.strip().split(" ")[0]
            name, level = name_level.split("=")
            out[name] = level
    return out


def levels(b):
    """{logger: level} from DescribeConfigs itself (quicker than a JVM tool)."""
    with K.Conn(b.bootstrap) as conn:
        (res,) = K.describe_configs(conn, 1, [(K.RESOURCE_BROKER_LOGGER, "0", None)])
    assert res["error"] == 0, res
    return {c["name"]: c["value"] for c in res["configs"]}


def log_text(b):
    return b.stderr_paths[-1].read_text(errors="replace")


def new_connection_logged(b):
    """Opens a Kafka connection; whether the broker wrote its DEBUG net line (written on
    accept, before the ApiVersions answer, so present once the answer is in)."""
    before = len(log_text(b))
    with K.Conn(b.bootstrap) as conn:
        K.api_versions_v0(conn)
        peer = "127.0.0.1:%d" % conn.sock.getsockname()[1]
    return "DEBUG net: connection " in log_text(b)[before:] and peer in log_text(b)[before:]


def test_every_component_is_listed_at_the_root_level(b):
    got = described(b)
    assert got["root"] == "INFO"
    for c in ("sluice.group", "sluice.net", "sluice.fetch", "sluice.storage", "sluice.sql"):
        assert got[c] == "INFO", got
    assert all(name == "root" or name.startswith("sluice.") for name in got), got
    # DescribeConfigs itself: Kafka's source DYNAMIC_BROKER_LOGGER_CONFIG (6), a key asked for.
    with K.Conn(b.bootstrap) as conn:
        (res,) = K.describe_configs(conn, 1, [(K.RESOURCE_BROKER_LOGGER, "0", ["sluice.group"])])
    assert res["error"] == 0, res
    assert [(c["name"], c["value"], c["source"], c["read_only"]) for c in res["configs"]] == \
        [("sluice.group", "INFO", 6, False)]


def test_set_and_delete_change_what_the_broker_writes(b):
    assert not new_connection_logged(b)
    out = loggers(b, "--alter", "--add-config", "sluice.net=DEBUG,sluice.group=DEBUG").stdout
    assert "Completed updating config for broker-logger 0." in out, out
    got = described(b)
    assert (got["sluice.net"], got["sluice.group"], got["sluice.fetch"], got["root"]) == \
        ("DEBUG", "DEBUG", "INFO", "INFO")
    assert new_connection_logged(b)
    assert "logger sluice.net now DEBUG" in log_text(b)

    # The root level: the admin component follows it, so WARN hides the next change's INFO line.
    loggers(b, "--alter", "--add-config", "root=WARN")
    assert levels(b)["sluice.admin"] == "WARN"
    loggers(b, "--alter", "--add-config", "sluice.fetch=TRACE")
    assert "logger sluice.fetch now TRACE" not in log_text(b)

    # DELETE: back to following root.
    loggers(b, "--alter", "--delete-config", "sluice.net,sluice.fetch")
    got = levels(b)
    assert (got["sluice.net"], got["sluice.fetch"], got["sluice.group"]) == ("WARN", "WARN", "DEBUG")
    mark = len(log_text(b))
    with K.Conn(b.bootstrap) as conn:
        K.api_versions_v0(conn)
    assert "DEBUG net: connection" not in log_text(b)[mark:]
    # The change's own line is written at the level it sets.
    loggers(b, "--alter", "--add-config", "root=INFO")
    assert "logger root now INFO" in log_text(b)[mark:]
    assert levels(b)["root"] == "INFO"


def test_refusals_as_kafka_answers_them(b):
    with K.Conn(b.bootstrap) as conn:
        def change(name, ops):
            (r,) = K.incremental_alter_configs(conn, 0, [(K.RESOURCE_BROKER_LOGGER, name, ops)])
            return r["error"], r["error_message"]

        assert change("0", [("sluice.nosuch", K.OP_SET, "DEBUG")]) == (40, "Logger sluice.nosuch does not exist!")
        err, msg = change("0", [("sluice.group", K.OP_SET, "debug")])
        assert err == 40 and msg.startswith("Cannot set the log level of sluice.group to debug"), msg
        assert change("0", [("root", K.OP_DELETE, None)]) == \
            (42, "Removing the log level of the root logger is not allowed")
        assert change("0", [("sluice.group", K.OP_APPEND, "DEBUG")])[0] == 42
        assert change("7", [("sluice.group", K.OP_SET, "DEBUG")])[0] == 42
        assert change("", [("sluice.group", K.OP_SET, "DEBUG")])[0] == 42
        # One bad operation refuses the whole resource; validate_only changes nothing.
        assert change("0", [("sluice.sql", K.OP_SET, "TRACE"), ("sluice.x", K.OP_SET, "TRACE")])[0] == 40
        (r,) = K.incremental_alter_configs(conn, 0, [(K.RESOURCE_BROKER_LOGGER, "0",
                                                      [("sluice.sql", K.OP_SET, "TRACE")])], validate_only=True)
        assert r["error"] == 0
        (r,) = K.alter_configs(conn, 0, [(K.RESOURCE_BROKER_LOGGER, "0", [("sluice.sql", "TRACE")])])
        assert r["error"] == 42, r
    # kafka-configs checks the name against the loggers described before sending.
    refused = loggers(b, "--alter", "--add-config", "sluice.nosuch=DEBUG", check=False)
    assert refused.returncode != 0 and "sluice.nosuch" in refused.stderr, refused.stderr
    assert levels(b)["sluice.sql"] == "INFO"


def test_levels_are_not_kept_over_a_restart(b):
    assert levels(b)["sluice.group"] == "DEBUG"
    b.restart()
    got = levels(b)
    assert (got["root"], got["sluice.group"]) == ("INFO", "INFO")
