"""Authorization: every API against the action it needs, metadata filtering, policies
changed under open connections, and the permissive/required defaults.

The matrix (test_api_matrix) has one row per API of the specification's table. For a row
whose needs are grants g1..gn (action on resource), the module broker has these users,
written offline before it starts:
  <row>-ok     exactly g1..gn                              -> the API succeeds
  <row>-noI    g1..gn without gI, plus every other action on gI's resource except those
               implying gI's action                        -> gI's error code
  <row>-deny   g1..gn plus a Deny of g1                   -> g1's error code
Requests are raw (kproto.py / security_helpers.py) over SASL_PLAINTEXT with PLAIN, so the
exact error code and place (top level, per group, per partition) is checked, and each
check also reads back, as `admin`, that a refused request changed nothing and an
allowed one did what it says.
"""

import time

import pytest
from confluent_kafka import KafkaError, Producer

import idempotence_helpers as I
import kproto as K
import security_helpers as S
import sluice_helpers as H

ADMIN_PW = "admin-pw-authz"
TOPIC, BROKER = K.RESOURCE_TOPIC, K.RESOURCE_BROKER
CODE = {"topic": S.TOPIC_AUTHORIZATION_FAILED, "group": S.GROUP_AUTHORIZATION_FAILED,
        "cluster": S.CLUSTER_AUTHORIZATION_FAILED, "transactional-id": I.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}


def pw(user):
    return "pw-" + user


def t(row):
    return "mx-" + row


def g(row):
    return "mg-" + row


def topic_res(name):
    return "sluice:topic:" + name


def group_res(name):
    return "sluice:group:" + name


def txn_res(name):
    return "sluice:transactional-id:" + name


CLUSTER = "sluice:cluster"


# --------------------------------------------------------------------------
# The matrix: row -> grants [(action, resource)] (+ error code overrides)
# --------------------------------------------------------------------------

ROWS = {
    "produce": [("KafkaWrite", topic_res(t("produce")))],
    "fetch": [("KafkaRead", topic_res(t("fetch")))],
    "listoffsets": [("KafkaDescribe", topic_res(t("listoffsets")))],
    "metadata": [("KafkaDescribe", topic_res(t("metadata")))],
    "offsetcommit": [("KafkaRead", group_res(g("offsetcommit"))), ("KafkaRead", topic_res(t("offsetcommit")))],
    "offsetfetch": [("KafkaDescribe", group_res(g("offsetfetch"))), ("KafkaDescribe", topic_res(t("offsetfetch")))],
    "findcoordinator": [("KafkaDescribe", group_res(g("findcoordinator")))],
    "joingroup": [("KafkaRead", group_res(g("joingroup")))],
    "describegroups": [("KafkaDescribe", group_res(g("describegroups")))],
    "deletegroups": [("KafkaDelete", group_res(g("deletegroups")))],
    "offsetdelete": [("KafkaDelete", group_res(g("offsetdelete"))), ("KafkaRead", topic_res(t("offsetdelete")))],
    "describeconfigs": [("KafkaDescribeConfigs", topic_res(t("describeconfigs")))],
    "describeconfigs-broker": [("KafkaDescribeConfigs", CLUSTER)],
    "alterconfigs": [("KafkaAlterConfigs", topic_res(t("alterconfigs")))],
    "createtopics": [("KafkaCreate", topic_res(t("createtopics") + "-*"))],
    "createtopics-cluster": [("KafkaCreate", CLUSTER)],
    "deletetopics": [("KafkaDelete", topic_res(t("deletetopics")))],
    "deleterecords": [("KafkaDelete", topic_res(t("deleterecords")))],
    "createpartitions": [("KafkaAlter", topic_res(t("createpartitions")))],
    "describescram": [("KafkaDescribe", CLUSTER)],
    "alterscram": [("KafkaAlter", CLUSTER)],
    # InitProducerId without a transactional id: IdempotentWrite on the cluster, or Write
    # on any topic (KIP-679); refused with CLUSTER_AUTHORIZATION_FAILED either way.
    "initproducerid": [("KafkaIdempotentWrite", CLUSTER)],
    "initproducerid-topic": [("KafkaWrite", topic_res(t("initproducerid-topic")))],
    "describeproducers": [("KafkaRead", topic_res(t("describeproducers")))],
    # With a transactional id: Write on it (Describe to find its coordinator), nothing else.
    "initproducerid-txn": [("KafkaWrite", txn_res(t("initproducerid-txn")))],
    "findcoordinator-txn": [("KafkaDescribe", txn_res(t("findcoordinator-txn")))],
    # Operators' transaction APIs (kafka-transactions): Describe on the id; the markers
    # `abort` writes need ClusterAction.
    "describetransactions": [("KafkaDescribe", txn_res(t("describetransactions")))],
    "writetxnmarkers": [("KafkaClusterAction", CLUSTER)],
}
# CreateTopics answers TOPIC_AUTHORIZATION_FAILED per topic even when the grant in
# question is Create on the cluster (as Kafka does).
CODE_OVERRIDE = {"createtopics-cluster": S.TOPIC_AUTHORIZATION_FAILED,
                 "initproducerid-topic": S.CLUSTER_AUTHORIZATION_FAILED}


