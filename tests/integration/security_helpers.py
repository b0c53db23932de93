"""Helpers for the security integration tests (test_security_*.py).

- `Pki`: certificates made with the `openssl` CLI in a pytest tmp dir: a CA, server
  certificates (SAN IP:127.0.0.1 and DNS:localhost), client certificates signed by the
  CA (CN = the principal), a self-signed client certificate and a second, unrelated CA.
- `Target` + `user_add`/`policy_put`/`grant`...: the `sluice user` and `sluice policy`
  commands, offline (`--data-dir`) or online (`--server` with `--auth`).
- `Creds` and `confluent_conf`/`kafka_python_conf`/`kafkajs_conf`: the same identity
  as each client library spells it.
- `SecureConn`: kproto's raw connection over TLS and/or SASL (PLAIN, SCRAM), plus raw
  codecs for SaslHandshake, SaslAuthenticate, CreateTopics, DeleteTopics and the
  SCRAM credential APIs, which kproto.py does not have.
- Round trips and refusal probes for confluent-kafka, kafka-python and kafkajs
  (node/security.js).
"""

import base64
import hashlib
import hmac
import json
import logging
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import conftest
import kproto as K
import sluice_helpers as H

CALL_TIMEOUT = 60.0
NODE_DIR = Path(__file__).resolve().parent / "node"
NODE = "/usr/bin/node" if os.path.exists("/usr/bin/node") else shutil.which("node")

# Kafka error codes of the security features.
SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_IDS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
SCRAM_HASH = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}

ALL_ACTIONS = ("KafkaRead", "KafkaWrite", "KafkaCreate", "KafkaDelete", "KafkaDescribe", "KafkaDescribeConfigs",
               "KafkaAlterConfigs", "KafkaAlter", "KafkaClusterAction", "KafkaIdempotentWrite")
# Which actions imply another one (spec: Read/Write/Delete/Alter imply Describe,
# AlterConfigs implies DescribeConfigs).
IMPLIED_BY = {"KafkaDescribe": ("KafkaRead", "KafkaWrite", "KafkaDelete", "KafkaAlter"),
              "KafkaDescribeConfigs": ("KafkaAlterConfigs",)}


# ==========================================================================
# Certificates (openssl CLI)
# ==========================================================================


