"""`sluice topic ... --command-config FILE` and `-X KEY=VALUE`: the topic commands reach
SASL_SSL, SASL_PLAINTEXT and mutual-TLS listeners with the client properties librdkafka
(confluent-kafka, kcat) users already write; the same file works for librdkafka."""

import re

from confluent_kafka.admin import AdminClient

import security_helpers as S
import sluice_helpers as H

ADMIN_PW = "cc-admin-pw"
LISTENS = ["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0", "SASL_SSL://127.0.0.1:0", "SSL://127.0.0.1:0"]


def write_properties(path, conf, comment=True):
    lines = ["# client properties, as for kcat -F or Kafka's --command-config"] if comment else []
    lines += ["%s=%s" % kv for kv in conf.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def topic_cmd(args, addr, extra):
    return ["topic"] + args + ["--bootstrap", addr] + extra


def partitions_seen(addr, creds, name):
    """How many partitions librdkafka's Metadata shows for `name` (as `creds`); None if absent."""
    adm = AdminClient(dict(H.BASE_CONF, **{"bootstrap.servers": addr}, **S.confluent_conf(creds)))
    t = adm.list_topics(timeout=15).topics.get(name)
    return None if t is None or t.error is not None else len(t.partitions)


def secured_broker(secure_broker_factory, tmp_path):
    """A broker with every protocol, `required` authorization, the admin (all rights) and
    carol (certificate CN=carol, rights on cc-* topics)."""
    pki = S.Pki(tmp_path / "pki")
    b = secure_broker_factory(LISTENS, extra_args=S.tls_flags(pki, pki.server(), client_auth="requested"),
                              start=False)
    t = S.Target.stopped(b)
    S.grant(t, "admin", [S.allow("*", "sluice:*")], password=ADMIN_PW)
    S.grant(t, "carol", [S.allow("*", "sluice:topic:cc-*"), S.allow("KafkaDescribe", "sluice:cluster")])
    b.start()
    return b, pki


def test_topic_commands_over_sasl_ssl_with_command_config(secure_broker_factory, tmp_path, request):
    b, pki = secured_broker(secure_broker_factory, tmp_path)
    addr = b.addr("SASL_SSL")
    creds = S.Creds("SASL_SSL", "SCRAM-SHA-512", "admin", ADMIN_PW, ca=pki.ca_cert)
    props = write_properties(tmp_path / "admin.properties", S.confluent_conf(creds))
    flags = ["--command-config", str(props)]
    topic = H.unique_topic("cc-ssl-" + request.node.name)

    out = S.sluice_ok(topic_cmd(["create", topic, "--partitions", "3"], addr, flags))
    assert out.strip() == "created topic '%s' with 3 partitions" % topic, out
    assert partitions_seen(addr, creds, topic) == 3
    assert topic in S.sluice_ok(topic_cmd(["list"], addr, flags)).split()
    described = S.sluice_ok(topic_cmd(["describe", topic], addr, flags))
    assert re.search(r"^partitions: 3$", described, re.M), described
    # The same file serves librdkafka: records go through the topic the CLI made.
    S.confluent_roundtrip(addr, creds, topic, n=3, tag="cc-sasl-ssl")
    assert S.sluice_ok(topic_cmd(["delete", topic], addr, flags)).strip() == "deleted topic '%s'" % topic
    assert partitions_seen(addr, creds, topic) is None


def test_topic_create_over_sasl_plaintext_with_x_properties(secure_broker_factory, tmp_path, request):
    b, _ = secured_broker(secure_broker_factory, tmp_path)
    addr = b.addr("SASL_PLAINTEXT")
    for mech in ["PLAIN", "SCRAM-SHA-256"]:
        topic = H.unique_topic("cc-x-%s-%s" % (mech, request.node.name))
        x = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=" + mech,
             "-X", "sasl.username=admin", "-X", "sasl.password=" + ADMIN_PW]
        out = S.sluice_ok(topic_cmd(["create", topic], addr, x))
        assert out.strip() == "created topic '%s' with 1 partition" % topic, out
        assert partitions_seen(addr, S.Creds("SASL_PLAINTEXT", mech, "admin", ADMIN_PW), topic) == 1
    # -X comes after the file: it replaces the file's wrong password.
    props = write_properties(tmp_path / "wrong.properties", {
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "admin", "sasl.password": "not-the-password"})
    names = S.sluice_ok(topic_cmd(["list"], addr, ["--command-config", str(props),
                                                    "-X", "sasl.password=" + ADMIN_PW])).split()
    assert any(n.startswith("cc-x-PLAIN") for n in names) and any(n.startswith("cc-x-SCRAM") for n in names), names


