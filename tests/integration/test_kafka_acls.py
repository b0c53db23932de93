"""Kafka's ACL APIs as a view of identity policies, driven by Kafka's own `kafka-acls`
(4.3.1 jars, the main class scripts/kafka-tool runs; the suite's forty-odd runs share one
JVM, jvm_helpers.run_tool) against a SASL broker with `--authorization required`: what
it adds appears in `sluice policy get`/`list` and in SQL (system.acls,
system.policies), is enforced for a real client (librdkafka), survives a
restart, and is removed again; user-written policies are listed as ACLs but not
removed; bindings that policies cannot express are refused with the reason. The Java
AdminClient's createAcls/describeAcls/deleteAcls too (tests/jvm .../acls/AdminAcls.java).
"""

import json
import re

import psycopg2
import pytest

import jvm_helpers as J
import kproto as K
import security_helpers as S

ADMIN_PW = "admin-pw-acls"
ORDERS = "acl-orders"
PAIRS = [(b"k%d" % i, b"order-%d" % i) for i in range(5)]
USERS = ("alice", "bob", "viewer", "ops")


def pw(user):
    return "pw-acls-" + user


@pytest.fixture(scope="module")
def env(module_secure_broker_factory, tmp_path_factory):
    work = tmp_path_factory.mktemp("kafka-acls")
    pki = S.Pki(work / "pki")
    b = module_secure_broker_factory(
        ["SASL_PLAINTEXT://127.0.0.1:0"],
        extra_args=S.tls_flags(pki, pki.server()) + ["--pg", "127.0.0.1:0", "--http", "https://127.0.0.1:0"],
        start=False)
    t = S.Target.offline(b.data_dir, workdir=work / "policies", init=True)
    S.grant(t, "admin", [S.allow("*", "sluice:*")], password=ADMIN_PW)
    for user in ("alice", "bob"):
        S.user_add(t, user, pw(user))
    S.grant(t, "viewer", [S.allow("KafkaDescribe", "sluice:cluster")], password=pw("viewer"))
    # A user-written policy: one statement ACLs can express, one they cannot.
    S.grant(t, "ops", [S.allow(["KafkaRead", "KafkaDescribe"], "sluice:topic:reports-*"),
                       S.allow("KafkaRead", "sluice:topic:*-audit")], password=pw("ops"), policy="ops-policy")
    b.start()
    b.work = work
    b.pki = pki
    take_addresses(b)
    b.props = {}
    for user in ("admin",) + USERS:
        path = work / ("%s.properties" % user)
        path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                        "username=\"%s\" password=\"%s\";\n" % (user, ADMIN_PW if user == "admin" else pw(user)))
        b.props[user] = path
    admin = S.Creds("SASL_PLAINTEXT", "PLAIN", "admin", ADMIN_PW)
    S.create_topic(b.kafka, admin, ORDERS, 1)
    with S.SecureConn(b.kafka, admin) as conn:
        r = S.produce_raw(conn, ORDERS, PAIRS)
        assert (r["error"], r["base_offset"]) == (0, 0), r
    return b


def take_addresses(b):
    """The listeners' ports, which a restart changes (port 0)."""
    b.kafka = b.addr("SASL_PLAINTEXT")
    b.admin = S.online_target(b, "admin", ADMIN_PW, b.work / "online", b.pki.ca_cert)


def acls(env, *args, user="admin", check=True):
    """kafka-acls as `user`: (exit code, stdout + stderr)."""
    proc = J.run_tool("kafka-acls", "--bootstrap-server", env.kafka, "--command-config", env.props[user], *args,
                      timeout=180)
    text = proc.stdout + proc.stderr
    if check:
        assert proc.returncode == 0 and "Error while executing" not in text, \
            "kafka-acls %s exited %d:\n%s" % (" ".join(map(str, args)), proc.returncode, text[-3000:])
    return proc.returncode, text


RESOURCE = re.compile(r"(?:Current ACLs|Adding ACLs) for resource `ResourcePattern\(resourceType=(\w+), "
                      r"name=(.*), patternType=(\w+)\)`:")
ENTRY = re.compile(r"^\s*\(principal=(.*), host=(.*), operation=(\w+), permissionType=(\w+)\)$")