def openssl(*args, cwd=None):
    proc = subprocess.run(["openssl"] + [str(a) for a in args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60, cwd=cwd)
    assert proc.returncode == 0, "openssl %s failed (%d):\n%s" % (
        " ".join(str(a) for a in args), proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout.decode("utf-8", "replace")


class CertPair:
    def __init__(self, cert, key, cn, serial):
        self.cert = Path(cert)
        self.key = Path(key)
        self.cn = cn
        self.serial = serial

    def __repr__(self):
        return "CertPair(%s, CN=%s, serial=%s)" % (self.cert.name, self.cn, self.serial)


class Pki:
    """Everything under `root`. Keys are EC P-256 (fast to make, every client takes them)."""

    def __init__(self, root, ca_cn="sluice-test-ca"):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._serial = 1000
        self.ca = self._self_signed("ca", ca_cn, ca=True)
        self.ca_cert = self.ca.cert

    def _next_serial(self):
        self._serial += 1
        return self._serial

    def _key_args(self):
        return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def _self_signed(self, name, cn, ca=False):
        cert, key = self.root / ("%s.pem" % name), self.root / ("%s.key" % name)
        serial = self._next_serial()
        args = ["req", "-x509"] + self._key_args() + ["-keyout", key, "-out", cert, "-days", "30",
                                                      "-subj", "/CN=%s" % cn, "-set_serial", serial]
        if ca:
            args += ["-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign,cRLSign"]
        else:
            args += ["-addext", "basicConstraints=critical,CA:FALSE",
                     "-addext", "extendedKeyUsage=clientAuth,serverAuth",
                     "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
        openssl(*args)
        return CertPair(cert, key, cn, serial)

    def _signed(self, name, cn, usage, san=None, serial=None):
        cert, key, csr = (self.root / ("%s.pem" % name), self.root / ("%s.key" % name),
                          self.root / ("%s.csr" % name))
        ext = self.root / ("%s.ext" % name)
        serial = serial if serial is not None else self._next_serial()
        lines = ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment",
                 "extendedKeyUsage=%s" % usage]
        if san:
            lines.append("subjectAltName=%s" % san)
        ext.write_text("\n".join(lines) + "\n")
        openssl("req", "-new", *self._key_args(), "-keyout", key, "-out", csr, "-subj", "/CN=%s" % cn)
        openssl("x509", "-req", "-in", csr, "-CA", self.ca.cert, "-CAkey", self.ca.key, "-set_serial", serial,
                "-days", "30", "-out", cert, "-extfile", ext)
        return CertPair(cert, key, cn, serial)

    def server(self, name="server", cn="localhost", serial=None):
        """A server certificate for 127.0.0.1 / localhost, signed by this CA."""
        return self._signed(name, cn, "serverAuth", san="IP:127.0.0.1,DNS:localhost", serial=serial)

    def client(self, cn, name=None):
        """A client certificate with CN=cn, signed by this CA."""
        return self._signed(name or "client-%s" % cn, cn, "clientAuth")

    def self_signed_client(self, cn, name=None):
        """A client certificate nobody trusts (self-signed)."""
        return self._self_signed(name or "selfsigned-%s" % cn, cn)


def cert_fields(pem_path):
    """(CN of the subject, serial as int) of a PEM certificate, read by openssl."""
    out = openssl("x509", "-in", pem_path, "-noout", "-subject", "-serial", "-nameopt", "RFC2253")
    subject = serial = None
    for ln in out.splitlines():
        if ln.startswith("subject="):
            for part in ln[len("subject="):].split(","):
                if part.strip().startswith("CN="):
                    subject = part.strip()[3:]
        elif ln.startswith("serial="):
            serial = int(ln[len("serial="):], 16)
    return subject, serial


def tls_peer_cert(addr, ca_file, timeout=10.0, client=None):
    """Opens a TLS connection (verifying against ca_file) and returns (CN, serial) of the
    server certificate it got; the connection is closed again."""
    ctx = ssl.create_default_context(cafile=str(ca_file))
    if client is not None:
        ctx.load_cert_chain(str(client.cert), str(client.key))
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as s:
            der = s.getpeercert(binary_form=True)
    pem = ssl.DER_cert_to_PEM_cert(der)
    proc = subprocess.run(["openssl", "x509", "-noout", "-subject", "-serial", "-nameopt", "RFC2253"],
                          input=pem.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert proc.returncode == 0, proc.stderr
    cn = serial = None
    for ln in proc.stdout.decode().splitlines():
        if ln.startswith("subject="):
            for part in ln[len("subject="):].split(","):
                if part.strip().startswith("CN="):
                    cn = part.strip()[3:]
        elif ln.startswith("serial="):
            serial = int(ln[len("serial="):], 16)
    return cn, serial


def tls_flags(pki, server, client_auth=None):
    """`serve` flags for a TLS listener with `server`'s certificate."""
    out = ["--tls-cert", str(server.cert), "--tls-key", str(server.key)]
    if client_auth is not None:
        out += ["--tls-client-ca", str(pki.ca_cert), "--tls-client-auth", client_auth]
    return out


# ==========================================================================
# The `sluice user` / `sluice policy` commands
# ==========================================================================


def sluice(args, stdin=None, env=None, timeout=CALL_TIMEOUT):
    """Runs `sluice ARGS`; returns (rc, stdout, stderr). stdin is text (or None)."""
    full_env = dict(os.environ)
    full_env.pop("SLUICE_PASSWORD", None)
    full_env.update(env or {})
    proc = subprocess.run([conftest.require_binary()] + [str(a) for a in args],
                          input=(stdin or "").encode("utf-8"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, env=full_env)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def sluice_ok(args, stdin=None, env=None, timeout=CALL_TIMEOUT):
    rc, out, err = sluice(args, stdin, env, timeout)
    assert rc == 0, "sluice %s exited %d\nstdout:\n%s\nstderr:\n%s" % (
        " ".join(str(a) for a in args), rc, out[-3000:], err[-3000:])
    return out


def sluice_fails(args, stdin=None, env=None, timeout=CALL_TIMEOUT):
    """A command that must fail with a message; returns stdout+stderr."""
    rc, out, err = sluice(args, stdin, env, timeout)
    assert rc != 0, "sluice %s unexpectedly succeeded\nstdout:\n%s\nstderr:\n%s" % (
        " ".join(str(a) for a in args), out[-3000:], err[-3000:])
    msg = (out + err).strip()
    assert msg, "sluice %s failed (exit %d) without any message" % (" ".join(str(a) for a in args), rc)
    return msg


class Target:
    """Where user/policy commands go: a data dir (offline) or a broker's HTTP listener."""

    def __init__(self, args, env, workdir):
        self.args = list(args)
        self.env = dict(env)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)

    @classmethod
    def stopped(cls, broker):
        """Offline target on `broker`'s data dir, started once and stopped first: the
        commands want a stopped broker's data directory (they refuse an empty one)."""
        broker.start()
        broker.stop()
        return cls.offline(broker.data_dir)

    @classmethod
    def offline(cls, data_dir, workdir=None, init=False):
        """init: pass --init, for a data dir no broker has made yet."""
        return cls(["--data-dir", str(data_dir)] + (["--init"] if init else []), {},
                   workdir or Path(data_dir).parent / "policy-files")

    @classmethod
    def online(cls, http_addr, user, password, workdir, https=False, tls_ca=None):
        url = ("https://" if https else "") + http_addr
        args = ["--server", url, "--auth", user]
        if tls_ca is not None:
            args += ["--tls-ca", str(tls_ca)]
        return cls(args, {"SLUICE_PASSWORD": password}, workdir)

    def run(self, args, stdin=None):
        return sluice(list(args) + self.args, stdin=stdin, env=self.env)

    def ok(self, args, stdin=None):
        return sluice_ok(list(args) + self.args, stdin=stdin, env=self.env)

    def fails(self, args, stdin=None):
        return sluice_fails(list(args) + self.args, stdin=stdin, env=self.env)


def speaks_tls(addr, timeout=5.0):
    """Whether a TLS handshake (no verification) succeeds at addr."""
    host, port = addr.rsplit(":", 1)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as raw:
            with ctx.wrap_socket(raw, server_hostname=host):
                return True
    except (ssl.SSLError, OSError):
        return False


def online_target(broker, user, password, workdir, ca):
    """Target.online for `broker`'s HTTPS listener (`--http https://...`), trusting `ca`:
    the CLI sends --auth passwords over https only."""
    assert broker.http.startswith("https://"), broker.http
    http = broker.http.split("://", 1)[-1]
    assert speaks_tls(http), "the HTTP listener %s does not speak TLS" % broker.http
    return Target.online(http, user, password, workdir, https=True, tls_ca=ca)


def user_add(target, name, password, mechanism=None, iterations=None):
    args = ["user", "add", name]
    if mechanism:
        args += ["--mechanism", mechanism]
    if iterations:
        args += ["--iterations", str(iterations)]
    return target.ok(args, stdin=password + "\n")


def user_passwd(target, name, password):
    return target.ok(["user", "passwd", name], stdin=password + "\n")


def user_remove(target, name):
    return target.ok(["user", "remove", name])


def user_list_doc(target):
    """`user list --json`, parsed as printed."""
    out = target.ok(["user", "list", "--json"])
    try:
        return json.loads(out)
    except ValueError as e:
        raise AssertionError("user list --json printed no JSON (%s): %r" % (e, out[:1000]))


def user_list(target):
    """`user list --json` as {name: sorted mechanisms}. The specification prints a list of
    {"name", "mechanisms"}; a {"users": [...]} wrapper is read too, so that one test
    (test_security_cli.py::test_user_list_json_shape) reports that difference and the
    others go on checking the contents."""
    doc = user_list_doc(target)
    if isinstance(doc, dict) and set(doc) == {"users"}:
        doc = doc["users"]
    assert isinstance(doc, list), "user list --json: expected a list, got %r" % (doc,)
    users = {}
    for u in doc:
        assert isinstance(u, dict) and set(u) >= {"name", "mechanisms"}, "bad user entry %r" % (u,)
        assert u["name"] not in users, "user %s listed twice" % u["name"]
        users[u["name"]] = sorted(u["mechanisms"])
    return users


def statement(effect, actions, resources):
    return {"Effect": effect, "Action": actions, "Resource": resources}


def allow(actions, resources):
    return statement("Allow", actions, resources)


def deny(actions, resources):
    return statement("Deny", actions, resources)


def policy_doc(*statements):
    return {"Version": "1", "Statement": list(statements)}


def policy_put(target, name, doc):
    path = target.workdir / ("policy-%s-%s.json" % (name, secrets.token_hex(4)))
    path.write_text(json.dumps(doc, indent=1))
    return target.ok(["policy", "put", name, str(path)])


def policy_get(target, name):
    out = target.ok(["policy", "get", name])
    try:
        return json.loads(out)
    except ValueError as e:
        raise AssertionError("policy get %s printed no JSON document (%s): %r" % (name, e, out[:1000]))


def policy_attach(target, name, user, external=False):
    """external: the user is no `sluice user` (a certificate's common name)."""
    return target.ok(["policy", "attach", name, "--user", user] + (["--external"] if external else []))


def policy_detach(target, name, user):
    return target.ok(["policy", "detach", name, "--user", user])


def policy_delete(target, name):
    return target.ok(["policy", "delete", name])


def policy_list(target):
    """`policy list --json` parsed (the raw document)."""
    out = target.ok(["policy", "list", "--json"])
    try:
        return json.loads(out)
    except ValueError as e:
        raise AssertionError("policy list --json printed no JSON (%s): %r" % (e, out[:1000]))


def policy_names(doc):
    """Policy names out of `policy list --json` (format not fixed by the specification): a
    list, or {"policies": [...]}, of names or of objects with "name"."""
    if isinstance(doc, dict) and "policies" in doc:
        doc = doc["policies"]
    assert isinstance(doc, list), "policy list --json: expected a list, got %r" % (doc,)
    names = []
    for p in doc:
        if isinstance(p, str):
            names.append(p)
        else:
            assert isinstance(p, dict) and "name" in p, "bad policy entry %r" % (p,)
            names.append(p["name"])
    return names


def grant(target, user, statements, password=None, policy=None, mechanism=None):
    """Optionally add `user` (when a password is given), then put a policy of `statements`
    (named `policy`, default "<user>-policy") and attach it to `user` (--external without
    a password: a certificate's name, or a user added before)."""
    if password is not None:
        user_add(target, user, password, mechanism=mechanism)
    name = policy or "%s-policy" % user
    policy_put(target, name, policy_doc(*statements))
    policy_attach(target, name, user, external=password is None and user != "ANONYMOUS")
    return name


# ==========================================================================
# Client identities and per-library configuration
# ==========================================================================


class Creds:
    """One way of connecting: protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), SASL
    mechanism/user/password, the CA the client trusts and an optional client CertPair."""

    def __init__(self, protocol="PLAINTEXT", mechanism=None, user=None, password=None, ca=None, client=None,
                 verify_hostname=True):
        self.protocol = protocol
        self.mechanism = mechanism
        self.user = user
        self.password = password
        self.ca = ca
        self.client = client
        self.verify_hostname = verify_hostname

    @property
    def tls(self):
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self):
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def __repr__(self):
        return "Creds(%s, %s, %s, client=%r)" % (self.protocol, self.mechanism, self.user, self.client)


def confluent_conf(creds):
    """librdkafka security settings (merge into a producer/consumer/admin config)."""
    conf = {"security.protocol": creds.protocol}
    if creds.sasl:
        conf.update({"sasl.mechanism": creds.mechanism, "sasl.username": creds.user,
                     "sasl.password": creds.password})
    if creds.tls:
        conf["ssl.ca.location"] = str(creds.ca)
        conf["ssl.endpoint.identification.algorithm"] = "https" if creds.verify_hostname else "none"
        if creds.client is not None:
            conf["ssl.certificate.location"] = str(creds.client.cert)
            conf["ssl.key.location"] = str(creds.client.key)
    return conf


def kafka_python_conf(creds):
    """kafka-python keyword arguments."""
    conf = {"security_protocol": creds.protocol}
    if creds.sasl:
        conf.update(sasl_mechanism=creds.mechanism, sasl_plain_username=creds.user,
                    sasl_plain_password=creds.password)
    if creds.tls:
        conf.update(ssl_cafile=str(creds.ca), ssl_check_hostname=creds.verify_hostname)
        if creds.client is not None:
            conf.update(ssl_certfile=str(creds.client.cert), ssl_keyfile=str(creds.client.key))
    return conf


def kafkajs_conf(creds):
    """What node/security.js turns into kafkajs's `ssl` and `sasl` options."""
    conf = {"ssl": None, "sasl": None}
    if creds.sasl:
        conf["sasl"] = {"mechanism": creds.mechanism.lower(), "username": creds.user, "password": creds.password}
    if creds.tls:
        conf["ssl"] = {"ca": str(creds.ca), "rejectUnauthorized": True}
        if creds.client is not None:
            conf["ssl"].update(cert=str(creds.client.cert), key=str(creds.client.key))
    return conf


def ssl_context(creds):
    ctx = ssl.create_default_context(cafile=str(creds.ca))
    ctx.check_hostname = creds.verify_hostname
    if creds.client is not None:
        ctx.load_cert_chain(str(creds.client.cert), str(creds.client.key))
    return ctx


# ==========================================================================
# SCRAM (RFC 5802) client side, for raw connections and AlterUserScramCredentials
# ==========================================================================


def salted_password(mechanism, password, salt, iterations):
    return hashlib.pbkdf2_hmac(SCRAM_HASH[mechanism]().name, password.encode("utf-8"), salt, iterations)


class ScramClient:
    def __init__(self, mechanism, user, password):
        self.mechanism = mechanism
        self.h = SCRAM_HASH[mechanism]
        self.user = user
        self.password = password
        self.nonce = base64.b64encode(secrets.token_bytes(18)).decode()
        name = user.replace("=", "=3D").replace(",", "=2C")
        self.first_bare = "n=%s,r=%s" % (name, self.nonce)
        self.server_signature = None

    def first(self):
        return ("n,," + self.first_bare).encode("utf-8")

    def final(self, server_first):
        sf = server_first.decode("utf-8")
        fields = dict(kv.split("=", 1) for kv in sf.split(","))
        assert fields["r"].startswith(self.nonce), "server nonce %r does not extend ours" % fields["r"]
        salt = base64.b64decode(fields["s"])
        iterations = int(fields["i"])
        salted = salted_password(self.mechanism, self.password, salt, iterations)
        client_key = hmac.new(salted, b"Client Key", self.h).digest()
        stored_key = self.h(client_key).digest()
        without_proof = "c=biws,r=%s" % fields["r"]
        auth_message = ",".join([self.first_bare, sf, without_proof]).encode("utf-8")
        signature = hmac.new(stored_key, auth_message, self.h).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        server_key = hmac.new(salted, b"Server Key", self.h).digest()
        self.server_signature = hmac.new(server_key, auth_message, self.h).digest()
        return ("%s,p=%s" % (without_proof, base64.b64encode(proof).decode())).encode("utf-8")

    def verify(self, server_final):
        sf = server_final.decode("utf-8")
        assert sf.startswith("v="), "server-final-message is not a verifier: %r" % sf
        return base64.b64decode(sf[2:]) == self.server_signature


# ==========================================================================
# Raw protocol over TLS / SASL
# ==========================================================================


class SaslError(AssertionError):
    def __init__(self, code, message, step):
        super().__init__("SASL %s failed: error %s (%r)" % (step, code, message))
        self.code = code
        self.message = message
        self.step = step


class SecureConn(K.Conn):
    """kproto.Conn over TLS (creds.tls) and authenticated with SASL (creds.sasl), using
    SaslHandshake v1 + SaslAuthenticate (`auth_version`)."""

    def __init__(self, addr, creds=None, timeout=15.0, auth_version=1, authenticate=True):
        creds = creds or Creds()
        host, port = addr.rsplit(":", 1)
        self.timeout = timeout
        self.next_corr = 1
        raw = socket.create_connection((host, int(port)), timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if creds.tls:
            try:
                raw = ssl_context(creds).wrap_socket(raw, server_hostname=host)
            except Exception:
                raw.close()
                raise
        self.sock = raw
        self.creds = creds
        if creds.sasl and authenticate:
            try:
                sasl_login(self, creds.mechanism, creds.user, creds.password, auth_version)
            except Exception:
                self.close()
                raise


def sasl_handshake(conn, mechanism, version=1):
    """Returns (error, enabled mechanisms)."""
    r = conn.roundtrip(SASL_HANDSHAKE, version, K.string(mechanism))
    err = r.i16()
    mechs = r.array(lambda x: x.string())
    return err, mechs


def sasl_authenticate(conn, auth_bytes, version=1):
    """Returns dict(error, message, auth_bytes, session_lifetime_ms)."""
    if version >= 2:
        body = K.uvarint(len(auth_bytes) + 1) + auth_bytes + K.EMPTY_TAGS
        r = conn.roundtrip(SASL_AUTHENTICATE, version, body, header_version=2, response_header_version=1)
        out = dict(error=r.i16(), message=r.compact_string())
        n = r.uvarint()
        out["auth_bytes"] = None if n == 0 else r.take(n - 1)
        out["session_lifetime_ms"] = r.i64()
        r.tagged_fields()
        return out
    r = conn.roundtrip(SASL_AUTHENTICATE, version, K.kbytes(auth_bytes))
    out = dict(error=r.i16())
    s = r.i16()
    out["message"] = None if s < 0 else r.take(s).decode("utf-8", "replace")
    out["auth_bytes"] = r.kbytes()
    out["session_lifetime_ms"] = r.i64() if version >= 1 else None
    return out


def sasl_login(conn, mechanism, user, password, auth_version=1):
    """Handshake + authenticate; raises SaslError naming the failing step and code."""
    err, mechs = sasl_handshake(conn, mechanism)
    if err != 0:
        raise SaslError(err, mechs, "handshake")
    if mechanism == "PLAIN":
        res = sasl_authenticate(conn, b"\0" + user.encode() + b"\0" + password.encode(), auth_version)
        if res["error"] != 0:
            raise SaslError(res["error"], res["message"], "authenticate")
        return res
    sc = ScramClient(mechanism, user, password)
    res = sasl_authenticate(conn, sc.first(), auth_version)
    if res["error"] != 0:
        raise SaslError(res["error"], res["message"], "client-first")
    res = sasl_authenticate(conn, sc.final(res["auth_bytes"]), auth_version)
    if res["error"] != 0:
        raise SaslError(res["error"], res["message"], "client-final")
    assert sc.verify(res["auth_bytes"]), "the broker's SCRAM server signature does not verify"
    return res


def raw_login_error(addr, creds, auth_version=1):
    """Tries a raw SASL login; returns the SaslError (asserts that it failed)."""
    try:
        with SecureConn(addr, creds, auth_version=auth_version):
            pass
    except SaslError as e:
        return e
    raise AssertionError("SASL login as %r unexpectedly succeeded" % (creds,))


# -- CreateTopics v2 / DeleteTopics v1 (classic encodings) -----------------------------


def create_topics(conn, topics, timeout_ms=10000, validate_only=False):
    """topics: [(name, partitions)]; returns {name: (error, message)}."""
    def topic(t):
        return (K.string(t[0]) + K.i32(t[1]) + K.i16(1) + K.i32(0) + K.i32(0))
    body = K.array(topics, topic) + K.i32(timeout_ms) + K.i8(1 if validate_only else 0)
    r = conn.roundtrip(K.CREATE_TOPICS, 2, body)
    r.i32()
    out = {}
    for name, err, msg in r.array(lambda x: (x.string(), x.i16(), _nullable_string(x))):
        out[name] = (err, msg)
    return out


def delete_topics(conn, names, timeout_ms=10000):
    """Returns {name: error}."""
    r = conn.roundtrip(K.DELETE_TOPICS, 1, K.array(names, K.string) + K.i32(timeout_ms))
    r.i32()
    return dict(r.array(lambda x: (x.string(), x.i16())))


def _nullable_string(r):
    n = r.i16()
    return None if n < 0 else r.take(n).decode("utf-8", "replace")


# -- DescribeUserScramCredentials v0 / AlterUserScramCredentials v0 (flexible) ----------


def describe_user_scram_credentials(conn, users):
    """users: list of names or None (all). Returns dict(error, message,
    results={user: dict(error, message, credentials=[(mechanism id, iterations)])})."""
    if users is None:
        body = K.uvarint(0)
    else:
        body = K.uvarint(len(users) + 1) + b"".join(K.compact_string(u) + K.EMPTY_TAGS for u in users)
    body += K.EMPTY_TAGS
    r = conn.roundtrip(DESCRIBE_USER_SCRAM_CREDENTIALS, 0, body, header_version=2, response_header_version=1)
    r.i32()
    out = dict(error=r.i16(), message=r.compact_string(), results={})

    def cred(x):
        c = (x.i8(), x.i32())
        x.tagged_fields()
        return c

    def result(x):
        name = x.compact_string()
        d = dict(error=x.i16(), message=x.compact_string(), credentials=x.compact_array(cred) or [])
        x.tagged_fields()
        out["results"][name] = d

    r.compact_array(result)
    r.tagged_fields()
    return out


def alter_user_scram_credentials(conn, deletions=(), upsertions=()):
    """deletions: [(user, mechanism)]; upsertions: [(user, mechanism, iterations, password)]
    (the salted password is computed here, as Kafka's AdminClient does).
    Returns {user: (error, message)}."""
    def deletion(d):
        return K.compact_string(d[0]) + K.i8(SCRAM_IDS[d[1]]) + K.EMPTY_TAGS

    def upsertion(u):
        user, mech, iterations, password = u
        salt = secrets.token_bytes(24)
        salted = salted_password(mech, password, salt, iterations)
        return (K.compact_string(user) + K.i8(SCRAM_IDS[mech]) + K.i32(iterations)
                + K.uvarint(len(salt) + 1) + salt + K.uvarint(len(salted) + 1) + salted + K.EMPTY_TAGS)

    body = (K.uvarint(len(deletions) + 1) + b"".join(deletion(d) for d in deletions)
            + K.uvarint(len(upsertions) + 1) + b"".join(upsertion(u) for u in upsertions) + K.EMPTY_TAGS)
    r = conn.roundtrip(ALTER_USER_SCRAM_CREDENTIALS, 0, body, header_version=2, response_header_version=1)
    r.i32()
    out = {}

    def result(x):
        name = x.compact_string()
        out[name] = (x.i16(), x.compact_string())
        x.tagged_fields()

    r.compact_array(result)
    r.tagged_fields()
    return out


# ==========================================================================
# Data set-up through a privileged identity
# ==========================================================================


def create_topic(addr, creds, name, partitions=1, timeout=30.0):
    """Creates a topic with librdkafka's AdminClient as `creds` and waits until Metadata
    (as the same identity) shows it with leaders."""
    adm = AdminClient(dict(H.BASE_CONF, **{"bootstrap.servers": addr}, **confluent_conf(creds)))
    fs = adm.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)],
                           request_timeout=15.0, operation_timeout=10.0)
    assert fs[name].result(timeout=timeout) is None
    H.wait_topic(addr, name, partitions, timeout=timeout, adm=adm)


