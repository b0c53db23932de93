"""Authentication: TLS, mutual TLS and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with
librdkafka (confluent-kafka), kafka-python and kafkajs, and every refusal as the client
reports it.

One module broker listens on PLAINTEXT, SSL (client certificates requested), SASL_PLAINTEXT
and SASL_SSL; its users and policies are written offline before it starts:
  admin      every action on every resource (creates the topics)
  alice      Read/Write on sluice:topic:sasl-*          (SASL user, both SCRAM mechanisms)
  carol      Read/Write on sluice:topic:mtls-*          (only a certificate CN, no password)
  ANONYMOUS  Read/Write on sluice:topic:anon-*          (TLS without a client certificate)
(and Read on every group, for librdkafka's consumer).
A SASL listener makes `--authorization required` the default, so nothing else is allowed.

kafka-python 2.0.2 speaks SaslHandshake v0 followed by raw SASL tokens (no
SaslAuthenticate), so a failed login reaches it only as a closed connection.
"""

import re
import time

import pytest
from confluent_kafka import KafkaError, Producer
from kafka.errors import KafkaConnectionError, UnsupportedSaslMechanismError

import kproto as K
import security_helpers as S
import sluice_helpers as H

ADMIN_PW = "admin-Secret-1"
ALICE_PW = "alice-pw-\u00e9t\u00e9"   # non-ASCII on purpose (SASLprep leaves it as is)
LISTENS = ["127.0.0.1:0", "SSL://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0", "SASL_SSL://127.0.0.1:0"]
CLIENTS = ["confluent", "kafka-python", "kafkajs"]
SASL_MODES = ["%s-%s" % (p, m) for p in ("SASL_PLAINTEXT", "SASL_SSL") for m in S.MECHANISMS]


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    p = S.Pki(tmp_path_factory.mktemp("pki"))
    p.srv = p.server()
    p.carol = p.client("carol")
    p.dave = p.client("dave")
    p.carol_selfsigned = p.self_signed_client("carol")
    p.other = S.Pki(tmp_path_factory.mktemp("pki-other"), ca_cn="some-other-ca")
    return p


@pytest.fixture(scope="module")
def b(module_secure_broker_factory, pki):
    broker = module_secure_broker_factory(LISTENS, extra_args=S.tls_flags(pki, pki.srv, "requested"), start=False)
    t = S.Target.stopped(broker)
    S.grant(t, "admin", [S.allow("*", "sluice:*")], password=ADMIN_PW)
    # Read on every group too: librdkafka's consumer looks up its (unused) group's coordinator.
    groups = S.allow("KafkaRead", "sluice:group:*")
    S.grant(t, "alice", [S.allow(["KafkaRead", "KafkaWrite"], "sluice:topic:sasl-*"), groups], password=ALICE_PW)
    S.grant(t, "carol", [S.allow(["KafkaRead", "KafkaWrite"], "sluice:topic:mtls-*"), groups])
    S.grant(t, "ANONYMOUS", [S.allow(["KafkaRead", "KafkaWrite"], "sluice:topic:anon-*"), groups])
    broker.start()
    broker.pki = pki
    return broker


def admin_creds(b):
    return S.Creds("SASL_PLAINTEXT", "PLAIN", "admin", ADMIN_PW)


def make_topic(b, prefix, request):
    name = H.unique_topic("%s-%s" % (prefix, request.node.name))
    S.create_topic(b.addr("SASL_PLAINTEXT"), admin_creds(b), name, 1)
    return name


def sasl_creds(b, mode, user="alice", password=ALICE_PW):
    protocol, mech = mode.split("-", 1)
    return b.addr(protocol), S.Creds(protocol, mech, user, password, ca=b.pki.ca_cert)


def js_error_text(err):
    """Every name/type/code/message in a security.js error chain, as one string."""
    parts = []
    while err:
        parts += [str(err.get(k)) for k in ("name", "type", "code", "message") if err.get(k) is not None]
        err = err.get("cause") or err.get("originalError")
    return " | ".join(parts)


# --------------------------------------------------------------------------
# Listeners
# --------------------------------------------------------------------------


