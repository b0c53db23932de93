"""Transactional ids as an authorization resource (docs/transactions.md, "Security"),
against a SASL broker with `--authorization required`: a user with Write on the topic but
no right on its transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED from
librdkafka's init_transactions() (and from raw FindCoordinator and InitProducerId, so it
cannot fence another principal's producer); once a policy, or Kafka's `kafka-acls
--transactional-id`, grants Write on the id, it commits a transaction that a
read_committed consumer reads. A right revoked mid-transaction fails its commit.
"""

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

import idempotence_helpers as I
import jvm_helpers as J
import kproto as K
import security_helpers as S
import sluice_helpers as H

ADMIN_PW = "admin-pw-txnauthz"
TOPIC = "txn-authz"


def pw(user):
    return "pw-txnauthz-" + user


def creds(user):
    return S.Creds("SASL_PLAINTEXT", "PLAIN", user, ADMIN_PW if user == "admin" else pw(user))


@pytest.fixture(scope="module")
def env(module_secure_broker_factory, tmp_path_factory):
    work = tmp_path_factory.mktemp("txn-authz")
    pki = S.Pki(work / "pki")
    b = module_secure_broker_factory(
        ["SASL_PLAINTEXT://127.0.0.1:0"],
        extra_args=S.tls_flags(pki, pki.server()) + ["--http", "https://127.0.0.1:0"], start=False)
    t = S.Target.offline(b.data_dir, workdir=work / "policies", init=True)
    S.grant(t, "admin", [S.allow("*", "sluice:*")], password=ADMIN_PW)
    # Each writer may write the topic (and so make idempotent producers), nothing more.
    for user in ("writer", "other", "acl-writer"):
        S.grant(t, user, [S.allow("KafkaWrite", "sluice:topic:" + TOPIC)], password=pw(user))
    b.start()
    b.kafka = b.addr("SASL_PLAINTEXT")
    b.admin = S.online_target(b, "admin", ADMIN_PW, work / "online", pki.ca_cert)
    b.work = work
    S.create_topic(b.kafka, creds("admin"), TOPIC, 1)
    return b


def producer(env, user, txn_id):
    return Producer(dict(H.BASE_CONF, **S.confluent_conf(creds(user)), **{
        "bootstrap.servers": env.kafka, "transactional.id": txn_id, "transaction.timeout.ms": 30000}))


def init_error(env, user, txn_id):
    """The error code of init_transactions() for `user` and `txn_id`, None when it works."""
    p = producer(env, user, txn_id)
    try:
        p.init_transactions(30)
        return None
    except KafkaException as e:
        assert e.args[0].fatal(), e  # as librdkafka treats it: the producer is done
        return e.args[0].code()


def commit_three(env, user, txn_id, tag):
    p = producer(env, user, txn_id)
    p.init_transactions(30)
    p.begin_transaction()
    values = ["%s-%d" % (tag, i) for i in range(3)]
    for v in values:
        p.produce(TOPIC, value=v.encode())
    p.commit_transaction(30)
    return values


def read_committed(env, prefix, n, topic=TOPIC):
    """The values starting with `prefix` that a read_committed consumer reads, once it has
    read `n` of them (or after 15 s)."""
    c = Consumer(dict(H.BASE_CONF, **S.confluent_conf(creds("admin")), **{
        "bootstrap.servers": env.kafka, "group.id": "txn-authz-" + uuid.uuid4().hex[:8],
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "isolation.level": "read_committed"}))
    got = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(got) < n:
            got += [m.value().decode() for m in c.consume(100, 0.5)
                    if not m.error() and m.value().decode().startswith(prefix)]
        return got
    finally:
        c.close()


def raw_refusals(env, user, txn_id):
    """(FindCoordinator key type 1 v4, InitProducerId v1) error codes for `txn_id`."""
    with S.SecureConn(env.kafka, creds(user)) as conn:
        fc = K.find_coordinator(conn, 4, [txn_id], key_type=1)[0]
        ipid = I.init_producer_id_v1(conn, txn_id)
    return fc["error"], ipid["error"]


