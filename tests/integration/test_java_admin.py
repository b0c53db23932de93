"""The Java AdminClient (kafka-clients 4.3.1, tests/jvm) against Sluice: the calls a
Kafka user makes, each answer compared with what the test set up and cross-checked
with librdkafka (confluent-kafka 1.7) where it can see the same thing.

Topics (create with configs, the refusals, list, describe, partitions, delete), configs
(describe, incremental alter; the Java 4.x Admin has no legacy alterConfigs, which
confluent-kafka sends here instead), records (delete), offsets (earliest, latest, max
timestamp, by time), the cluster, consumer groups (list, describe, delete; list, alter
and delete their offsets) and SCRAM credentials (describe, alter, each checked by a
Java client's login).
"""

from confluent_kafka import Producer
from confluent_kafka.admin import ConfigResource

import java_client_helpers as JC
import sluice_helpers as H

BASE_TS = 1_700_000_000_000


def configs_seen_by_librdkafka(bootstrap, topic):
    adm = H.admin_client(bootstrap)
    res = ConfigResource("topic", topic)
    got = adm.describe_configs([res])[res].result(timeout=30)
    return {k: v.value for k, v in got.items()}


def test_topics_configs_records_offsets_and_cluster(broker, topic_name):
    out = JC.run("AdminTopics", broker.bootstrap, topic_name, BASE_TS)
    a, b = topic_name + "-a", topic_name + "-b"
    created = {x["topic"]: x for x in JC.by_kind(out, "create")}
    assert created[a]["error"] is None and created[b]["error"] is None, created
    assert (created[a]["partitions"], created[a]["replication_factor"]) == (3, 1)
    assert created[a]["config"]["retention.ms"] == "3600000"
    assert created[a]["config"]["max.message.bytes"] == "200000"
    assert created[b]["config"]["retention.ms"] == str(7 * 24 * 3600 * 1000)  # the default
    assert {x["topic"]: x["error"] for x in JC.by_kind(out, "create-refused")} == {
        a: "TopicExistsException", "bad name!": "InvalidTopicException",
        a + "-zero": "InvalidPartitionsException", a + "-badconfig": "InvalidConfigurationException"}
    assert JC.one(out, "list-after-create")["topics"] == [a, b]

    described = [x for x in JC.by_kind(out, "describe")]
    assert described[0]["topic_id"] == created[a]["topic_id"] and not described[0]["internal"]
    assert [(p["partition"], p["leader"], p["replicas"], p["isr"]) for p in described[0]["partitions"]] == [
        (p, 0, [0], [0]) for p in range(3)]
    assert described[1]["error"] == "UnknownTopicOrPartitionException", described[1]
    assert [x["error"] for x in JC.by_kind(out, "create-partitions")] == [None, "InvalidPartitionsException"]
    assert [p["partition"] for p in JC.one(out, "describe-after-partitions")["partitions"]] == list(range(5))
    meta = H.admin_client(broker.bootstrap).list_topics(a, timeout=20).topics[a]
    assert sorted(meta.partitions) == list(range(5))

    before = JC.one(out, "configs")
    assert before["retention.ms"] == dict(value="3600000", source="DYNAMIC_TOPIC_CONFIG", default=False,
                                          read_only=False, sensitive=False)
    assert before["max.message.bytes"]["value"] == "200000"
    assert (before["cleanup.policy"]["value"], before["cleanup.policy"]["source"]) == ("delete", "DEFAULT_CONFIG")
    alter = JC.one(out, "alter")
    assert alter == dict(kind="alter", error=None, **{"error_retention.ms": "InvalidConfigurationException",
                                                      "error_no.such.config": "InvalidConfigurationException"})
    after = JC.one(out, "configs-after-alter")
    assert (after["retention.ms"]["value"], after["retention.ms"]["source"]) == ("7200000", "DYNAMIC_TOPIC_CONFIG")
    assert after["max.message.bytes"]["source"] == "DEFAULT_CONFIG" and after["max.message.bytes"]["default"]
    assert (after["cleanup.policy"]["value"], after["cleanup.policy"]["source"]) == (
        "delete,compact", "DYNAMIC_TOPIC_CONFIG")
    seen = configs_seen_by_librdkafka(broker.bootstrap, a)
    assert (seen["retention.ms"], seen["cleanup.policy"], seen["max.message.bytes"]) == (
        "7200000", "delete,compact", after["max.message.bytes"]["value"])
    assert after["count"] == len(seen)
    assert "num.partitions" in JC.one(out, "broker-configs")["names"]

    # 10 records at BASE_TS + 10 * i, record 6 at BASE_TS + 1000; DeleteRecords before 3.
    offsets = JC.one(out, "offsets")
    assert (offsets["earliest"]["offset"], offsets["latest"]["offset"]) == (0, 10)
    assert offsets["max_timestamp"] == dict(offset=6, timestamp=BASE_TS + 1000)
    assert offsets["at_base_plus_35"] == dict(offset=4, timestamp=BASE_TS + 40)
    assert offsets["after_all"]["offset"] == -1
    deleted = JC.one(out, "delete-records")
    assert deleted == dict(kind="delete-records", low_watermark=3, error_beyond_end="OffsetOutOfRangeException")
    later = JC.one(out, "offsets-after-delete")
    assert (later["earliest"]["offset"], later["latest"]["offset"]) == (3, 10)
    assert later["max_timestamp"] == offsets["max_timestamp"]

    cluster = JC.one(out, "cluster")
    host, port = broker.bootstrap.rsplit(":", 1)
    assert cluster["nodes"] == [dict(id=0, host=host, port=int(port))]
    assert cluster["controller"] == 0
    assert cluster["cluster_id"] == H.admin_client(broker.bootstrap).list_topics(timeout=20).cluster_id
    assert JC.one(out, "delete-topics") == dict(kind="delete-topics", error=None,
                                                error_missing="UnknownTopicOrPartitionException")
    assert JC.one(out, "list-after-delete")["topics"] == [a]
    assert b not in H.list_topic_names(broker.bootstrap)