def listing(text):
    """kafka-acls' printed blocks: {(type, name, pattern): {(principal, host, op, perm)}}."""
    out, current = {}, None
    for line in text.splitlines():
        m = RESOURCE.search(line)
        if m:
            current = out.setdefault(m.groups(), set())
            continue
        m = ENTRY.match(line)
        if m:
            assert current is not None, "an ACL line outside a resource block: %r\n%s" % (line, text)
            current.add(m.groups())
    return out


def allow(principal, op):
    return (principal, "*", op, "ALLOW")


def deny(principal, op):
    return (principal, "*", op, "DENY")


def statements(env, policy):
    doc = S.policy_get(env.admin, policy)
    return sorted((s["Effect"], json.dumps(s["Action"]), json.dumps(s["Resource"])) for s in doc["Statement"])


def sql_rows(env, user, sql):
    host, port = env.pg.rsplit(":", 1)
    conn = psycopg2.connect(host=host, port=int(port), user=user, password=ADMIN_PW if user == "admin" else pw(user),
                            dbname="sluice", sslmode="disable", connect_timeout=10)
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(sql)
            return [tuple(r) for r in cur.fetchall()]
    finally:
        conn.close()


def reads(env, user):
    """What `user` reads of ORDERS: the records a librdkafka consumer gets when a raw Fetch
    is allowed, or the raw Fetch's authorization error (librdkafka then just gets nothing)."""
    creds = S.Creds("SASL_PLAINTEXT", "PLAIN", user, pw(user))
    with S.SecureConn(env.kafka, creds) as conn:
        error = K.fetch_v4(conn, ORDERS, 0, 0)["error"]
    if error == S.TOPIC_AUTHORIZATION_FAILED:
        return "TOPIC_AUTHORIZATION_FAILED"
    assert error == 0, error
    return [(k, v) for _, k, v in S.consume_from(env.kafka, creds, ORDERS, len(PAIRS), timeout=30)]


