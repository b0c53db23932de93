"""Apache Kafka 4.3.1 as the oracle for group configs (Kafka's GroupConfig, the GROUP
resource of DescribeConfigs / IncrementalAlterConfigs / AlterConfigs, what
`kafka-configs --entity-type groups` sends): the same requests, sent raw to Kafka and to
Sluice (differential_helpers' fixtures), get the same answers field by field: the
configs described with their values, sources, types and synonyms, and the error code
and message of every refused change.

Set aside, as docs/compatibility.md says: the configs of groups Sluice does not have or
does not need (streams groups; the assignment intervals of a broker that assigns at
once; share.renew.acknowledge.enable), and the values Sluice refuses that Kafka takes
(share.auto.offset.reset=by_duration:...).
"""

import kproto as K
import kproto_flex as F
from differential_helpers import (  # noqa: F401 (kafka, sluice, both: the module's fixtures)
    ask, assert_same, both, fresh, kafka, sluice)

GROUP = 32
KAFKA_ONLY = {
    "consumer.assignment.interval.ms", "share.assignment.interval.ms", "share.renew.acknowledge.enable",
    "streams.assignment.interval.ms", "streams.heartbeat.interval.ms", "streams.initial.rebalance.delay.ms",
    "streams.num.standby.replicas", "streams.session.timeout.ms",
}
INVALID_CONFIG, INVALID_REQUEST = 40, 42

DC_REQ = [("resources", [[("resource_type", "i8"), ("resource_name", "str"), ("configuration_keys", ["str"])]]),
          ("include_synonyms", "bool"), ("include_documentation", "bool")]
DC_RESP = [("throttle_time_ms", "i32"), ("results", [[
    ("error_code", "i16"), ("error_message", "str"), ("resource_type", "i8"), ("resource_name", "str"),
    ("configs", [[("name", "str"), ("value", "str"), ("read_only", "bool"), ("config_source", "i8"),
                  ("is_sensitive", "bool"), ("synonyms", [[("name", "str"), ("value", "str"), ("source", "i8")]]),
                  ("config_type", "i8"), ("documentation", "str")]])]])]
IAC_REQ = [("resources", [[("resource_type", "i8"), ("resource_name", "str"),
                           ("configs", [[("name", "str"), ("config_operation", "i8"), ("value", "str")]])]]),
           ("validate_only", "bool")]
AC_REQ = [("resources", [[("resource_type", "i8"), ("resource_name", "str"),
                          ("configs", [[("name", "str"), ("value", "str")]])]]), ("validate_only", "bool")]
ALTER_RESP = [("throttle_time_ms", "i32"), ("responses", [[("error_code", "i16"), ("error_message", "str"),
                                                            ("resource_type", "i8"), ("resource_name", "str")]])]
SET, DELETE, APPEND = 0, 1, 2


def describe(group, keys=None, synonyms=True):
    def fn(conn):
        r = F.call(conn, 32, 4, DC_REQ, DC_RESP, dict(
            resources=[dict(resource_type=GROUP, resource_name=group, configuration_keys=keys)],
            include_synonyms=synonyms, include_documentation=False))
        (res,) = r["results"]
        res["configs"] = sorted((c for c in res["configs"] if c["name"] not in KAFKA_ONLY), key=lambda c: c["name"])
        return res
    return fn


def alter(group, ops, validate_only=False):
    def fn(conn):
        return F.call(conn, 44, 1, IAC_REQ, ALTER_RESP, dict(
            resources=[dict(resource_type=GROUP, resource_name=group,
                            configs=[dict(name=n, config_operation=o, value=v) for n, o, v in ops])],
            validate_only=validate_only))["responses"]
    return fn


def alter_all(group, configs):
    def fn(conn):
        return F.call(conn, 33, 2, AC_REQ, ALTER_RESP, dict(
            resources=[dict(resource_type=GROUP, resource_name=group,
                            configs=[dict(name=n, value=v) for n, v in configs])],
            validate_only=False))["responses"]
    return fn


def same(both, fn, what):
    k, s = ask(both, fn)
    assert_same(k, s, what)
    return k


def test_a_new_group_describes_the_broker_defaults(both):
    got = same(both, describe(fresh("gc")), "a group without configs")
    assert got["error_code"] == 0 and len(got["configs"]) == 9, got
    assert all(c["config_source"] == 5 for c in got["configs"]), got
    same(both, describe(fresh("gc"), ["share.auto.offset.reset", "no.such.config"], synonyms=False), "named keys")
    same(both, describe(""), "the empty group name")