def resource_kind(res):
    return "cluster" if res == CLUSTER else res.split(":")[1]


def neighbours(action):
    """Every action except `action` and those that imply it."""
    return [a for a in S.ALL_ACTIONS if a != action and a not in S.IMPLIED_BY.get(action, ())]


def matrix_users():
    """{user: (statements, expected error or None, row)}."""
    users = {}
    for row, grants in ROWS.items():
        allows = [S.allow(a, r) for a, r in grants]
        users["%s-ok" % row] = (allows, None, row)
        for i, (a, r) in enumerate(grants):
            others = [S.allow(a2, r2) for j, (a2, r2) in enumerate(grants) if j != i]
            users["%s-no%d" % (row, i)] = (others + [S.allow(neighbours(a), r)],
                                          CODE_OVERRIDE.get(row, CODE[resource_kind(r)]), row)
        a0, r0 = grants[0]
        users["%s-deny" % row] = (allows + [S.deny(a0, r0)], CODE_OVERRIDE.get(row, CODE[resource_kind(r0)]), row)
    return users


MATRIX_USERS = matrix_users()

# Users of the other tests of this module: {user: statements}.
EXTRA_USERS = {
    "lg-cluster": [S.allow("KafkaDescribe", CLUSTER)],
    "lg-one": [S.allow("KafkaDescribe", group_res("mg-listgroups-a"))],
    "lt-one": [S.allow("KafkaDescribe", txn_res("mx-lt-a"))],
    "lg-none": [],
    "lg-deny": [S.allow("KafkaDescribe", [CLUSTER, group_res("mg-listgroups-*")]), S.deny("KafkaDescribe", CLUSTER)],
    "md-wild": [S.allow("KafkaDescribe", topic_res("mx-meta-*"))],
    "md-qmark": [S.allow("KafkaDescribe", topic_res("mx-meta-?"))],
    "md-deny": [S.allow("KafkaDescribe", topic_res("mx-meta-*")), S.deny("KafkaDescribe", topic_res("mx-meta-b"))],
    "md-list": [S.allow(["KafkaRead"], [topic_res("mx-meta-a"), topic_res("mx-meta-c")])],
    "md-none": [],
    "dyn": [S.allow("KafkaWrite", topic_res("mx-dyn"))],
    "scram-target": [],
}


class Ctx:
    def __init__(self, b):
        self.b = b
        self.sasl = b.addr("SASL_PLAINTEXT")
        self.sasl_port = int(self.sasl.rsplit(":", 1)[1])

    def conn(self, user):
        return S.SecureConn(self.sasl, S.Creds("SASL_PLAINTEXT", "PLAIN", user, pw(user)))

    def admin(self):
        return S.SecureConn(self.sasl, S.Creds("SASL_PLAINTEXT", "PLAIN", "admin", ADMIN_PW))

    def admin_creds(self):
        return S.Creds("SASL_PLAINTEXT", "PLAIN", "admin", ADMIN_PW)

    def hw(self, topic):
        with self.admin() as a:
            return K.high_watermark(a, topic)

    def committed(self, group, topic):
        with self.admin() as a:
            err, offs = K.offset_fetch_one(a, 5, group, {topic: [0]})
        assert err == 0 and offs[(topic, 0)][2] == 0, (err, offs)
        return offs[(topic, 0)][0]

    def partitions(self, topic):
        """Partition count as admin sees it; None when the topic does not exist."""
        with self.admin() as a:
            md = K.metadata_v1(a, [topic])
        tp = md["topics"][topic]
        if tp["error"] == K.UNKNOWN_TOPIC_OR_PARTITION:
            return None
        assert tp["error"] == 0, tp
        return len(tp["partitions"])

    def commit(self, group, topic, offset, metadata="m"):
        with self.admin() as a:
            assert K.offset_commit(a, 2, group, {topic: [(0, offset, metadata)]}) == {(topic, 0): 0}

    def topic_config(self, topic, key):
        with self.admin() as a:
            (r,) = K.describe_configs(a, 1, [(TOPIC, topic, [key])])
        assert r["error"] == 0, r
        return {c["name"]: c["value"] for c in r["configs"]}[key]


@pytest.fixture(scope="module")
def b(module_secure_broker_factory, tmp_path_factory):
    # A TLS certificate, so that the HTTP listener can serve https (online CLI with --auth).
    pki = S.Pki(tmp_path_factory.mktemp("pki-authz"))
    broker = module_secure_broker_factory(
        ["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"],
        extra_args=["--http", "https://127.0.0.1:0", "--group-initial-rebalance-delay-ms", "0"] + S.tls_flags(pki, pki.server()),
        start=False)
    broker.pki = pki
    tgt = S.Target.stopped(broker)
    S.grant(tgt, "admin", [S.allow("*", "sluice:*")], password=ADMIN_PW)
    for user, (stmts, _, _) in sorted(MATRIX_USERS.items()):
        S.grant(tgt, user, stmts, password=pw(user))
    for user, stmts in sorted(EXTRA_USERS.items()):
        if user == "scram-target":
            S.user_add(tgt, user, pw(user), iterations=8192)
            continue
        S.user_add(tgt, user, pw(user))
        if stmts:
            S.grant(tgt, user, stmts)
    broker.start()
    broker.ctx = Ctx(broker)
    return broker