def test_added_acls_are_policy_statements_listed_everywhere_and_survive_a_restart(env):
    _, out = acls(env, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe",
                  "--topic", ORDERS)
    assert listing(out) == {("TOPIC", ORDERS, "LITERAL"): {allow("User:alice", "READ"),
                                                           allow("User:alice", "DESCRIBE")}}, out
    acls(env, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", "acl-app-",
         "--resource-pattern-type", "prefixed")
    acls(env, "--add", "--deny-principal", "User:alice", "--operation", "Write", "--topic", ORDERS)
    acls(env, "--add", "--allow-principal", "User:alice", "--operation", "All", "--cluster")
    # Adding a binding that exists already changes nothing (as Kafka).
    acls(env, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", ORDERS)

    want = {
        ("TOPIC", ORDERS, "LITERAL"): {allow("User:alice", "READ"), allow("User:alice", "DESCRIBE"),
                                       deny("User:alice", "WRITE")},
        ("GROUP", "acl-app-", "PREFIXED"): {allow("User:alice", "READ")},
        ("CLUSTER", "kafka-cluster", "LITERAL"): {allow("User:alice", "ALL")},
    }
    _, out = acls(env, "--list", "--principal", "User:alice")
    assert listing(out) == want, out
    _, out = acls(env, "--list", "--topic", ORDERS)
    assert listing(out) == {("TOPIC", ORDERS, "LITERAL"): want[("TOPIC", ORDERS, "LITERAL")]}, out

    policy = "kafka-acl:User:alice"
    assert statements(env, policy) == sorted([
        ("Allow", '"KafkaRead"', '"sluice:topic:%s"' % ORDERS),
        ("Allow", '"KafkaDescribe"', '"sluice:topic:%s"' % ORDERS),
        ("Allow", '"KafkaRead"', '"sluice:group:acl-app-*"'),
        ("Deny", '"KafkaWrite"', '"sluice:topic:%s"' % ORDERS),
        ("Allow", '"Kafka*"', '"sluice:cluster"'),
    ])
    listed = {p["name"]: p["users"] for p in S.policy_list(env.admin)["policies"]}
    assert listed[policy] == ["alice"], listed

    assert sorted(sql_rows(env, "admin", "SELECT resource_type, resource_name, pattern_type, operation, "
                           "permission_type, policy FROM system.acls WHERE principal = 'User:alice'")) == sorted([
        ("TOPIC", ORDERS, "LITERAL", "READ", "ALLOW", policy),
        ("TOPIC", ORDERS, "LITERAL", "DESCRIBE", "ALLOW", policy),
        ("TOPIC", ORDERS, "LITERAL", "WRITE", "DENY", policy),
        ("GROUP", "acl-app-", "PREFIXED", "READ", "ALLOW", policy),
        ("CLUSTER", "kafka-cluster", "LITERAL", "ALL", "ALLOW", policy),
    ])
    assert sql_rows(env, "admin", "SELECT users FROM system.policies WHERE name = '%s'" % policy) == [('["alice"]',)]
    # Listed to those who may describe the cluster only, as DescribeAcls.
    assert sql_rows(env, "bob", "SELECT count(*) FROM system.acls") == [(0,)]

    env.restart()
    take_addresses(env)
    _, out = acls(env, "--list", "--principal", "User:alice")
    assert listing(out) == want, out

    _, out = acls(env, "--remove", "--force", "--allow-principal", "User:alice", "--operation", "All", "--cluster")
    _, out = acls(env, "--remove", "--force", "--deny-principal", "User:alice", "--operation", "Write",
                  "--topic", ORDERS)
    del want[("CLUSTER", "kafka-cluster", "LITERAL")]
    want[("TOPIC", ORDERS, "LITERAL")].discard(deny("User:alice", "WRITE"))
    _, out = acls(env, "--list", "--principal", "User:alice")
    assert listing(out) == want, out
    assert len(statements(env, policy)) == 3
    # Removing the last binding deletes the managed policy.
    acls(env, "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read", "--operation",
         "Describe", "--topic", ORDERS)
    acls(env, "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read", "--group",
         "acl-app-", "--resource-pattern-type", "prefixed")
    _, out = acls(env, "--list", "--principal", "User:alice")
    assert listing(out) == {}, out
    assert policy not in S.policy_names(S.policy_list(env.admin))


def test_acls_are_enforced_for_a_real_client(env):
    # The consumer's group (sluice_helpers' "sluice-it-..." ids), as a Kafka consumer needs.
    acls(env, "--add", "--allow-principal", "User:bob", "--operation", "Read", "--group", "sluice-it-",
         "--resource-pattern-type", "prefixed")
    assert reads(env, "bob") == "TOPIC_AUTHORIZATION_FAILED"
    acls(env, "--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", ORDERS)
    assert reads(env, "bob") == PAIRS
    # A Deny wins, here on a prefix.
    acls(env, "--add", "--deny-principal", "User:bob", "--operation", "Read", "--topic", "acl-",
         "--resource-pattern-type", "prefixed")
    assert reads(env, "bob") == "TOPIC_AUTHORIZATION_FAILED"
    acls(env, "--remove", "--force", "--deny-principal", "User:bob", "--operation", "Read", "--topic", "acl-",
         "--resource-pattern-type", "prefixed")
    assert reads(env, "bob") == PAIRS
    acls(env, "--remove", "--force", "--allow-principal", "User:bob", "--operation", "Read", "--topic", ORDERS)
    assert reads(env, "bob") == "TOPIC_AUTHORIZATION_FAILED"


def test_user_written_policies_are_listed_but_not_removed(env):
    _, out = acls(env, "--list", "--principal", "User:ops")
    # "sluice:topic:*-audit" has no ACL form and is not listed.
    assert listing(out) == {("TOPIC", "reports-", "PREFIXED"): {allow("User:ops", "READ"),
                                                                allow("User:ops", "DESCRIBE")}}, out
    # MATCH: every binding that applies to the topic, the admin's "*" included.
    _, out = acls(env, "--list", "--topic", "reports-2026", "--resource-pattern-type", "match")
    assert listing(out) == {("TOPIC", "reports-", "PREFIXED"): {allow("User:ops", "READ"),
                                                                allow("User:ops", "DESCRIBE")},
                            ("TOPIC", "*", "LITERAL"): {allow("User:admin", "ALL")}}, out
    # The admin's "*" on "sluice:*" reads as ALL on every topic, group and transactional id
    # and the cluster.
    _, out = acls(env, "--list", "--principal", "User:admin")
    assert listing(out) == {("TOPIC", "*", "LITERAL"): {allow("User:admin", "ALL")},
                            ("GROUP", "*", "LITERAL"): {allow("User:admin", "ALL")},
                            ("TRANSACTIONAL_ID", "*", "LITERAL"): {allow("User:admin", "ALL")},
                            ("CLUSTER", "kafka-cluster", "LITERAL"): {allow("User:admin", "ALL")}}, out
    before = S.policy_get(env.admin, "ops-policy")
    rc, out = acls(env, "--remove", "--force", "--allow-principal", "User:ops", "--operation", "Read",
                   "--topic", "reports-", "--resource-pattern-type", "prefixed", check=False)
    assert "InvalidRequestException: the binding comes from policy 'ops-policy', which the ACL APIs do not " \
           "manage for User:ops: change it with `sluice policy put`, or detach it" in out, out
    assert S.policy_get(env.admin, "ops-policy") == before


def test_the_wildcard_principal_is_a_policy_every_user_has(env):
    """Kafka's User:* (any user): the managed policy kafka-acl:User:*, attached to `*`."""
    assert reads(env, "bob") == "TOPIC_AUTHORIZATION_FAILED"
    acls(env, "--add", "--allow-principal", "User:*", "--operation", "Read", "--topic", ORDERS)
    acls(env, "--add", "--allow-principal", "User:*", "--operation", "Read", "--group", "sluice-it-",
         "--resource-pattern-type", "prefixed")
    _, out = acls(env, "--list", "--principal", "User:*")
    assert listing(out) == {("TOPIC", ORDERS, "LITERAL"): {allow("User:*", "READ")},
                            ("GROUP", "sluice-it-", "PREFIXED"): {allow("User:*", "READ")}}, out
    policy = "kafka-acl:User:*"
    assert statements(env, policy) == sorted([("Allow", '"KafkaRead"', '"sluice:topic:%s"' % ORDERS),
                                              ("Allow", '"KafkaRead"', '"sluice:group:sluice-it-*"')])
    assert {p["name"]: p["users"] for p in S.policy_list(env.admin)["policies"]}[policy] == ["*"]
    # Every user reads now, through librdkafka, with no binding of their own.
    assert reads(env, "bob") == PAIRS and reads(env, "alice") == PAIRS
    # A Deny for everyone wins over the Allow for everyone.
    acls(env, "--add", "--deny-principal", "User:*", "--operation", "Read", "--topic", ORDERS)
    assert reads(env, "bob") == "TOPIC_AUTHORIZATION_FAILED"
    acls(env, "--remove", "--force", "--deny-principal", "User:*", "--operation", "Read", "--topic", ORDERS)
    assert reads(env, "bob") == PAIRS
    acls(env, "--remove", "--force", "--allow-principal", "User:*", "--operation", "Read", "--topic", ORDERS)
    assert reads(env, "bob") == "TOPIC_AUTHORIZATION_FAILED"
    acls(env, "--remove", "--force", "--allow-principal", "User:*", "--operation", "Read", "--group", "sluice-it-",
         "--resource-pattern-type", "prefixed")
    _, out = acls(env, "--list", "--principal", "User:*")
    assert listing(out) == {}, out
    assert policy not in S.policy_names(S.policy_list(env.admin))


@pytest.mark.parametrize("args, message", [
    (["--allow-principal", "User:alice", "--allow-host", "10.0.0.1", "--operation", "Read", "--topic", "t"],
     "host '10.0.0.1' cannot be expressed: Sluice policies do not restrict hosts, so an ACL's host must be '*'"),
    (["--allow-principal", "User:alice", "--operation", "Describe", "--delegation-token", "tok"],
     "ACLs on DELEGATION_TOKEN resources cannot be expressed as Sluice policies"),
    (["--allow-principal", "Group:ops", "--operation", "Read", "--topic", "t"],
     "principal 'Group:ops' cannot be expressed: Sluice policies attach to users, written User:NAME"),
    (["--allow-principal", "User:alice", "--operation", "Read", "--topic", "ord*rs"],
     "the resource name 'ord*rs' contains '*' or '?', which Sluice policies read as wildcards"),
    (["--allow-principal", "User:alice", "--operation", "Read", "--group", "g?", "--resource-pattern-type",
      "prefixed"],
     "the resource name 'g?' contains '*' or '?', which Sluice policies read as wildcards"),
], ids=["host", "delegation-token", "group-principal", "literal-star",
        "prefixed-question-mark"])
def test_what_policies_cannot_express_is_refused_naming_why(env, args, message):
    rc, out = acls(env, "--add", *args, check=False)
    assert rc != 0 and "InvalidRequestException: " + message in out, out
    # Nothing was stored: no binding for the principal, no managed policy.
    assert sql_rows(env, "admin", "SELECT count(*) FROM system.acls WHERE principal = '%s'" % args[1]) == [(0,)]
    assert not [n for n in S.policy_names(S.policy_list(env.admin)) if n.startswith("kafka-acl:" + args[1])]


def test_describe_needs_describe_and_changes_need_alter_on_the_cluster(env):
    rc, out = acls(env, "--list", user="bob", check=False)
    assert rc != 0 and "ClusterAuthorizationException: KafkaDescribe on sluice:cluster is needed to describe " \
                       "ACLs" in out, out
    _, out = acls(env, "--list", "--principal", "User:ops", user="viewer")
    assert ("TOPIC", "reports-", "PREFIXED") in listing(out), out
    rc, out = acls(env, "--add", "--allow-principal", "User:viewer", "--operation", "Alter", "--cluster",
                   user="viewer", check=False)
    assert rc != 0 and "ClusterAuthorizationException: KafkaAlter on sluice:cluster is needed to create ACLs" \
        in out, out
    rc, out = acls(env, "--remove", "--force", "--allow-principal", "User:ops", "--operation", "Read", "--topic",
                   "reports-",
                   "--resource-pattern-type", "prefixed", user="viewer", check=False)
    assert rc != 0 and "ClusterAuthorizationException: KafkaAlter on sluice:cluster is needed to delete ACLs" \
        in out, out
    _, out = acls(env, "--list", "--principal", "User:viewer")
    assert listing(out) == {("CLUSTER", "kafka-cluster", "LITERAL"): {allow("User:viewer", "DESCRIBE")}}, out


def test_java_admin_client_create_describe_delete(env):
    """AdminClient.createAcls/describeAcls/deleteAcls (tests/jvm .../acls/AdminAcls.java)
    for a principal that is no Sluice user (a certificate's name, say)."""
    who, topic = "User:java-carol", "java-acl"
    proc = J.run_java("dev.sluice.jvmtests.acls.AdminAcls", env.kafka, "admin", ADMIN_PW, who, topic, timeout=180)
    lines = proc.stdout.splitlines()
    read = "TOPIC LITERAL %s %s * READ ALLOW" % (topic, who)
    write = "TOPIC PREFIXED %s- %s * WRITE ALLOW" % (topic, who)
    assert sorted(ln for ln in lines if ln.startswith("create ")) == sorted([
        "create %s ok" % read, "create %s ok" % write,
        "create TOPIC LITERAL %s %s 10.0.0.1 READ ALLOW InvalidRequestException: host '10.0.0.1' cannot be "
        "expressed: Sluice policies do not restrict hosts, so an ACL's host must be '*'" % (topic, who)]), proc.stdout
    assert [ln for ln in lines if ln.startswith("describe ")] == sorted(["describe " + read, "describe " + write])
    assert [ln for ln in lines if ln.startswith("delete ")] == ["delete %s ok" % read], proc.stdout
    assert [ln for ln in lines if ln.startswith("describe-after ")] == ["describe-after " + write], proc.stdout
    listed = {p["name"]: p["users"] for p in S.policy_list(env.admin)["policies"]}
    assert listed["kafka-acl:" + who] == ["java-carol"], listed
    assert statements(env, "kafka-acl:" + who) == [("Allow", '"KafkaWrite"', '"sluice:topic:%s-*"' % topic)]