def test_listener_lines_and_metadata_per_listener(b):
    """stdout names each listener in flag order (bare HOST:PORT for PLAINTEXT), and Metadata
    on each listener announces that listener's own address."""
    assert [ln.split("://")[0] if "://" in ln else "PLAINTEXT" for ln in b.listeners] == [
        "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"], b.listeners
    assert b.listeners[0] == b.bootstrap and "://" not in b.listeners[0]
    for spec, proto in zip(b.listeners[1:], ["SSL", "SASL_PLAINTEXT", "SASL_SSL"]):
        assert spec == "%s://%s" % (proto, b.addr(proto)), b.listeners
    ports = {int(b.addr(p).rsplit(":", 1)[1]) for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
    assert len(ports) == 4, b.listeners
    kafka_lines = [ln for ln in b.stdout_lines if ln.startswith("listening kafka ")]
    assert kafka_lines == ["listening kafka %s" % s for s in b.listeners], b.stdout_lines

    idents = {
        "PLAINTEXT": S.Creds(),
        "SSL": S.Creds("SSL", ca=b.pki.ca_cert),
        "SASL_PLAINTEXT": admin_creds(b),
        "SASL_SSL": S.Creds("SASL_SSL", "PLAIN", "admin", ADMIN_PW, ca=b.pki.ca_cert),
    }
    for proto, creds in idents.items():
        addr = b.addr(proto)
        with S.SecureConn(addr, creds) as conn:
            md = K.metadata_v1(conn, [])
        host, port = addr.rsplit(":", 1)
        assert [(x["host"], x["port"]) for x in md["brokers"]] == [(host, int(port))], (proto, md["brokers"])
        # librdkafka follows the announced address: it must lead back to the same listener.
        cmd = S.confluent_metadata_topics(addr, creds)
        assert [(x.host, x.port) for x in cmd.brokers.values()] == [(host, int(port))], (proto, cmd.brokers)


# --------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("mode", ["SSL"] + SASL_MODES + ["mTLS"])
def test_roundtrip(b, client, mode, request):
    """Produce and read back 5 records (offsets, keys, values) as the identity of `mode`."""
    if mode == "SSL":
        topic = make_topic(b, "anon", request)
        addr, creds = b.addr("SSL"), S.Creds("SSL", ca=b.pki.ca_cert)
    elif mode == "mTLS":
        topic = make_topic(b, "mtls", request)
        addr, creds = b.addr("SSL"), S.Creds("SSL", ca=b.pki.ca_cert, client=b.pki.carol)
    else:
        topic = make_topic(b, "sasl", request)
        addr, creds = sasl_creds(b, mode)
    S.ROUNDTRIPS[client](addr, creds, topic, n=5, tag="%s-%s" % (client, mode))


def test_mutual_tls_principal_is_the_certificate_cn(b, request):
    """carol's certificate writes to mtls-* (the policy attached to CN=carol); the same TLS
    listener without a certificate (ANONYMOUS), with dave's trusted certificate, or SASL
    user alice may not."""
    topic = make_topic(b, "mtls", request)
    ca = b.pki.ca_cert
    carol = S.Creds("SSL", ca=ca, client=b.pki.carol)
    with S.SecureConn(b.addr("SSL"), carol) as conn:
        res = S.produce_raw(conn, topic, [(b"c0", b"carol")])
        assert (res["error"], res["base_offset"]) == (0, 0), res
    for who, addr, creds in [("ANONYMOUS over SSL", b.addr("SSL"), S.Creds("SSL", ca=ca)),
                             ("CN=dave", b.addr("SSL"), S.Creds("SSL", ca=ca, client=b.pki.dave)),
                             ("SASL alice", b.addr("SASL_PLAINTEXT"),
                              S.Creds("SASL_PLAINTEXT", "PLAIN", "alice", ALICE_PW))]:
        with S.SecureConn(addr, creds) as conn:
            res = S.produce_raw(conn, topic, [(b"x", b"intruder")])
            assert res["error"] == S.TOPIC_AUTHORIZATION_FAILED, (who, res)
            md = K.metadata_v1(conn, [topic])
            assert md["topics"][topic]["error"] == S.TOPIC_AUTHORIZATION_FAILED, (who, md["topics"])
        # librdkafka reports the same refusal on the delivery report.
        p = Producer(H.producer_conf(addr, **S.confluent_conf(creds), **{"message.timeout.ms": 15000}))
        d = H.produce_one(p, topic, b"x", b"intruder", partition=0)
        assert d.err is not None and d.err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, (who, d)
    with S.SecureConn(b.addr("SSL"), carol) as conn:
        assert S.fetch_pairs(conn, topic) == [(0, b"c0", b"carol")]


# --------------------------------------------------------------------------
# SASL refusals
# --------------------------------------------------------------------------


BAD_LOGINS = {"wrong-password": ("alice", "not-alices-password"), "unknown-user": ("mallory", ALICE_PW)}


@pytest.mark.parametrize("mode", ["SASL_PLAINTEXT-PLAIN", "SASL_PLAINTEXT-SCRAM-SHA-256", "SASL_SSL-SCRAM-SHA-512"])
@pytest.mark.parametrize("bad", sorted(BAD_LOGINS))
def test_bad_login_raw(b, bad, mode):
    """SaslAuthenticate answers SASL_AUTHENTICATION_FAILED, then the broker closes the
    connection after a short delay; the right password works on the next connection."""
    user, pw = BAD_LOGINS[bad]
    addr, creds = sasl_creds(b, mode, user, pw)
    conn = S.SecureConn(addr, creds, authenticate=False)
    try:
        err, mechs = S.sasl_handshake(conn, creds.mechanism)
        assert err == 0 and creds.mechanism in mechs, (err, mechs)
        t0 = time.monotonic()
        if creds.mechanism == "PLAIN":
            res = S.sasl_authenticate(conn, b"\0" + user.encode() + b"\0" + pw.encode())
        else:
            sc = S.ScramClient(creds.mechanism, user, pw)
            res = S.sasl_authenticate(conn, sc.first())
            if res["error"] == 0:  # the broker may go on (fake salt) until the proof fails
                res = S.sasl_authenticate(conn, sc.final(res["auth_bytes"]))
        assert res["error"] == S.SASL_AUTHENTICATION_FAILED, res
        conn.wait_closed(timeout=6)
        waited = time.monotonic() - t0
        assert 0.3 <= waited <= 6, "connection closed %.2fs after the failed authentication (expected ~1s)" % waited
    finally:
        conn.close()
    with S.SecureConn(*sasl_creds(b, mode)) as conn:
        md = K.metadata_v1(conn, None)
        assert md["brokers"], md


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("mode", ["SASL_PLAINTEXT-PLAIN", "SASL_PLAINTEXT-SCRAM-SHA-256", "SASL_SSL-SCRAM-SHA-512"])
@pytest.mark.parametrize("bad", sorted(BAD_LOGINS))
def test_bad_login_clients(b, client, bad, mode):
    user, pw = BAD_LOGINS[bad]
    addr, creds = sasl_creds(b, mode, user, pw)
    if client == "confluent":
        md, errors = S.confluent_errors(addr, creds, wait=8)
        assert md is None, "librdkafka got metadata as %r" % creds
        auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        assert auth, "librdkafka reported no authentication error (SASL_AUTHENTICATION_FAILED): %r" % errors
    elif client == "kafka-python":
        resp, errors = S.kafka_python_connect(addr, creds, timeout=8)
        assert resp is None, "kafka-python got metadata as %r: %r" % (creds, resp)
        # SaslHandshake v0 + raw tokens: a failed login can only close the connection.
        assert any(isinstance(e, KafkaConnectionError) for e in errors), errors
    else:
        out = S.kafkajs_connect(addr, creds)
        assert out.get("ok") is False, out
        assert out["error"]["name"] in ("KafkaJSSASLAuthenticationError", "KafkaJSNumberOfRetriesExceeded"), out
        assert "authentication failed" in js_error_text(out["error"]).lower(), out
        codes = [r["errorCode"] for r in out["saslResponses"]]
        assert codes and codes[-1] == S.SASL_AUTHENTICATION_FAILED, out


def test_unsupported_mechanism(secure_broker_factory, tmp_path):
    """--sasl-mechanisms SCRAM-SHA-512: a PLAIN handshake gets UNSUPPORTED_SASL_MECHANISM
    with the enabled list, from every client; SCRAM-SHA-512 logs in."""
    b = secure_broker_factory(["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"],
                              extra_args=["--sasl-mechanisms", "SCRAM-SHA-512"], start=False)
    t = S.Target.stopped(b)
    S.grant(t, "alice", [S.allow("KafkaDescribe", "sluice:cluster")], password=ALICE_PW)
    b.start()
    addr = b.addr("SASL_PLAINTEXT")
    with S.SecureConn(addr) as conn:
        assert S.sasl_handshake(conn, "PLAIN") == (S.UNSUPPORTED_SASL_MECHANISM, ["SCRAM-SHA-512"])
    with S.SecureConn(addr) as conn:
        assert S.sasl_handshake(conn, "NOT-A-MECHANISM") == (S.UNSUPPORTED_SASL_MECHANISM, ["SCRAM-SHA-512"])
    plain = S.Creds("SASL_PLAINTEXT", "PLAIN", "alice", ALICE_PW)
    md, errors = S.confluent_errors(addr, plain, wait=8)
    # librdkafka reports the handshake's UNSUPPORTED_SASL_MECHANISM as a local authentication
    # error whose text is that code's ("Broker: Unsupported SASL mechanism").
    assert md is None and any(e.code() == KafkaError._AUTHENTICATION and "Unsupported SASL mechanism" in e.str()
                              for e in errors), errors
    resp, errors = S.kafka_python_connect(addr, plain, timeout=8)
    assert resp is None and any(isinstance(e, UnsupportedSaslMechanismError) for e in errors), errors
    out = S.kafkajs_connect(addr, plain)
    assert out.get("ok") is False, out
    text = js_error_text(out["error"])
    assert "UNSUPPORTED_SASL_MECHANISM" in text or "not supported by the server" in text, out
    # SCRAM-SHA-512 works on the same listener.
    with S.SecureConn(addr, S.Creds("SASL_PLAINTEXT", "SCRAM-SHA-512", "alice", ALICE_PW)) as conn:
        d = K.describe_cluster_v0(conn)
        assert d["error"] == 0 and [x["port"] for x in d["brokers"]] == [int(addr.rsplit(":", 1)[1])], d
    with pytest.raises(S.SaslError) as ei:
        with S.SecureConn(addr, S.Creds("SASL_PLAINTEXT", "SCRAM-SHA-256", "alice", ALICE_PW)):
            pass
    assert (ei.value.step, ei.value.code) == ("handshake", S.UNSUPPORTED_SASL_MECHANISM)


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_requests_before_authentication_close_the_connection(b, protocol):
    """On a SASL listener ApiVersions works unauthenticated; Metadata (before or after the
    handshake, but before SaslAuthenticate) closes the connection without an answer."""
    addr = b.addr(protocol)
    creds = S.Creds(protocol, "PLAIN", "alice", ALICE_PW, ca=b.pki.ca_cert)
    with S.SecureConn(addr, creds, authenticate=False) as conn:
        err, apis = K.api_versions_v0(conn)
        assert err == 0
        assert S.SASL_HANDSHAKE in apis and S.SASL_AUTHENTICATE in apis, sorted(apis)
        assert apis[S.SASL_HANDSHAKE][0] == 0 and apis[S.SASL_HANDSHAKE][1] >= 1, apis[S.SASL_HANDSHAKE]
        conn.send_request(K.METADATA, 1, K.metadata_v1_body(None))
        got = conn.wait_closed(timeout=10)
        assert got == b"", "the broker answered Metadata before authentication: %r" % got[:200]
    with S.SecureConn(addr, creds, authenticate=False) as conn:
        assert S.sasl_handshake(conn, "PLAIN")[0] == 0
        conn.send_request(K.METADATA, 1, K.metadata_v1_body(None))
        assert conn.wait_closed(timeout=10) == b""
    # Authenticated, Metadata is answered on the same kind of connection.
    with S.SecureConn(addr, creds) as conn:
        assert K.metadata_v1(conn, None)["brokers"]


# --------------------------------------------------------------------------
# TLS refusals
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def strict(module_secure_broker_factory, pki):
    """A broker that requires a client certificate on its SSL listener (default
    authorization: required); it has a SASL_SSL listener too."""
    broker = module_secure_broker_factory(["127.0.0.1:0", "SSL://127.0.0.1:0", "SASL_SSL://127.0.0.1:0"],
                                          extra_args=S.tls_flags(pki, pki.srv, "required"), start=False)
    t = S.Target.stopped(broker)
    S.grant(t, "carol", [S.allow("*", "sluice:*")])
    S.grant(t, "alice", [S.allow("KafkaDescribe", "sluice:*")], password=ALICE_PW)
    broker.start()
    return broker


ALERTS = {"missing": r"alert (certificate required|handshake failure)",
          "untrusted": r"alert (unknown ca|bad certificate|certificate unknown)"}


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("case", ["missing", "untrusted"])
def test_client_certificate_refused(strict, pki, client, case):
    """--tls-client-auth required: no client certificate, or a self-signed one (with the
    CN of a user who has every permission), fails the TLS handshake with an alert."""
    addr = strict.addr("SSL")
    creds = S.Creds("SSL", ca=pki.ca_cert, client=pki.carol_selfsigned if case == "untrusted" else None)
    pattern = re.compile(ALERTS[case], re.I)
    if client == "confluent":
        md, errors = S.confluent_errors(addr, creds, wait=8)
        assert md is None
        assert any(e.code() in (KafkaError._TRANSPORT, KafkaError._SSL) and pattern.search(e.str())
                   for e in errors), errors
    elif client == "kafka-python":
        resp, errors = S.kafka_python_connect(addr, creds, timeout=8)
        assert resp is None and any(pattern.search(str(e).replace("_", " ")) for e in errors), errors
    else:
        out = S.kafkajs_connect(addr, creds)
        assert out.get("ok") is False and pattern.search(js_error_text(out["error"]).replace("_", " ")), out
    # The CA-signed certificate of the same CN gets in.
    good = S.Creds("SSL", ca=pki.ca_cert, client=pki.carol)
    with S.SecureConn(addr, good) as conn:
        md = K.metadata_v1(conn, None)
        assert [x["port"] for x in md["brokers"]] == [int(addr.rsplit(":", 1)[1])]


def test_sasl_ssl_needs_no_client_certificate(strict, pki):
    """--tls-client-auth required is for the SSL listeners (Kafka's ssl.client.auth does
    not apply to SASL_SSL): a SASL_SSL client without a certificate logs in, librdkafka
    and a raw connection alike, while the SSL listener still refuses one."""
    addr = strict.addr("SASL_SSL")
    for mech in ("PLAIN", "SCRAM-SHA-256"):
        creds = S.Creds("SASL_SSL", mech, "alice", ALICE_PW, ca=pki.ca_cert)
        md = S.confluent_metadata_topics(addr, creds)
        assert [b.port for b in md.brokers.values()] == [int(addr.rsplit(":", 1)[1])]
        with S.SecureConn(addr, creds) as conn:
            assert K.metadata_v1(conn, None)["brokers"]
    with pytest.raises(OSError):
        with S.SecureConn(strict.addr("SSL"), S.Creds("SSL", ca=pki.ca_cert)) as conn:
            K.metadata_v1(conn, None)


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_server_certificate_not_trusted(b, client, protocol):
    """A client trusting another CA refuses the broker's certificate."""
    addr = b.addr(protocol)
    creds = S.Creds(protocol, "PLAIN" if protocol == "SASL_SSL" else None, "alice", ALICE_PW, ca=b.pki.other.ca_cert)
    if client == "confluent":
        md, errors = S.confluent_errors(addr, creds, wait=8)
        assert md is None
        # librdkafka reports the failed handshake as _SSL or, when the connection's
        # failure is reported first, as _TRANSPORT; the text names the cause either way.
        assert any(e.code() in (KafkaError._SSL, KafkaError._TRANSPORT) and "certificate verify failed" in e.str()
                   for e in errors), errors
    elif client == "kafka-python":
        import ssl
        resp, errors = S.kafka_python_connect(addr, creds, timeout=8)
        assert resp is None and any(isinstance(e, ssl.SSLCertVerificationError) for e in errors), errors
    else:
        out = S.kafkajs_connect(addr, creds)
        assert out.get("ok") is False, out
        text = js_error_text(out["error"])
        assert any(c in text for c in ("SELF_SIGNED_CERT_IN_CHAIN", "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
                                       "UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "DEPTH_ZERO_SELF_SIGNED_CERT")), out
    # The same client trusting the right CA gets the broker's certificate.
    assert S.tls_peer_cert(addr, b.pki.ca_cert) == ("localhost", b.pki.srv.serial)