@pytest.fixture(scope="module")
def c(b):
    """The module broker's Ctx, with the topics, records and groups the matrix reads."""
    ctx = b.ctx
    admin = ctx.admin_creds()
    for name in ["produce", "fetch", "listoffsets", "metadata", "offsetcommit", "offsetfetch", "offsetdelete",
                 "describeconfigs", "alterconfigs", "deletetopics", "deleterecords", "createpartitions",
                 "initproducerid-topic", "describeproducers", "writetxnmarkers"]:
        S.create_topic(ctx.sasl, admin, t(name), 1)
    for name in ["mx-meta-a", "mx-meta-b", "mx-meta-c", "mx-meta-long", "mx-dyn"]:
        S.create_topic(ctx.sasl, admin, name, 1)
    with ctx.admin() as a:
        ctx.fetch_pairs = S.records_for(3, "fetch")
        assert S.produce_raw(a, t("fetch"), ctx.fetch_pairs)["error"] == 0
        assert S.produce_raw(a, t("listoffsets"), S.records_for(4, "lo"))["error"] == 0
        assert S.produce_raw(a, t("deleterecords"), S.records_for(5, "dr"))["error"] == 0
        for grp, top in [("offsetcommit", "offsetcommit"), ("offsetdelete", "offsetdelete"),
                         ("describegroups", "fetch"), ("deletegroups", "fetch")]:
            assert K.offset_commit(a, 2, g(grp), {t(top): [(0, 7, "m")]}) == {(t(top), 0): 0}
        assert K.offset_commit(a, 2, g("offsetfetch"), {t("offsetfetch"): [(0, 11, "meta")]}) == {
            (t("offsetfetch"), 0): 0}
        for grp in ("mg-listgroups-a", "mg-listgroups-b"):
            assert K.offset_commit(a, 2, grp, {t("fetch"): [(0, 1, None)]}) == {(t("fetch"), 0): 0}
    return ctx


# --------------------------------------------------------------------------
# Checks: check(c, user, expect) with expect None (allowed) or the error code
# --------------------------------------------------------------------------


def chk_produce(c, user, expect):
    topic = t("produce")
    hw0 = c.hw(topic)
    pairs = [(user.encode() + b"-0", b"v0"), (user.encode() + b"-1", b"v1")]
    with c.conn(user) as conn:
        res = S.produce_raw(conn, topic, pairs)
    if expect:
        assert res["error"] == expect, res
        assert c.hw(topic) == hw0
        return
    assert (res["error"], res["base_offset"]) == (0, hw0), res
    with c.admin() as a:
        assert S.fetch_pairs(a, topic)[-2:] == [(hw0, pairs[0][0], b"v0"), (hw0 + 1, pairs[1][0], b"v1")]


def chk_fetch(c, user, expect):
    with c.conn(user) as conn:
        if expect:
            p = K.fetch_v4(conn, t("fetch"), 0, 0)
            assert p["error"] == expect and not p["records"], p
        else:
            assert S.fetch_pairs(conn, t("fetch")) == [(i, k, v) for i, (k, v) in enumerate(c.fetch_pairs)]


def chk_listoffsets(c, user, expect):
    with c.conn(user) as conn:
        d = K.list_offsets(conn, t("listoffsets"), {0: K.LATEST_TIMESTAMP})[0]
        if expect:
            assert d["error"] == expect, d
        else:
            assert (d["error"], d["offset"]) == (0, 4), d
            assert K.log_start_offset(conn, t("listoffsets")) == 0


def chk_metadata(c, user, expect):
    topic = t("metadata")
    with c.conn(user) as conn:
        listed = K.metadata_v1(conn, None)
        named = K.metadata_v1(conn, [topic])
    if expect:
        assert topic not in listed["topics"], listed["topics"].keys()
        assert named["topics"][topic]["error"] == expect, named["topics"]
    else:
        assert sorted(listed["topics"]) == [topic], sorted(listed["topics"])
        tp = named["topics"][topic]
        assert tp["error"] == 0 and [p["partition"] for p in tp["partitions"]] == [0], tp
    assert [x["port"] for x in listed["brokers"]] == [c.sasl_port]


def chk_offsetcommit(c, user, expect):
    grp, topic = g("offsetcommit"), t("offsetcommit")
    before = c.committed(grp, topic)
    with c.conn(user) as conn:
        res = K.offset_commit(conn, 2, grp, {topic: [(0, 42, "by-" + user)]})
    if expect:
        assert res == {(topic, 0): expect}, res
        assert c.committed(grp, topic) == before
    else:
        assert res == {(topic, 0): 0}, res
        assert c.committed(grp, topic) == 42