def records_for(n, tag):
    """n small records for partition 0: (key, value) pairs, distinct per tag."""
    t = tag.encode()
    return [(b"%s-k%03d" % (t, i), H.value_for(i, t)[:60]) for i in range(n)]


def produce_raw(conn, topic, pairs, partition=0):
    """One Produce v3 request with the (key, value) pairs; returns the partition result."""
    now = H.now_ms()
    return K.produce_v3(conn, topic, partition, K.encode_batch([(now, k, v, []) for k, v in pairs]))


def fetch_pairs(conn, topic, partition=0):
    """Every record of a partition as [(offset, key, value)] (asserting no error)."""
    recs, _ = K.fetch_all_v4(conn, topic, partition)
    return [(r.offset, r.key, r.value) for r in recs]


# ==========================================================================
# Round trips with each client library
# ==========================================================================


def confluent_roundtrip(addr, creds, topic, n=5, tag="cf"):
    """Produce n records to partition 0 with librdkafka as `creds`, read them back with an
    assign()ed consumer as `creds`; asserts offsets 0..n-1 and every key and value."""
    sec = confluent_conf(creds)
    pairs = records_for(n, tag)
    producer = Producer(H.producer_conf(addr, **sec, **{"message.timeout.ms": 15000}))
    dr = H.produce_all(producer, topic, [dict(key=k, value=v, partition=0) for k, v in pairs], timeout=20)
    assert [(d.partition, d.offset) for d in dr] == [(0, i) for i in range(n)], dr
    consumer = Consumer(H.consumer_conf(addr, **sec))
    try:
        got = H.consume_all(addr, topic, {0: n}, timeout=40, consumer=consumer)
    finally:
        consumer.close()
    assert [(r["offset"], r["key"], r["value"]) for r in got] == [(i, k, v) for i, (k, v) in enumerate(pairs)]


