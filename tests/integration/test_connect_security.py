"""Kafka Connect workers over TLS/SASL against Sluice, with identity policies.

The broker has a SASL_SSL listener and an SSL listener,
client certificates requested (a SASL_SSL listener shares the TLS settings); its certificate names 127.0.0.1 as an IP SAN and the Java client checks it
(ssl.endpoint.identification.algorithm=https, its default). Authorization is `required`.

- SASL/PLAIN over TLS, and mutual TLS (TLS 1.3 only) with the certificate's CN as the
  user: a worker whose user holds exactly the documented actions (KafkaRead, KafkaWrite,
  KafkaDescribe and KafkaCreate on its topics, KafkaRead on its group) starts, creates its
  internal topics, and runs a FileStreamSource that creates its own topic; every line of
  the file arrives in the topic.
- The same worker without one permission fails with an error naming it in its log:
  no KafkaRead on the group -> GroupAuthorizationException naming the group; no
  KafkaWrite on the internal topics -> TopicAuthorizationException naming the topic;
  no KafkaRead on them -> TopicAuthorizationException as well; no KafkaCreate -> the
  worker gives up on its offsets topic after 30 s (Connect logs the refused CreateTopics
  at DEBUG only, whatever the broker), and the broker's log names KafkaCreate.
"""

import time

import pytest

import connect_helpers as C
import security_helpers as S
import sluice_helpers as H

LINES = 30


def guide_policy(group):
    """The documented worker grant: topics `<group>-*` (its internal topics and, here, the
    connector's topic) and the group itself."""
    return [S.allow(["KafkaRead", "KafkaWrite", "KafkaDescribe", "KafkaCreate"], f"sluice:topic:{group}-*"),
            S.allow("KafkaRead", f"sluice:group:{group}")]


@pytest.fixture(scope="module")
def b(module_secure_broker_factory, tmp_path_factory):
    pki = S.Pki(tmp_path_factory.mktemp("pki-connect"))
    broker = module_secure_broker_factory(
        ["SASL_SSL://127.0.0.1:0", "SSL://127.0.0.1:0"],
        extra_args=S.tls_flags(pki, pki.server(), "requested") + ["--authorization", "required"],
        start=False)
    tgt = S.Target.stopped(broker)
    S.grant(tgt, "reader", [S.allow("*", "sluice:*")], password="reader-pw")  # the test's own reads
    S.grant(tgt, "sasl-worker", guide_policy("csasl"), password="sasl-worker-pw")
    S.grant(tgt, "mtls-worker", guide_policy("cmtls"))
    # One permission short each.
    S.grant(tgt, "no-group", guide_policy("cnogroup")[:1], password="no-group-pw")
    S.grant(tgt, "no-write", [S.allow(["KafkaRead", "KafkaDescribe", "KafkaCreate"], "sluice:topic:cnowrite-*"),
                              S.allow("KafkaRead", "sluice:group:cnowrite")], password="no-write-pw")
    S.grant(tgt, "no-read", [S.allow(["KafkaWrite", "KafkaDescribe", "KafkaCreate"], "sluice:topic:cnoread-*"),
                             S.allow("KafkaRead", "sluice:group:cnoread")], password="no-read-pw")
    S.grant(tgt, "no-create", [S.allow(["KafkaRead", "KafkaWrite", "KafkaDescribe"], "sluice:topic:cnocreate-*"),
                               S.allow("KafkaRead", "sluice:group:cnocreate")], password="no-create-pw")
    broker.start()
    broker.pki = pki
    broker.mtls_client = pki.client("mtls-worker")
    return broker


def sasl_settings(b, user, password):
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{user}" password="{password}";')
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas,
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(b.pki.ca_cert)}


def mtls_settings(b, workdir):
    ks = C.pem_keystore(b.mtls_client.cert, b.mtls_client.key, workdir / "mtls-worker-keystore.pem")
    return {"security.protocol": "SSL", "ssl.enabled.protocols": "TLSv1.3", "ssl.protocol": "TLSv1.3",
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(b.pki.ca_cert),
            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(ks)}