def chk_offsetfetch(c, user, expect):
    grp, topic = g("offsetfetch"), t("offsetfetch")
    with c.conn(user) as conn:
        err, offs = K.offset_fetch_one(conn, 5, grp, {topic: [0]})
    if expect == S.GROUP_AUTHORIZATION_FAILED:
        assert err == expect, (err, offs)
    elif expect == S.TOPIC_AUTHORIZATION_FAILED:
        assert err == 0 and offs[(topic, 0)][2] == expect, (err, offs)
        assert offs[(topic, 0)][0] == -1, offs
    else:
        assert (err, offs) == (0, {(topic, 0): (11, "meta", 0)}), (err, offs)


def chk_findcoordinator(c, user, expect):
    with c.conn(user) as conn:
        (d,) = K.find_coordinator(conn, 2, [g("findcoordinator")])
    if expect:
        assert d["error"] == expect, d
    else:
        assert (d["error"], d["host"], d["port"]) == (0, "127.0.0.1", c.sasl_port), d


def _join(conn, grp, rebalance_timeout_ms=10000):
    sub = K.consumer_subscription_v0([t("fetch")])
    return K.join_group(conn, 3, grp, "", "consumer", [("range", sub)], session_timeout_ms=30000,
                        rebalance_timeout_ms=rebalance_timeout_ms, timeout=20)