def kafka_python_roundtrip(addr, creds, topic, n=5, tag="kp"):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP
    sec = kafka_python_conf(creds)
    pairs = records_for(n, tag)
    producer = KafkaProducer(bootstrap_servers=addr, acks="all", retries=0, linger_ms=5,
                             client_id="sluice-it-sec-kp", request_timeout_ms=20000,
                             api_version_auto_timeout_ms=15000, **sec)
    try:
        futures = [producer.send(topic, key=k, value=v, partition=0) for k, v in pairs]
        producer.flush(timeout=30)
        metas = [f.get(timeout=30) for f in futures]
    finally:
        producer.close(timeout=10)
    assert [(m.topic, m.partition, m.offset) for m in metas] == [(topic, 0, i) for i in range(n)], metas
    consumer = KafkaConsumer(bootstrap_servers=addr, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="none", client_id="sluice-it-sec-kp-c", fetch_max_wait_ms=100,
                             request_timeout_ms=20000, api_version_auto_timeout_ms=15000, **sec)
    got = []
    try:
        tp = KTP(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            for recs in consumer.poll(timeout_ms=500).values():
                got.extend(recs)
    finally:
        consumer.close()
    assert [(r.offset, r.key, r.value) for r in got] == [(i, k, v) for i, (k, v) in enumerate(pairs)], got


def run_node(script, payload, timeout=120):
    if NODE is None:
        pytest.fail("node is not installed (expected /usr/bin/node)", pytrace=False)
    if not (NODE_DIR / "node_modules" / "kafkajs" / "package.json").exists():
        pytest.fail("kafkajs is not installed: run `npm ci` in %s first" % NODE_DIR, pytrace=False)
    proc = subprocess.run([NODE, str(NODE_DIR / script), json.dumps(payload)], cwd=str(NODE_DIR),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)
    err = proc.stderr.decode("utf-8", "replace")
    lines = [ln for ln in proc.stdout.decode().splitlines() if ln.strip()]
    assert proc.returncode == 0 and lines, "%s exited %d\nstdout:\n%s\nstderr:\n%s" % (
        script, proc.returncode, proc.stdout.decode()[-3000:], err[-5000:])
    return json.loads(lines[-1])


def kafkajs_roundtrip(addr, creds, topic, n=5, tag="js"):
    pairs = records_for(n, tag)
    out = run_node("security.js", dict(cmd="roundtrip", brokers=[addr], topic=topic,
                                       records=[[base64.b64encode(k).decode(), base64.b64encode(v).decode()]
                                                for k, v in pairs], **kafkajs_conf(creds)))
    assert out.get("error") is None, "kafkajs round trip failed: %r" % (out.get("error"),)
    produced = [(int(r["offset"]), base64.b64decode(r["key"]), base64.b64decode(r["value"]))
                for r in out["produced"]]
    fetched = [(int(r["offset"]), base64.b64decode(r["key"]), base64.b64decode(r["value"]))
               for r in out["fetched"]]
    want = [(i, k, v) for i, (k, v) in enumerate(pairs)]
    assert produced == want, "kafkajs produce offsets/records: %r" % produced
    assert fetched == want, "kafkajs fetched: %r" % fetched


ROUNDTRIPS = {"confluent": confluent_roundtrip, "kafka-python": kafka_python_roundtrip,
              "kafkajs": kafkajs_roundtrip}


# ==========================================================================
# Refusal probes: what each client reports when it cannot get in
# ==========================================================================


def confluent_errors(addr, creds, wait=12.0):
    """Starts a librdkafka admin client as `creds` and asks for Metadata until it gets it,
    or until librdkafka reports an error through error_cb (or `wait` seconds pass).
    Returns (metadata or None, [KafkaError] from error_cb and from the failed calls)."""
    reported = []
    conf = dict(H.BASE_CONF, **{"bootstrap.servers": addr, "error_cb": reported.append,
                                "reconnect.backoff.ms": 500, "reconnect.backoff.max.ms": 2000},
                **confluent_conf(creds))
    adm = AdminClient(conf)
    md = None
    calls = []
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            md = adm.list_topics(timeout=1.0)
            break
        except KafkaException as e:
            calls.append(e.args[0])
        if any(e.code() != KafkaError._ALL_BROKERS_DOWN for e in reported):
            break
    adm.poll(0.2)
    return md, reported + calls


def confluent_error_codes(errors):
    return sorted({e.code() for e in errors})


def kafka_python_connect(addr, creds, timeout=12.0):
    """A kafka-python BrokerConnection as `creds`: connect_blocking(), then one Metadata v0
    request. Returns (metadata response or None, [errors]): the errors the connection was
    closed with, or the exception connecting raised. (A TLS 1.3 server refuses a client
    certificate only after the client's side of the handshake is done, so the refusal
    shows on the first read.)"""
    from kafka.conn import BrokerConnection
    from kafka.protocol.metadata import MetadataRequest
    host, port = addr.rsplit(":", 1)
    errors = []
    conn = BrokerConnection(host, int(port), socket.AF_INET, client_id="sluice-it-sec-probe",
                            request_timeout_ms=int(timeout * 1000), api_version=(2, 5, 0),
                            **kafka_python_conf(creds))
    orig_close = conn.close

    def close(error=None):
        if error is not None:
            errors.append(error)
        return orig_close(error)

    conn.close = close
    # kafka-python logs a broken authentication at ERROR with a traceback: keep it quiet.
    logger = logging.getLogger("kafka.conn")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    response = None
    try:
        if conn.connect_blocking(timeout=timeout):
            f = conn.send(MetadataRequest[0]([]))
            deadline = time.monotonic() + timeout
            while not f.is_done and time.monotonic() < deadline and not conn.disconnected():
                for resp, fut in conn.recv():
                    fut.success(resp)
                time.sleep(0.02)
            if f.is_done and f.succeeded():
                response = f.value
            elif f.is_done:
                errors.append(f.exception)
    except Exception as e:  # the exception kafka-python raises is what the tests assert on
        errors.append(e)
    finally:
        logger.setLevel(level)
        try:
            orig_close()
        except Exception:
            pass
    return response, errors


def kafkajs_connect(addr, creds, timeout=60):
    """node/security.js `connect`: admin connect + fetchTopicMetadata; returns its JSON
    ({ok, topics} or {error: {name, message, type, code, cause}, saslResponses: [...]})."""
    return run_node("security.js", dict(cmd="connect", brokers=[addr], **kafkajs_conf(creds)), timeout=timeout)


# ==========================================================================
# Waiting
# ==========================================================================


def wait_until(what, fn, timeout=15.0, interval=0.2):
    """sluice_helpers.wait_until, with client errors and closed connections counting as
    "not yet"."""
    return H.wait_until(what, fn, timeout, interval,
                        errors=(AssertionError, OSError, KafkaException, K.ConnectionClosed))


def confluent_metadata_topics(addr, creds, timeout=10):
    adm = AdminClient(dict(H.BASE_CONF, **{"bootstrap.servers": addr}, **confluent_conf(creds)))
    return adm.list_topics(timeout=timeout)


def consume_from(addr, creds, topic, n, timeout=30.0):
    """n records of partition 0 read by librdkafka as `creds`: [(offset, key, value)]."""
    c = Consumer(H.consumer_conf(addr, **confluent_conf(creds)))
    out = []
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            for m in c.consume(num_messages=100, timeout=0.5):
                if m.error() is None:
                    out.append((m.offset(), m.key(), m.value()))
                elif m.error().code() != KafkaError._PARTITION_EOF:
                    raise AssertionError("consumer error %r" % m.error())
    finally:
        c.close()
    return out