def test_changes_and_refusals_answer_as_kafka(both):
    g = fresh("gc")
    steps = [
        [("consumer.session.timeout.ms", SET, "50000")],
        [("consumer.session.timeout.ms", SET, "1000")],
        [("consumer.session.timeout.ms", SET, "70000")],
        [("consumer.session.timeout.ms", SET, "abc")],
        [("consumer.session.timeout.ms", SET, "0")],
        [("consumer.heartbeat.interval.ms", SET, "3000")],
        [("consumer.heartbeat.interval.ms", SET, "60000")],
        [("consumer.heartbeat.interval.ms", SET, "6000")],
        [("share.session.timeout.ms", SET, "44000")],
        [("share.heartbeat.interval.ms", SET, "16000")],
        [("share.record.lock.duration.ms", SET, "999")],
        [("share.record.lock.duration.ms", SET, "14000")],
        [("share.record.lock.duration.ms", SET, "61000")],
        [("share.record.lock.duration.ms", SET, "20000")],
        [("share.delivery.count.limit", SET, "1")],
        [("share.delivery.count.limit", SET, "11")],
        [("share.delivery.count.limit", SET, "99999999999")],
        [("share.delivery.count.limit", SET, "3")],
        [("share.partition.max.record.locks", SET, "99")],
        [("share.partition.max.record.locks", SET, "10001")],
        [("share.partition.max.record.locks", SET, "500")],
        [("share.auto.offset.reset", SET, "bogus")],
        [("share.auto.offset.reset", SET, "earliest")],
        [("share.isolation.level", SET, "bogus")],
        [("share.isolation.level", SET, "read_uncommitted")],
        [("no.such.config", SET, "1")],
        [("share.auto.offset.reset", SET, None)],
        [("share.auto.offset.reset", SET, "latest"), ("share.auto.offset.reset", SET, "earliest")],
        [("no.such.config", DELETE, None)],
        [("consumer.heartbeat.interval.ms", DELETE, None)],
    ]
    for ops in steps:
        same(both, alter(g, ops), "IncrementalAlterConfigs %r" % (ops,))
    same(both, alter(g, [("share.auto.offset.reset", APPEND, "x")]), "APPEND to a config that is not a list")
    same(both, alter(fresh("gc"), [("share.auto.offset.reset", SET, "earliest")], validate_only=True), "validate only")
    same(both, alter("", [("share.auto.offset.reset", SET, "earliest")]), "the empty group name")
    got = same(both, describe(g), "the group after the changes")
    own = {c["name"]: c["value"] for c in got["configs"] if c["config_source"] == 8}
    assert own == {"consumer.session.timeout.ms": "50000", "share.record.lock.duration.ms": "20000",
                   "share.delivery.count.limit": "3", "share.partition.max.record.locks": "500",
                   "share.auto.offset.reset": "earliest", "share.isolation.level": "read_uncommitted"}, own


def test_alter_configs_replaces_the_whole_set(both):
    g = fresh("gc")
    same(both, alter(g, [("share.delivery.count.limit", SET, "4")]), "a first config")
    same(both, alter_all(g, [("share.auto.offset.reset", "earliest")]), "AlterConfigs")
    same(both, alter_all(g, [("share.auto.offset.reset", "earliest"), ("share.auto.offset.reset", "latest")]),
         "AlterConfigs naming a key twice")
    same(both, alter_all(g, [("share.delivery.count.limit", "1")]), "AlterConfigs with a bad value")
    got = same(both, describe(g), "the group after AlterConfigs")
    assert [c["name"] for c in got["configs"] if c["config_source"] == 8] == ["share.auto.offset.reset"], got


def test_what_sluice_refuses_that_kafka_takes(both):
    """The documented differences: Sluice refuses them, as INVALID_CONFIG."""
    g = fresh("gc")
    k, s = ask(both, alter(g, [("share.auto.offset.reset", SET, "by_duration:PT1H")]))
    assert k[0]["error_code"] == 0 and s[0]["error_code"] == INVALID_CONFIG, (k, s)
    # Taken by both (share read_committed reads up to the last stable offset); a group of
    # its own, since Kafka took the by_duration value above and Sluice did not.
    g = fresh("gc-rc")
    same(both, alter(g, [("share.isolation.level", SET, "read_committed")]), "share read_committed")
    got = same(both, describe(g), "the group with read_committed")
    assert any(c["name"] == "share.isolation.level" and c["value"] == "read_committed"
               for c in got["configs"]), got
    for name in sorted(KAFKA_ONLY):
        k, s = ask(both, alter(g, [(name, DELETE, None)]))
        assert k[0]["error_code"] == s[0]["error_code"] == 0, (name, k, s)
