"""One SCRAM credential per mechanism (issue 21, item 6): setting a user's SCRAM-SHA-512
password leaves the SCRAM-SHA-256 one as it was, through `sluice user passwd
--mechanism` and through AlterUserScramCredentials, as Kafka keeps them. Each login
uses its mechanism's credential: librdkafka (confluent-kafka) over SASL, PLAIN with
either password, and the PostgreSQL listener's SCRAM-SHA-256 (psycopg2), whose log says
which mechanisms a user has when it lacks SCRAM-SHA-256 rather than "unknown user".
"""

import time

import psycopg2
import pytest
from confluent_kafka.admin import AdminClient

import security_helpers as S
import sluice_helpers as H

ADMIN_PW = "admin-scram-pw"
BOTH_PW = "alice-both"      # alice's first password, both mechanisms
NEW_512 = "alice-512-new"   # then set for SCRAM-SHA-512 only
NEW_256 = "alice-256-alter"  # then set for SCRAM-SHA-256 by AlterUserScramCredentials
SHA256, SHA512 = 1, 2


@pytest.fixture(scope="module")
def b(module_secure_broker_factory):
    broker = module_secure_broker_factory(["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"],
                                          extra_args=["--pg", "127.0.0.1:0"], start=False)
    tgt = S.Target.stopped(broker)
    S.grant(tgt, "admin", [S.allow("*", "sluice:*")], password=ADMIN_PW)
    S.user_add(tgt, "alice", BOTH_PW)
    S.grant(tgt, "alice", [S.allow("KafkaDescribe", "sluice:*")])
    tgt.ok(["user", "passwd", "alice", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192"],
           stdin=NEW_512 + "\n")
    S.user_add(tgt, "bob", "bob-pw", mechanism="SCRAM-SHA-512")
    broker.users_doc = S.user_list_doc(tgt)
    broker.start()
    return broker


def login_ok(b, mechanism, user, password):
    try:
        with S.SecureConn(b.addr("SASL_PLAINTEXT"), S.Creds("SASL_PLAINTEXT", mechanism, user, password)):
            return True
    except S.SaslError as e:
        assert e.code == S.SASL_AUTHENTICATION_FAILED, e
        return False


def librdkafka_lists_topics(b, mechanism, user, password):
    conf = dict(H.BASE_CONF, **{"bootstrap.servers": b.addr("SASL_PLAINTEXT")},
                **S.confluent_conf(S.Creds("SASL_PLAINTEXT", mechanism, user, password)))
    try:
        AdminClient(conf).list_topics(timeout=5)
        return True
    except Exception:  # librdkafka reports the failed login as a timeout of the call
        return False


def test_passwd_of_one_mechanism_keeps_the_other(b):
    # user list --json: both mechanisms, each with its own iterations.
    (alice,) = [u for u in b.users_doc["users"] if u["name"] == "alice"]
    assert alice["mechanisms"] == ["SCRAM-SHA-256", "SCRAM-SHA-512"], alice
    assert alice["credentials"] == [{"mechanism": "SCRAM-SHA-256", "iterations": 4096},
                                    {"mechanism": "SCRAM-SHA-512", "iterations": 8192}], alice

    assert login_ok(b, "SCRAM-SHA-256", "alice", BOTH_PW)
    assert login_ok(b, "SCRAM-SHA-512", "alice", NEW_512)
    assert not login_ok(b, "SCRAM-SHA-512", "alice", BOTH_PW)
    assert not login_ok(b, "SCRAM-SHA-256", "alice", NEW_512)
    # librdkafka, as a user would.
    assert librdkafka_lists_topics(b, "SCRAM-SHA-256", "alice", BOTH_PW)
    assert librdkafka_lists_topics(b, "SCRAM-SHA-512", "alice", NEW_512)
    assert not librdkafka_lists_topics(b, "SCRAM-SHA-512", "alice", BOTH_PW)

    # DescribeUserScramCredentials lists each mechanism with its iterations.
    with S.SecureConn(b.addr("SASL_PLAINTEXT"), S.Creds("SASL_PLAINTEXT", "PLAIN", "admin", ADMIN_PW)) as c:
        d = S.describe_user_scram_credentials(c, ["alice"])
    assert d["results"]["alice"]["error"] == 0, d
    assert sorted(d["results"]["alice"]["credentials"]) == [(SHA256, 4096), (SHA512, 8192)], d


def test_alter_user_scram_credentials_sets_one_mechanism(b):
    with S.SecureConn(b.addr("SASL_PLAINTEXT"), S.Creds("SASL_PLAINTEXT", "PLAIN", "admin", ADMIN_PW)) as c:
        assert S.alter_user_scram_credentials(c, upsertions=[("carl", "SCRAM-SHA-256", 4096, "carl-256"),
                                                              ("carl", "SCRAM-SHA-512", 4096, "carl-512")]) == {
            "carl": (0, None)}
        assert S.alter_user_scram_credentials(c, upsertions=[("carl", "SCRAM-SHA-256", 6000, "carl-256-b")]) == {
            "carl": (0, None)}
        d = S.describe_user_scram_credentials(c, ["carl"])
    assert sorted(d["results"]["carl"]["credentials"]) == [(SHA256, 6000), (SHA512, 4096)], d
    assert login_ok(b, "SCRAM-SHA-256", "carl", "carl-256-b")
    assert login_ok(b, "SCRAM-SHA-512", "carl", "carl-512")
    assert not login_ok(b, "SCRAM-SHA-256", "carl", "carl-256")
    # PLAIN checks the password against the user's credentials: either mechanism's works.
    assert login_ok(b, "PLAIN", "carl", "carl-256-b")
    assert login_ok(b, "PLAIN", "carl", "carl-512")
    assert not login_ok(b, "PLAIN", "carl", "carl-256")


def pg_login(b, user, password):
    host, port = b.pg.rsplit(":", 1)
    try:
        psycopg2.connect(host=host, port=int(port), user=user, password=password, dbname="sluice",
                         sslmode="disable", connect_timeout=10).close()
        return None
    except psycopg2.OperationalError as e:
        return str(e)


def wait_for_log(b, needle, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = open(b.stderr_paths[-1], encoding="utf-8", errors="replace").read()
        if needle in text:
            return text
        time.sleep(0.1)
    raise AssertionError("log line %r not written; stderr tail:\n%s" % (needle, b.stderr_tail()))


def test_pg_scram_uses_the_sha256_credential_and_says_what_is_missing(b):
    assert pg_login(b, "alice", BOTH_PW) is None
    failed = pg_login(b, "alice", NEW_512)
    assert failed and "password authentication failed" in failed, failed
    # bob has only SCRAM-SHA-512: the client sees the usual failure, the log says why.
    failed = pg_login(b, "bob", "bob-pw")
    assert failed and "password authentication failed" in failed, failed
    text = wait_for_log(b, "user 'bob' has no SCRAM-SHA-256 credential (it has SCRAM-SHA-512)")
    assert "unknown user 'bob'" not in text
    failed = pg_login(b, "nobody", "x")
    assert failed and "password authentication failed" in failed, failed
    wait_for_log(b, "unknown user 'nobody' for SCRAM-SHA-256")
    b.assert_alive()
