"""Group configs (Kafka's GroupConfig) with Apache Kafka's kafka-configs
(--entity-type groups, via scripts/kafka-tool) against Sluice, and their effect on live
groups: share.auto.offset.reset=earliest gives a new share group the records written
before it, a lowered share.record.lock.duration.ms brings a dead consumer's records back
sooner than the broker's lock, consumer.heartbeat.interval.ms is what the consumer
group's heartbeats answer; refusals in Kafka's words; a broker kill -9 keeps them.

One broker for the module, with a 60 s record lock by default; the tests run in file
order (the last one restarts the broker).
"""

import time

import pytest

import java_client_helpers as JC
import jvm_helpers as J
import kproto as K
import sluice_helpers as H
import sql_helpers as S
from test_differential_consumer_groups import Member as HeartbeatMember
from test_share_groups import accepted, deliveries, produce, share_member

BROKER_LOCK_MS = 60000


@pytest.fixture(scope="module")
def b(module_broker_factory):
    return module_broker_factory(extra_args=["--group-share-record-lock-duration-ms", str(BROKER_LOCK_MS),
                                             "--group-share-heartbeat-interval-ms", "1000"] + S.SQL_ARGS)


def configs(b, group, *args, check=True):
    proc = J.run_tool("kafka-configs", "--bootstrap-server", b.bootstrap, "--entity-type", "groups",
                      "--entity-name", group, *args)
    if check and proc.returncode != 0:
        raise AssertionError("kafka-configs %s exited %d:\n%s" % (" ".join(map(str, args)), proc.returncode,
                                                                  proc.stderr[-3000:]))
    return proc


def described(b, group):
    lines = configs(b, group, "--describe").stdout.splitlines()
    return [l.strip() for l in lines if l.startswith("  ")]


def test_kafka_configs_sets_describes_and_refuses(b):
    group = "gc-tool"
    assert described(b, group) == []
    out = configs(b, group, "--alter", "--add-config", "share.auto.offset.reset=earliest,share.delivery.count.limit=3")
    assert out.stdout.strip() == "Completed updating config for group %s." % group, out.stdout
    assert described(b, group) == [
        "share.auto.offset.reset=earliest sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.auto.offset.reset="
        "earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest}",
        "share.delivery.count.limit=3 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.delivery.count.limit=3, "
        "DEFAULT_CONFIG:group.share.delivery.count.limit=5}"]
    bad = configs(b, group, "--alter", "--add-config", "share.record.lock.duration.ms=1", check=False)
    assert bad.returncode != 0
    assert "InvalidConfigurationException: Invalid value 1 for configuration share.record.lock.duration.ms: " \
           "Value must be at least 1000" in bad.stderr, bad.stderr[-2000:]
    unknown = configs(b, group, "--alter", "--add-config", "no.such.config=1", check=False)
    assert unknown.returncode != 0 and "Unknown group config name: no.such.config" in unknown.stderr, \
        unknown.stderr[-2000:]
    configs(b, group, "--alter", "--delete-config", "share.delivery.count.limit")
    assert [l.split(" ")[0] for l in described(b, group)] == ["share.auto.offset.reset=earliest"]


def test_earliest_gives_a_new_share_group_the_old_records(b, topic_name, procs):
    H.create_topic(b.bootstrap, topic_name, 1)
    old = produce(b.bootstrap, topic_name, ["old-%d" % i for i in range(10)])
    early, late = "gc-early-" + topic_name, "gc-late-" + topic_name
    configs(b, early, "--alter", "--add-config", "share.auto.offset.reset=earliest")
    e = share_member(procs, b.bootstrap, early, topic_name, "E")
    l = share_member(procs, b.bootstrap, late, topic_name, "L")
    JC.wait_for("E (earliest) to accept the old records", lambda: set(accepted([e])) >= set(old), timeout=90)
    # L has read the partition once (its window starts at the high watermark then).
    JC.wait_for("L's share-partition", lambda: S.http_rows(
        b.http, "SELECT start_offset FROM system.share_groups WHERE group_id = '%s' AND topic IS NOT NULL" % late)
        == [[10]], timeout=60)
    new = produce(b.bootstrap, topic_name, ["new-%d" % i for i in range(5)])
    JC.wait_for("L (latest, the broker default) to accept the new records", lambda: set(accepted([l])) >= set(new),
                timeout=90)
    assert not set(accepted([l])) & set(old), ("latest: no record from before the group", accepted([l]))
    assert set(accepted([e])) == set(old) | set(new), accepted([e])
    e.stop()
    l.stop()


def test_a_lowered_lock_duration_redelivers_sooner(b, topic_name, procs):
    H.create_topic(b.bootstrap, topic_name, 1)
    group = "gc-lock-" + topic_name
    configs(b, group, "--alter", "--add-config",
            "share.auto.offset.reset=earliest,share.record.lock.duration.ms=15000")
    want = produce(b.bootstrap, topic_name, ["held-%d" % i for i in range(5)])
    holder = share_member(procs, b.bootstrap, group, topic_name, "H", "sluice.hold=true")
    JC.wait_for("H to hold records", lambda: holder.snapshot("holding"), timeout=90)
    held = {e["value"] for e in holder.snapshot("record")}
    assert held, holder.describe()
    H.kill_group(holder.proc)  # kill -9: no acknowledgement, no leave
    killed_at = time.monotonic()
    other = share_member(procs, b.bootstrap, group, topic_name, "B")
    JC.wait_for("B to get every record", lambda: set(accepted([other])) >= set(want), timeout=90)
    took = time.monotonic() - killed_at
    again = {v: c for (v, c, _, _) in deliveries([other])}
    assert all(again[v] == 2 for v in held), ("held records are a second delivery", again, held)
    # The group's 15 s lock, not the broker's 60 s (nor H's 45 s session).
    assert 13 <= took < 40, took
    other.stop()


def test_consumer_heartbeat_interval_comes_from_the_group(b, topic_name):
    H.create_topic(b.bootstrap, topic_name, 1)
    group = "gc-hb-" + topic_name
    with K.Conn(b.bootstrap) as conn:
        m = HeartbeatMember(conn, group, "member-a", topic_name)
        first = m.beat(owned=[], join=True)
        assert (first["error_code"], first["heartbeat_interval_ms"]) == (0, 5000), first
        m.epoch = first["member_epoch"]
    configs(b, group, "--alter", "--add-config", "consumer.heartbeat.interval.ms=7000")
    with K.Conn(b.bootstrap) as conn:
        m.conn = conn
        again = m.beat()
        assert (again["error_code"], again["heartbeat_interval_ms"]) == (0, 7000), again
        m.beat(epoch=-1)


def test_a_broker_kill_keeps_them(b):
    group = "gc-restart"
    configs(b, group, "--alter", "--add-config", "share.session.timeout.ms=50000")
    before = described(b, group)
    assert before[0].startswith("share.session.timeout.ms=50000 "), before
    b.kill9()
    b.start()
    assert described(b, group) == before