def run_source(b, tmp_path, addr, group, security):
    workdir = tmp_path / group
    w = C.Worker(workdir, addr, group_id=group, extra=C.with_prefixes(security), name=group)
    w.start()
    src = workdir / "in.txt"
    lines = [f"{group} line {i}" for i in range(LINES)]
    src.write_text("".join(x + "\n" for x in lines))
    topic = f"{group}-data"
    cfg = C.file_source(src, topic)
    cfg.update({"topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "1"})
    w.put_connector("src", cfg)
    w.wait_running("src", tasks=1)
    reader = S.Creds("SASL_SSL", "PLAIN", "reader", "reader-pw", ca=b.pki.ca_cert)
    got = H.wait_until(f"{LINES} lines in {topic}", lambda: (
        lambda r: r if len(r) >= LINES else None)(S.consume_from(b.addr("SASL_SSL"), reader, topic, LINES,
                                                                  timeout=5)),
        timeout=90, interval=1)
    assert [v.decode() for _, _, v in got[:LINES]] == lines
    w.stop()
    assert w.proc.returncode is not None


# The tests of a full grant take short_workers too, unused: the four workers one
# permission short start first and wait out Connect's 30 s (no-create) meanwhile.
def test_sasl_plain_over_tls(b, short_workers, tmp_path):
    run_source(b, tmp_path, b.addr("SASL_SSL"), "csasl", sasl_settings(b, "sasl-worker", "sasl-worker-pw"))


def test_mutual_tls_cn_is_the_user(b, short_workers, tmp_path):
    (tmp_path / "cmtls").mkdir()
    run_source(b, tmp_path, b.addr("SSL"), "cmtls", mtls_settings(b, tmp_path / "cmtls"))


SHORT_ONE = [
    ("no-group", "cnogroup", "GroupAuthorizationException"),
    ("no-write", "cnowrite", "TopicAuthorizationException"),
    ("no-read", "cnoread", "TopicAuthorizationException"),
    # Connect takes a refused CreateTopics (TOPIC_AUTHORIZATION_FAILED, as from Kafka) for
    # "assume the topic exists", logged at DEBUG (TopicAdmin), and gives up 30 s later
    # naming the topic; the broker's log names the missing KafkaCreate.
    ("no-create", "cnocreate", "Could not look up partition metadata for topic"),
]


@pytest.fixture(scope="module")
def short_workers(b, tmp_path_factory):
    """The four workers one permission short, started together before the first test
    (each mostly waits: the no-create one 30 s on Connect's own clock), so the tests
    wait for them at once."""
    workers = {}
    try:
        for user, group, _ in SHORT_ONE:
            workers[group] = C.Worker(tmp_path_factory.mktemp(group), b.addr("SASL_SSL"), group_id=group,
                                      extra=C.with_prefixes(sasl_settings(b, user, f"{user}-pw")),
                                      name=group).launch()
        yield workers
    finally:
        for w in workers.values():
            w.kill9()


@pytest.mark.parametrize("user,group,needle", SHORT_ONE)
def test_missing_permission_is_named(b, short_workers, user, group, needle):
    w = short_workers[group]
    log = w.log_file
    # A worker that exits at start-up has said why in its log.
    found = H.wait_until(f"{needle} in the worker log", lambda: [
        ln for ln in log.read_text(errors="replace").splitlines() if needle in ln], timeout=180, interval=1)
    text = "\n".join(found)
    if needle == "GroupAuthorizationException":
        assert f"Not authorized to access group: {group}" in text, text[:2000]
    elif user == "no-create":
        assert f"Could not look up partition metadata for topic '{group}-offsets' in the allotted period" in text, \
            text[:2000]
    else:
        assert f"Not authorized to access topics: [{group}-" in text, text[:2000]
    # The broker logged the denial too, naming the principal.
    deny = [ln for ln in b.stderr_paths[-1].read_text().splitlines() if user in ln and "denied" in ln.lower()]
    assert deny, f"no denial logged for {user}"
    if user == "no-create":
        assert [ln for ln in deny if f"User:{user} " in ln and
                f"CreateTopics denied: KafkaCreate on sluice:topic:{group}-offsets" in ln], deny