def test_legacy_alter_configs_replaces_the_set_then_java_describes_it(broker, topic_name):
    """The Java 4.x Admin dropped alterConfigs (AlterConfigs, whole set); confluent-kafka
    1.7's alter_configs still sends it: keys it leaves out return to their defaults."""
    H.create_topic(broker.bootstrap, topic_name, 1, config={"retention.ms": "3600000", "cleanup.policy": "compact"})
    adm = H.admin_client(broker.bootstrap)
    res = ConfigResource("topic", topic_name, set_config={"max.message.bytes": "300000"})
    adm.alter_configs([res])[res].result(timeout=30)
    got = JC.one(JC.run("AdminTopics", broker.bootstrap, "--configs-of", topic_name), "configs")
    assert got["max.message.bytes"] == dict(value="300000", source="DYNAMIC_TOPIC_CONFIG", default=False,
                                            read_only=False, sensitive=False)
    for key, default in (("retention.ms", str(7 * 24 * 3600 * 1000)), ("cleanup.policy", "delete")):
        assert (got[key]["value"], got[key]["source"]) == (default, "DEFAULT_CONFIG"), (key, got[key])
    seen = configs_seen_by_librdkafka(broker.bootstrap, topic_name)
    assert (seen["max.message.bytes"], seen["retention.ms"], seen["cleanup.policy"]) == (
        "300000", str(7 * 24 * 3600 * 1000), "delete")