def test_init_transactions_needs_write_on_the_transactional_id(env):
    assert init_error(env, "writer", "tx-writer") == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert raw_refusals(env, "writer", "tx-writer") == (I.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,) * 2

    S.policy_put(env.admin, "writer-txn", S.policy_doc(S.allow("KafkaWrite", "sluice:transactional-id:tx-writer")))
    S.policy_attach(env.admin, "writer-txn", "writer")
    committed = commit_three(env, "writer", "tx-writer", "policy")
    assert read_committed(env, "policy-", 3) == committed

    # A user who may write the topic still cannot take the id, so cannot fence the owner:
    # the owner's next transaction commits.
    assert raw_refusals(env, "other", "tx-writer") == (I.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,) * 2
    assert init_error(env, "other", "tx-writer") == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    again = commit_three(env, "writer", "tx-writer", "again")
    assert read_committed(env, "again-", 3) == again

    # The id's right is its own: revoked, the owner is refused again.
    S.policy_detach(env.admin, "writer-txn", "writer")
    assert init_error(env, "writer", "tx-writer") == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def kafka_acls(env, *args):
    props = env.work / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                     "username=\"admin\" password=\"%s\";\n" % ADMIN_PW)
    proc = J.run_tool("kafka-acls", "--bootstrap-server", env.kafka, "--command-config", props, *args)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Error while executing" not in text, text[-3000:]
    return text


def test_kafka_acls_transactional_id_grants_write(env):
    assert init_error(env, "acl-writer", "acl-tx-1") == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    out = kafka_acls(env, "--add", "--allow-principal", "User:acl-writer", "--operation", "Write",
                     "--transactional-id", "acl-tx-", "--resource-pattern-type", "prefixed")
    assert "resourceType=TRANSACTIONAL_ID, name=acl-tx-, patternType=PREFIXED" in out, out
    doc = S.policy_get(env.admin, "kafka-acl:User:acl-writer")
    assert doc["Statement"] == [{"Effect": "Allow", "Action": "KafkaWrite",
                                 "Resource": "sluice:transactional-id:acl-tx-*"}], doc
    out = kafka_acls(env, "--list", "--transactional-id", "acl-tx-", "--resource-pattern-type", "prefixed")
    assert "(principal=User:acl-writer, host=*, operation=WRITE, permissionType=ALLOW)" in out, out

    committed = commit_three(env, "acl-writer", "acl-tx-1", "acl")
    assert read_committed(env, "acl-", 3) == committed
    # The prefix covers acl-tx-*, not another id.
    assert init_error(env, "acl-writer", "tx-writer") == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    kafka_acls(env, "--remove", "--force", "--allow-principal", "User:acl-writer", "--operation", "Write",
               "--transactional-id", "acl-tx-", "--resource-pattern-type", "prefixed")
    assert init_error(env, "acl-writer", "acl-tx-1") == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_a_right_revoked_mid_transaction_stops_it(env):
    # Its own topic: the transaction stays open until it times out, holding the LSO back.
    topic = TOPIC + "-revoked"
    S.create_topic(env.kafka, creds("admin"), topic, 1)
    S.policy_put(env.admin, "revoked-txn", S.policy_doc(
        S.allow("KafkaWrite", ["sluice:transactional-id:tx-revoked", "sluice:topic:" + topic])))
    S.policy_attach(env.admin, "revoked-txn", "other")
    p = producer(env, "other", "tx-revoked")
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"revoked-0")
    assert p.flush(10) == 0
    S.policy_detach(env.admin, "revoked-txn", "other")
    with pytest.raises(KafkaException) as e:
        p.commit_transaction(30)
    assert e.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, e.value
    # Never committed: a read_committed consumer does not see the record.
    assert read_committed(env, "revoked-", 1, topic) == []