def chk_joingroup(c, user, expect):
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup all need Read on the group."""
    grp = g("joingroup")
    assignment = K.consumer_assignment_v0({t("fetch"): [0]})
    if not expect:
        with c.conn(user) as conn:
            j = _join(conn, grp)
            assert j["error"] == 0 and j["leader"] == j["member_id"], j
            s = K.sync_group(conn, 2, grp, j["generation"], j["member_id"], [(j["member_id"], assignment)])
            assert (s["error"], s["assignment"]) == (0, assignment), s
            assert K.heartbeat(conn, 2, grp, j["generation"], j["member_id"]) == 0
            assert K.leave_group(conn, 2, grp, [(j["member_id"], None)])["error"] == 0
        return
    with c.admin() as a, c.conn(user) as conn:
        j = _join(a, grp, rebalance_timeout_ms=5000)
        assert j["error"] == 0, j
        gen, mid = j["generation"], j["member_id"]
        assert K.sync_group(a, 2, grp, gen, mid, [(mid, assignment)])["error"] == 0
        assert _join(conn, grp)["error"] == expect
        assert K.sync_group(conn, 2, grp, gen, mid, [(mid, assignment)])["error"] == expect
        assert K.heartbeat(conn, 2, grp, gen, mid) == expect
        assert K.leave_group(conn, 2, grp, [(mid, None)])["error"] == expect
        # None of it touched the admin's membership.
        assert K.heartbeat(a, 2, grp, gen, mid) == 0
        assert K.leave_group(a, 2, grp, [(mid, None)])["error"] == 0


def chk_describegroups(c, user, expect):
    with c.conn(user) as conn:
        (d,) = K.describe_groups(conn, 1, [g("describegroups")])
    if expect:
        assert d["error"] == expect and d["group_id"] == g("describegroups"), d
    else:
        assert (d["error"], d["group_id"], d["state"], d["members"]) == (0, g("describegroups"), "Empty", []), d


def chk_deletegroups(c, user, expect):
    grp = g("deletegroups")
    with c.conn(user) as conn:
        res = K.delete_groups(conn, 1, [grp])
    if expect:
        assert res == {grp: expect}, res
        assert c.committed(grp, t("fetch")) == 7
    else:
        assert res == {grp: 0}, res
        assert c.committed(grp, t("fetch")) == -1


def chk_offsetdelete(c, user, expect):
    grp, topic = g("offsetdelete"), t("offsetdelete")
    with c.conn(user) as conn:
        err, parts = K.offset_delete(conn, grp, {topic: [0]})
    if expect == S.GROUP_AUTHORIZATION_FAILED:
        assert err == expect, (err, parts)
    elif expect == S.TOPIC_AUTHORIZATION_FAILED:
        assert (err, parts) == (0, {(topic, 0): expect}), (err, parts)
    else:
        assert (err, parts) == (0, {(topic, 0): 0}), (err, parts)
        assert c.committed(grp, topic) == -1
        return
    assert c.committed(grp, topic) == 7


def chk_describeconfigs(c, user, expect):
    with c.conn(user) as conn:
        (r,) = K.describe_configs(conn, 1, [(TOPIC, t("describeconfigs"), ["retention.ms"])])
    if expect:
        assert r["error"] == expect and not r["configs"], r
    else:
        assert r["error"] == 0 and [x["name"] for x in r["configs"]] == ["retention.ms"], r
        assert int(r["configs"][0]["value"]) > 0


def chk_describeconfigs_broker(c, user, expect):
    with c.conn(user) as conn:
        (r,) = K.describe_configs(conn, 1, [(BROKER, "0", ["num.partitions"])])
    if expect:
        assert r["error"] == expect and not r["configs"], r
    else:
        assert r["error"] == 0 and [x["name"] for x in r["configs"]] == ["num.partitions"], r


def chk_alterconfigs(c, user, expect):
    topic = t("alterconfigs")
    before = c.topic_config(topic, "retention.ms")
    v1 = str(3600000 + 1000 * (len(user) + int(time.monotonic()) % 1000))
    with c.conn(user) as conn:
        (r1,) = K.incremental_alter_configs(conn, 0, [(TOPIC, topic, [("retention.ms", K.OP_SET, v1)])])
        if expect:
            assert r1["error"] == expect, r1
            (r2,) = K.alter_configs(conn, 0, [(TOPIC, topic, [("retention.ms", "1234567")])])
            assert r2["error"] == expect, r2
            assert c.topic_config(topic, "retention.ms") == before
            return
        assert r1["error"] == 0, r1
        assert c.topic_config(topic, "retention.ms") == v1
        (r2,) = K.alter_configs(conn, 0, [(TOPIC, topic, [("retention.ms", "1234567")])])
        assert r2["error"] == 0, r2
    assert c.topic_config(topic, "retention.ms") == "1234567"


def _chk_create(c, user, expect, name):
    with c.conn(user) as conn:
        res = S.create_topics(conn, [(name, 2)])
    if expect:
        assert res[name][0] == expect and list(res) == [name], res
        assert c.partitions(name) is None
    else:
        assert res[name][0] == 0 and list(res) == [name], res
        S.wait_until("topic %s visible" % name, lambda: c.partitions(name) == 2)


def chk_createtopics(c, user, expect):
    _chk_create(c, user, expect, "%s-%s" % (t("createtopics"), user))


def chk_createtopics_cluster(c, user, expect):
    _chk_create(c, user, expect, "mx-anywhere-%s" % user)


def chk_deletetopics(c, user, expect):
    topic = t("deletetopics")
    with c.conn(user) as conn:
        res = S.delete_topics(conn, [topic])
    if expect:
        assert res == {topic: expect}, res
        assert c.partitions(topic) == 1
    else:
        assert res == {topic: 0}, res
        S.wait_until("topic %s gone" % topic, lambda: c.partitions(topic) is None)


def chk_deleterecords(c, user, expect):
    topic = t("deleterecords")
    with c.conn(user) as conn:
        res = K.delete_records(conn, 0, {topic: [(0, 3)]})
    with c.admin() as a:
        start = K.log_start_offset(a, topic)
    if expect:
        assert res[(topic, 0)][1] == expect, res
        assert start == 0
    else:
        assert res == {(topic, 0): (3, 0)}, res
        assert start == 3


def chk_createpartitions(c, user, expect):
    topic = t("createpartitions")
    with c.conn(user) as conn:
        res = K.create_partitions(conn, 0, [(topic, 3, None)])
    if expect:
        assert res[topic][0] == expect, res
        assert c.partitions(topic) == 1
    else:
        assert res[topic][0] == 0, res
        S.wait_until("3 partitions of %s" % topic, lambda: c.partitions(topic) == 3)


def chk_describescram(c, user, expect):
    with c.conn(user) as conn:
        r = S.describe_user_scram_credentials(conn, ["scram-target"])
    if expect:
        assert r["error"] == expect and not r["results"], r
    else:
        assert r["error"] == 0, r
        res = r["results"]["scram-target"]
        assert res["error"] == 0 and sorted(res["credentials"]) == [(1, 8192), (2, 8192)], r


def chk_alterscram(c, user, expect):
    new = "scram-new-" + user
    with c.conn(user) as conn:
        res = S.alter_user_scram_credentials(conn, upsertions=[(new, "SCRAM-SHA-256", 4096, pw(new))])
    assert list(res) == [new], res
    creds = S.Creds("SASL_PLAINTEXT", "SCRAM-SHA-256", new, pw(new))
    if expect:
        assert res[new][0] == expect, res
        assert S.raw_login_error(c.sasl, creds).code == S.SASL_AUTHENTICATION_FAILED
        return
    assert res[new][0] == 0, res
    with S.SecureConn(c.sasl, creds) as conn:   # the new credential logs in (SCRAM-SHA-256 only)
        assert K.metadata_v1(conn, None)["topics"] == {}
    e = S.raw_login_error(c.sasl, S.Creds("SASL_PLAINTEXT", "SCRAM-SHA-512", new, pw(new)))
    assert e.code == S.SASL_AUTHENTICATION_FAILED, e


def chk_initproducerid(c, user, expect):
    with c.conn(user) as conn:
        r = I.init_producer_id_v1(conn)
    if expect:
        assert (r["error"], r["producer_id"]) == (expect, -1), r
    else:
        assert r["error"] == 0 and r["producer_id"] >= 0 and r["epoch"] == 0, r


def chk_describeproducers(c, user, expect):
    with c.conn(user) as conn:
        r = I.describe_producers(conn, t("describeproducers"), [0])[0]
    assert r["error"] == (expect or 0) and r["producers"] == [], r


def chk_initproducerid_txn(c, user, expect):
    txn = t("initproducerid-txn")
    with c.admin() as a:
        before = I.init_producer_id_v1(a, txn)
    with c.conn(user) as conn:
        r = I.init_producer_id_v1(conn, txn)
    with c.admin() as a:
        after = I.init_producer_id_v1(a, txn)
    assert before["error"] == 0 and after["error"] == 0, (before, after)
    assert after["producer_id"] == before["producer_id"], (before, after)
    if expect:
        assert (r["error"], r["producer_id"]) == (expect, -1), r
        # Refused: the id's epoch was not bumped, so its producer was not fenced.
        assert after["epoch"] == before["epoch"] + 1, (before, after)
    else:
        assert (r["error"], r["producer_id"], r["epoch"]) == (0, before["producer_id"], before["epoch"] + 1), r
        assert after["epoch"] == before["epoch"] + 2, (before, after)


def chk_findcoordinator_txn(c, user, expect):
    with c.conn(user) as conn:
        (r,) = K.find_coordinator(conn, 4, [t("findcoordinator-txn")], key_type=1)
    if expect:
        assert r["error"] == expect and "sluice:transactional-id:" in r["error_message"], r
    else:
        assert r["error"] == 0 and r["port"] == c.sasl_port, r


def chk_describetransactions(c, user, expect):
    txn = t("describetransactions")
    with c.admin() as a:
        assert I.init_producer_id_v1(a, txn)["error"] == 0
    with c.conn(user) as conn:
        r = I.describe_transactions(conn, [txn])[txn]
    if expect:
        assert r["error"] == expect and r["state"] == "" and r["producer_id"] == -1, r
    else:
        assert r["error"] == 0 and r["state"] == "Empty" and r["producer_id"] >= 0, r


def chk_writetxnmarkers(c, user, expect):
    topic = t("writetxnmarkers")

    def end():
        with c.admin() as a:
            return K.list_offsets(a, topic, {0: K.LATEST_TIMESTAMP})[0]["offset"]

    before = end()
    with c.conn(user) as conn:
        r = I.write_txn_markers(conn, 987654, 0, False, topic, [0])
    if expect:
        assert r == {0: expect} and end() == before, (r, before)
    else:
        assert r == {0: 0} and end() == before + 1, (r, before)


CHECKS = {
    "describetransactions": chk_describetransactions, "writetxnmarkers": chk_writetxnmarkers,
    "initproducerid": chk_initproducerid, "initproducerid-topic": chk_initproducerid,
    "initproducerid-txn": chk_initproducerid_txn, "findcoordinator-txn": chk_findcoordinator_txn,
    "describeproducers": chk_describeproducers,
    "produce": chk_produce, "fetch": chk_fetch, "listoffsets": chk_listoffsets, "metadata": chk_metadata,
    "offsetcommit": chk_offsetcommit, "offsetfetch": chk_offsetfetch, "findcoordinator": chk_findcoordinator,
    "joingroup": chk_joingroup, "describegroups": chk_describegroups, "deletegroups": chk_deletegroups,
    "offsetdelete": chk_offsetdelete, "describeconfigs": chk_describeconfigs,
    "describeconfigs-broker": chk_describeconfigs_broker, "alterconfigs": chk_alterconfigs,
    "createtopics": chk_createtopics, "createtopics-cluster": chk_createtopics_cluster,
    "deletetopics": chk_deletetopics, "deleterecords": chk_deleterecords, "createpartitions": chk_createpartitions,
    "describescram": chk_describescram, "alterscram": chk_alterscram,
}
assert set(CHECKS) == set(ROWS)


@pytest.mark.parametrize("row", list(ROWS))
def test_api_matrix(c, row):
    """Refused users first (they must change nothing), then the allowed one."""
    users = sorted((u for u, (_, _, r) in MATRIX_USERS.items() if r == row), key=lambda u: u.endswith("-ok"))
    failures = []
    for user in users:
        expect = MATRIX_USERS[user][1]
        try:
            CHECKS[row](c, user, expect)
        except Exception as e:  # every user of the row is tried; all failures are reported
            failures.append("%s (expected %s): %s: %s" % (user, expect or "success", type(e).__name__,
                                                            str(e)[:600]))
    assert not failures, "row %s:\n  %s" % (row, "\n  ".join(failures))


# --------------------------------------------------------------------------
# Filtering: Metadata and ListGroups
# --------------------------------------------------------------------------


def test_list_transactions_lists_only_describable_ids(c):
    with c.admin() as a:
        for txn in ("mx-lt-a", "mx-lt-b"):
            assert I.init_producer_id_v1(a, txn)["error"] == 0
        everything = I.list_transactions(a)["txns"]
    assert {"mx-lt-a", "mx-lt-b"} <= set(everything), everything
    with c.conn("lt-one") as conn:
        r = I.list_transactions(conn, version=2, pattern="mx-lt-.*")
        assert r["error"] == 0 and set(r["txns"]) == {"mx-lt-a"}, r
        r = I.list_transactions(conn, version=0, states=["Empty", "Bogus"])
        assert r["unknown_states"] == ["Bogus"] and set(r["txns"]) == {"mx-lt-a"}, r
    with c.conn("md-none") as conn:
        assert I.list_transactions(conn)["txns"] == {}


def metadata_topics(c, user, topics=None):
    with c.conn(user) as conn:
        return K.metadata_v1(conn, topics)["topics"]


def test_metadata_lists_only_describable_topics(c):
    assert sorted(metadata_topics(c, "md-wild")) == ["mx-meta-a", "mx-meta-b", "mx-meta-c", "mx-meta-long"]
    assert sorted(metadata_topics(c, "md-qmark")) == ["mx-meta-a", "mx-meta-b", "mx-meta-c"]
    assert sorted(metadata_topics(c, "md-deny")) == ["mx-meta-a", "mx-meta-c", "mx-meta-long"]
    assert sorted(metadata_topics(c, "md-list")) == ["mx-meta-a", "mx-meta-c"]   # Read implies Describe
    assert metadata_topics(c, "md-none") == {}
    named = metadata_topics(c, "md-deny", ["mx-meta-a", "mx-meta-b"])
    assert {n: x["error"] for n, x in named.items()} == {"mx-meta-a": 0, "mx-meta-b": S.TOPIC_AUTHORIZATION_FAILED}
    # librdkafka's view through the same user.
    md = S.confluent_metadata_topics(c.sasl, S.Creds("SASL_PLAINTEXT", "PLAIN", "md-wild", pw("md-wild")))
    assert sorted(md.topics) == ["mx-meta-a", "mx-meta-b", "mx-meta-c", "mx-meta-long"]
    # The admin sees them all (the matrix's topics too).
    assert {"mx-meta-a", "mx-meta-b", t("fetch")} <= set(metadata_topics_admin(c))


def metadata_topics_admin(c):
    with c.admin() as a:
        return K.metadata_v1(a, None)["topics"]


def test_list_groups_filtered(c):
    def listed(user):
        with c.conn(user) as conn:
            err, groups = K.list_groups(conn, 2)
        assert err == 0, (user, err)
        return set(groups)

    with c.admin() as a:
        err, everything = K.list_groups(a, 2)
    assert err == 0 and {"mg-listgroups-a", "mg-listgroups-b", g("describegroups")} <= set(everything), everything
    assert listed("lg-cluster") == set(everything)
    assert listed("lg-one") == {"mg-listgroups-a"}
    assert listed("lg-none") == set()
    assert listed("lg-deny") == {"mg-listgroups-a", "mg-listgroups-b"}


# --------------------------------------------------------------------------
# Policies change under open connections
# --------------------------------------------------------------------------


def test_policy_changes_apply_to_open_connections(b, c, tmp_path):
    """`policy detach/attach/put` through the online CLI change what an already
    authenticated connection (raw and librdkafka) may do, at once."""
    assert b.http, "the broker printed no 'listening http' line"
    online = S.online_target(b, "admin", ADMIN_PW, tmp_path, b.pki.ca_cert)
    topic = "mx-dyn"
    creds = S.Creds("SASL_PLAINTEXT", "PLAIN", "dyn", pw("dyn"))
    producer = Producer(H.producer_conf(c.sasl, **S.confluent_conf(creds), **{"message.timeout.ms": 15000}))
    with S.SecureConn(c.sasl, creds) as conn:
        r = S.produce_raw(conn, topic, [(b"k0", b"before")])
        assert (r["error"], r["base_offset"]) == (0, 0), r
        d = H.produce_one(producer, topic, b"k1", b"librdkafka-before", partition=0)
        assert (d.err, d.offset) == (None, 1), d

        S.policy_detach(online, "dyn-policy", "dyn")
        r = S.produce_raw(conn, topic, [(b"k2", b"after-detach")])
        assert r["error"] == S.TOPIC_AUTHORIZATION_FAILED, r
        d = H.produce_one(producer, topic, b"k3", b"librdkafka-after-detach", partition=0)
        assert d.err is not None and d.err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, d

        S.policy_attach(online, "dyn-policy", "dyn")
        r = S.produce_raw(conn, topic, [(b"k4", b"reattached")])
        assert (r["error"], r["base_offset"]) == (0, 2), r

        # Replacing the document (now a Deny for this topic) applies at once too.
        S.policy_put(online, "dyn-policy", S.policy_doc(S.allow("KafkaWrite", topic_res("mx-*")),
                                                          S.deny("KafkaWrite", topic_res(topic))))
        r = S.produce_raw(conn, topic, [(b"k5", b"denied")])
        assert r["error"] == S.TOPIC_AUTHORIZATION_FAILED, r
        S.policy_put(online, "dyn-policy", S.policy_doc(S.allow("KafkaWrite", topic_res(topic))))
        r = S.produce_raw(conn, topic, [(b"k6", b"allowed-again")])
        assert (r["error"], r["base_offset"]) == (0, 3), r
    producer.flush(5)
    with c.admin() as a:
        assert S.fetch_pairs(a, topic) == [(0, b"k0", b"before"), (1, b"k1", b"librdkafka-before"),
                                           (2, b"k4", b"reattached"), (3, b"k6", b"allowed-again")]


# --------------------------------------------------------------------------
# Default modes
# --------------------------------------------------------------------------


def produce_check(addr, creds, topic, key):
    with S.SecureConn(addr, creds) as conn:
        return S.produce_raw(conn, topic, [(key, b"value-" + key)])


def test_permissive_default_without_authenticating_listeners(secure_broker_factory):
    """Only PLAINTEXT: permissive. ANONYMOUS does anything no statement denies; a Deny
    attached to ANONYMOUS still denies."""
    b = secure_broker_factory(["127.0.0.1:0"], start=False)
    tgt = S.Target.stopped(b)
    S.grant(tgt, "ANONYMOUS", [S.deny("KafkaWrite", topic_res("denied-*"))])
    b.start()
    anon = S.Creds()
    for name in ("open-1", "denied-1"):
        S.create_topic(b.bootstrap, anon, name, 1)
    r = produce_check(b.bootstrap, anon, "open-1", b"a")
    assert (r["error"], r["base_offset"]) == (0, 0), r
    assert produce_check(b.bootstrap, anon, "denied-1", b"b")["error"] == S.TOPIC_AUTHORIZATION_FAILED
    with S.SecureConn(b.bootstrap) as conn:
        assert S.fetch_pairs(conn, "open-1") == [(0, b"a", b"value-a")]
        assert S.fetch_pairs(conn, "denied-1") == []   # Read is not denied
        assert sorted(K.metadata_v1(conn, None)["topics"]) == ["denied-1", "open-1"]


def test_required_default_with_a_sasl_listener(secure_broker_factory):
    """A SASL listener makes `required` the default: ANONYMOUS and a user without
    policies are denied everything; --authorization permissive turns that around (Deny
    still denies); --authorization required applies to PLAINTEXT-only brokers too."""
    listens = ["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"]
    for mode in (None, "permissive"):
        b = secure_broker_factory(listens, extra_args=[] if mode is None else ["--authorization", mode], start=False)
        tgt = S.Target.stopped(b)
        S.grant(tgt, "admin", [S.allow("*", "sluice:*")], password=ADMIN_PW)
        S.user_add(tgt, "nobody", pw("nobody"))
        S.grant(tgt, "denied", [S.deny("KafkaWrite", topic_res("t-*"))], password=pw("denied"))
        b.start()
        sasl = b.addr("SASL_PLAINTEXT")
        S.create_topic(sasl, S.Creds("SASL_PLAINTEXT", "PLAIN", "admin", ADMIN_PW), "t-1", 1)
        nobody = S.Creds("SASL_PLAINTEXT", "PLAIN", "nobody", pw("nobody"))
        denied = S.Creds("SASL_PLAINTEXT", "PLAIN", "denied", pw("denied"))
        want = S.TOPIC_AUTHORIZATION_FAILED if mode is None else 0
        for addr, creds, key in [(b.bootstrap, S.Creds(), b"anon"), (sasl, nobody, b"nobody")]:
            assert produce_check(addr, creds, "t-1", key)["error"] == want, (mode, creds)
            with S.SecureConn(addr, creds) as conn:
                topics = K.metadata_v1(conn, None)["topics"]
                if mode is None:
                    assert topics == {}, (mode, creds, topics)
                else:
                    assert "t-1" in topics, (mode, creds, topics)
                res = S.create_topics(conn, [("t-by-%s" % key.decode(), 1)])
                assert res["t-by-%s" % key.decode()][0] == want, (mode, creds, res)
        assert produce_check(sasl, denied, "t-1", b"denied")["error"] == S.TOPIC_AUTHORIZATION_FAILED, mode
        b.stop()

    b = secure_broker_factory(["127.0.0.1:0"], extra_args=["--authorization", "required"])
    with S.SecureConn(b.bootstrap) as conn:   # ANONYMOUS has no policy here
        assert S.create_topics(conn, [("t-1", 1)])["t-1"][0] == S.TOPIC_AUTHORIZATION_FAILED
        assert K.metadata_v1(conn, None)["topics"] == {}


def test_required_default_with_required_client_certificates(secure_broker_factory, tmp_path):
    """SSL with --tls-client-auth required makes `required` the default: the CN with a
    policy may create and write, another CN may not."""
    pki = S.Pki(tmp_path / "pki")
    srv, carol, dave = pki.server(), pki.client("carol"), pki.client("dave")
    b = secure_broker_factory(["127.0.0.1:0", "SSL://127.0.0.1:0"], extra_args=S.tls_flags(pki, srv, "required"),
                              start=False)
    S.grant(S.Target.stopped(b), "carol", [S.allow(["KafkaCreate", "KafkaWrite"], topic_res("c-*"))])
    b.start()
    ssl_addr = b.addr("SSL")
    as_carol = S.Creds("SSL", ca=pki.ca_cert, client=carol)
    as_dave = S.Creds("SSL", ca=pki.ca_cert, client=dave)
    with S.SecureConn(ssl_addr, as_dave) as conn:
        assert S.create_topics(conn, [("c-dave", 1)])["c-dave"][0] == S.TOPIC_AUTHORIZATION_FAILED
    with S.SecureConn(b.bootstrap) as conn:
        assert S.create_topics(conn, [("c-anon", 1)])["c-anon"][0] == S.TOPIC_AUTHORIZATION_FAILED
    with S.SecureConn(ssl_addr, as_carol) as conn:
        assert S.create_topics(conn, [("c-1", 1)])["c-1"][0] == 0
    S.wait_until("c-1 writable by carol",
                 lambda: produce_check(ssl_addr, as_carol, "c-1", b"x")["error"] == 0, timeout=15)
    assert produce_check(ssl_addr, as_dave, "c-1", b"y")["error"] == S.TOPIC_AUTHORIZATION_FAILED