def test_consumer_groups_and_their_offsets(broker, topic_name):
    partitions, per = 4, 10
    H.create_topic(broker.bootstrap, topic_name, partitions)
    p = Producer(H.producer_conf(broker.bootstrap))
    for part in range(partitions):
        for i in range(per):
            p.produce(topic_name, value=b"%d-%d" % (part, i), partition=part)
    assert p.flush(30) == 0
    group = "java-admin-" + topic_name
    out = JC.run("AdminGroups", broker.bootstrap, topic_name, partitions, per, group)
    first, second = JC.by_kind(out, "consumed")
    assert first == dict(kind="consumed", member="first", count=partitions * per,
                         first_offsets={str(x): 0 for x in range(partitions)})

    for kind in ("list-active", "list-active-consumer", "list-active-stable"):
        listed = JC.one(out, kind)
        assert listed["error"] is None and len(listed["groups"]) == 1, listed
        g = listed["groups"][0]
        # type: ListGroups v5 (Sluice's groups are all classic ones, as Kafka reports them).
        assert (g["group_id"], g["protocol"], g["state"], g["type"], g["simple"]) == (
            group, "consumer", "STABLE", "CLASSIC", False), g
    active = JC.one(out, "describe-active")
    assert (active["error"], active["state"], active["assignor"], active["type"], active["simple"]) == (
        None, "STABLE", "range", "CLASSIC", False)  # range: the first of the default assignors
    assert active["coordinator"] == 0
    [m] = active["members"]
    assert m["client_id"] == "sluice-java-admin-member-first" and m["member_id"].startswith(m["client_id"])
    assert m["host"] == "/127.0.0.1" and m["instance_id"] is None
    assert m["assignment"] == [[topic_name, x] for x in range(partitions)]
    committed = {"%s:%d" % (topic_name, x): dict(offset=per, metadata="") for x in range(partitions)}
    assert JC.one(out, "offsets-active")["offsets"] == committed
    assert JC.one(out, "refused-while-active") == dict(
        kind="refused-while-active", delete_group="GroupNotEmptyException",
        delete_offsets="GroupSubscribedToTopicException", alter_offsets="UnknownMemberIdException")

    empty = JC.one(out, "describe-empty")
    assert (empty["state"], empty["members"], empty["simple"]) == ("EMPTY", [], False), empty
    assert JC.one(out, "alter-offsets") == dict(kind="alter-offsets", error=None,
                                               error_unknown_partition="UnknownTopicOrPartitionException")
    assert JC.one(out, "delete-offsets")["error"] is None
    altered = dict(committed)
    altered["%s:0" % topic_name] = dict(offset=3, metadata="three")
    altered["%s:1" % topic_name] = dict(offset=5, metadata="")
    del altered["%s:%d" % (topic_name, partitions - 1)]
    assert JC.one(out, "offsets-altered")["offsets"] == altered
    # The next member starts where the offsets say; the partition without one from the start.
    assert second["first_offsets"] == {"0": 3, "1": 5, str(partitions - 1): 0}, second
    assert second["count"] == (per - 3) + (per - 5) + per
    assert JC.one(out, "delete-group") == dict(kind="delete-group", error=None,
                                              error_again="GroupIdNotFoundException")
    for kind in ("list-after-delete", "list-after-delete-consumer", "list-after-delete-stable"):
        assert JC.one(out, kind)["groups"] == [], out
    # DescribeGroups (v5, the newest Sluice has) describes an unknown group as Dead.
    gone = JC.one(out, "describe-after-delete")
    assert (gone["error"], gone["state"], gone["members"]) == (None, "DEAD", []), gone


def test_scram_credentials(secure_broker_factory):
    b = secure_broker_factory(["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"],
                              extra_args=["--authorization", "permissive"])
    out = JC.run("AdminScram", b.bootstrap, b.addr("SASL_PLAINTEXT"), "java-alice")
    assert JC.one(out, "alter") == dict(kind="alter", error=None,
                                        error_few_iterations="UnacceptableCredentialException")
    assert JC.one(out, "describe") == dict(kind="describe", error=None, credentials=[
        dict(mechanism="SCRAM-SHA-256", iterations=8192), dict(mechanism="SCRAM-SHA-512", iterations=4096)])
    assert JC.one(out, "describe-unknown")["error"] == "ResourceNotFoundException"
    assert JC.one(out, "login") == {"kind": "login", "SCRAM-SHA-256/java-256-secret": None,
                                    "SCRAM-SHA-512/java-512-secret": None,
                                    "SCRAM-SHA-512/wrong": "SaslAuthenticationException"}
    assert JC.one(out, "delete-256")["error"] is None
    assert JC.one(out, "describe-after-delete")["credentials"] == [dict(mechanism="SCRAM-SHA-512", iterations=4096)]
    assert JC.one(out, "login-after-delete") == {"kind": "login-after-delete",
                                                 "SCRAM-SHA-256/java-256-secret": "SaslAuthenticationException",
                                                 "SCRAM-SHA-512/java-512-secret": None,
                                                 "SCRAM-SHA-512/wrong": "SaslAuthenticationException"}