def test_topic_create_over_mutual_tls(secure_broker_factory, tmp_path, request):
    b, pki = secured_broker(secure_broker_factory, tmp_path)
    addr = b.addr("SSL")
    carol = pki.client("carol")
    creds = S.Creds("SSL", ca=pki.ca_cert, client=carol)
    props = write_properties(tmp_path / "carol.properties", S.confluent_conf(creds))
    topic = H.unique_topic("cc-mtls-" + request.node.name)
    out = S.sluice_ok(topic_cmd(["create", topic, "--partitions", "2"], addr, ["--command-config", str(props)]))
    assert out.strip() == "created topic '%s' with 2 partitions" % topic, out
    assert partitions_seen(addr, creds, topic) == 2
    # Without the certificate the principal is ANONYMOUS, which may not create topics.
    anon = write_properties(tmp_path / "anon.properties", {"security.protocol": "SSL",
                                                           "ssl.ca.location": str(pki.ca_cert)})
    msg = S.sluice_fails(topic_cmd(["create", topic + "-anon"], addr, ["--command-config", str(anon)]))
    assert "TOPIC_AUTHORIZATION_FAILED" in msg, msg
    # A CA the broker's certificate does not chain to: the handshake is refused.
    other = S.Pki(tmp_path / "other-pki", ca_cn="another-ca")
    msg = S.sluice_fails(topic_cmd(["list"], addr, ["-X", "security.protocol=SSL",
                                                    "-X", "ssl.ca.location=%s" % other.ca_cert]))
    assert "TLS" in msg, msg


def test_wrong_password_is_a_clear_error(secure_broker_factory, tmp_path):
    b, pki = secured_broker(secure_broker_factory, tmp_path)
    # No properties at all against a SASL listener: the hint says what is missing.
    msg = S.sluice_fails(topic_cmd(["list"], b.addr("SASL_PLAINTEXT"), []))
    assert "closed the connection" in msg and "--command-config" in msg, msg
    for addr, proto in [(b.addr("SASL_PLAINTEXT"), "SASL_PLAINTEXT"), (b.addr("SASL_SSL"), "SASL_SSL")]:
        for mech in ["PLAIN", "SCRAM-SHA-512"]:
            props = write_properties(tmp_path / ("bad-%s-%s.properties" % (proto, mech)), {
                "security.protocol": proto, "sasl.mechanism": mech, "sasl.username": "admin",
                "sasl.password": "wrong-password", "ssl.ca.location": str(pki.ca_cert)})
            rc, out, err = S.sluice(topic_cmd(["create", "cc-never"], addr, ["--command-config", str(props)]))
            assert rc != 0, (proto, mech, out, err)
            assert "SASL authentication failed (SASL_AUTHENTICATION_FAILED" in err, (proto, mech, err)
            assert out == "", out
    creds = S.Creds("SASL_PLAINTEXT", "PLAIN", "admin", ADMIN_PW)
    assert partitions_seen(b.addr("SASL_PLAINTEXT"), creds, "cc-never") is None
    b.assert_alive()


def test_bad_properties_are_refused_before_connecting(tmp_path):
    # No broker listens here: each error must come from checking the properties.
    addr = "127.0.0.1:9"
    cases = [
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "a",
          "sasl.jaas.config": "x"}, r"props:5: unknown property 'sasl.jaas.config'"),
        ({"security.protocol": "SASL_TLS"}, r"props:2: security.protocol 'SASL_TLS'"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}, r"props:3: sasl.mechanism 'GSSAPI'"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.username": "a"}, r"set sasl.mechanism"),
        ({"ssl.endpoint.identification.algorithm": "none"}, r"only https"),
    ]
    for conf, pattern in cases:
        props = write_properties(tmp_path / "props", conf)
        rc, out, err = S.sluice(topic_cmd(["list"], addr, ["--command-config", str(props)]))
        assert rc != 0 and re.search(pattern, err), (conf, rc, err)
        assert "connect" not in err.lower(), err
    (tmp_path / "props").write_text("security.protocol SASL_SSL\n")
    msg = S.sluice_fails(topic_cmd(["list"], addr, ["--command-config", str(tmp_path / "props")]))
    assert re.search(r"props:1: expected KEY=VALUE", msg), msg
    msg = S.sluice_fails(topic_cmd(["list"], addr, ["-X", "sasl.kerberos.principal=x"]))
    assert "-X: unknown property 'sasl.kerberos.principal'" in msg, msg
    msg = S.sluice_fails(topic_cmd(["list"], addr, ["-X", "security.protocol"]))
    assert "-X wants KEY=VALUE" in msg, msg
    msg = S.sluice_fails(topic_cmd(["list"], addr, ["--command-config", str(tmp_path / "missing")]))
    assert "missing" in msg and "No such file" in msg, msg
