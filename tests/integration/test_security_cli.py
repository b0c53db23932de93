"""The security command line: `sluice user` and `sluice policy` offline (--data-dir) and
online (--server with --auth), `serve --config FILE`, and TLS certificate reload."""

import json
import os
import re
import shutil
import signal

import pytest

import kproto as K
import security_helpers as S
import sluice_helpers as H

ADMIN_PW = "first-admin-pw"
BOTH = ["SCRAM-SHA-256", "SCRAM-SHA-512"]
SASL_LISTENS = ["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"]


def sasl(b, mech, user, password):
    return S.Creds("SASL_PLAINTEXT", mech, user, password)


def can_login(b, mech, user, password):
    """True if a raw SASL login works; False on SASL_AUTHENTICATION_FAILED (anything else fails)."""
    try:
        with S.SecureConn(b.addr("SASL_PLAINTEXT"), sasl(b, mech, user, password)):
            return True
    except S.SaslError as e:
        assert e.code == S.SASL_AUTHENTICATION_FAILED, e
        return False


def admin_setup(b, policy_name="admin-all"):
    """Offline: the first admin user and a policy giving it everything."""
    t = S.Target.stopped(b)
    S.user_add(t, "admin", ADMIN_PW)
    S.policy_put(t, policy_name, S.policy_doc(S.allow("*", "sluice:*")))
    S.policy_attach(t, policy_name, "admin")
    return t


# --------------------------------------------------------------------------
# Offline
# --------------------------------------------------------------------------


def test_offline_first_admin_then_login(secure_broker_factory, request):
    b = secure_broker_factory(SASL_LISTENS, start=False)
    t = S.Target.stopped(b)
    assert S.user_list(t) == {}
    S.user_add(t, "admin", ADMIN_PW)
    S.user_add(t, "reader", "reader-pw", mechanism="SCRAM-SHA-256", iterations=4096)
    assert S.user_list(t) == {"admin": BOTH, "reader": ["SCRAM-SHA-256"]}
    doc = S.policy_doc(S.allow("*", "sluice:*"))
    S.policy_put(t, "admin-all", doc)
    assert S.policy_get(t, "admin-all") == doc
    S.policy_attach(t, "admin-all", "admin")
    assert "admin-all" in S.policy_names(S.policy_list(t))

    b.start()
    topic = H.unique_topic("cli-" + request.node.name)
    assert can_login(b, "SCRAM-SHA-512", "admin", ADMIN_PW)
    admin = sasl(b, "PLAIN", "admin", ADMIN_PW)
    S.create_topic(b.addr("SASL_PLAINTEXT"), admin, topic, 1)
    S.confluent_roundtrip(b.addr("SASL_PLAINTEXT"), admin, topic, n=4, tag="offline-admin")
    assert can_login(b, "SCRAM-SHA-256", "reader", "reader-pw")
    assert not can_login(b, "SCRAM-SHA-512", "reader", "reader-pw")   # only SHA-256 was made
    assert not can_login(b, "PLAIN", "admin", "wrong")
    with S.SecureConn(b.addr("SASL_PLAINTEXT"), sasl(b, "PLAIN", "reader", "reader-pw")) as conn:
        r = S.produce_raw(conn, topic, [(b"k", b"v")])   # reader has no policy
        assert r["error"] == S.TOPIC_AUTHORIZATION_FAILED, r


def test_user_list_json_shape(secure_broker_factory):
    """The specification: `user list --json` prints a list of {"name", "mechanisms"}."""
    b = secure_broker_factory(SASL_LISTENS, start=False)
    t = S.Target.stopped(b)
    S.user_add(t, "zed", "zed-pw", mechanism="SCRAM-SHA-512")
    doc = S.user_list_doc(t)
    assert doc == {"users": [{"name": "zed", "mechanisms": ["SCRAM-SHA-512"],
                              "credentials": [{"mechanism": "SCRAM-SHA-512", "iterations": 4096}],
                              "iterations": 4096}]}, doc


def test_offline_refused_while_running(secure_broker_factory):
    b = secure_broker_factory(SASL_LISTENS, start=False)
    t = admin_setup(b)
    b.start()
    for args, stdin in [(["user", "add", "sneaky"], "pw\n"), (["user", "remove", "admin"], None),
                        (["policy", "attach", "admin-all", "--user", "sneaky"], None),
                        (["policy", "delete", "admin-all"], None)]:
        msg = t.fails(args, stdin=stdin)
        assert re.search(r"running|in use|lock|busy", msg, re.I), "unclear error for %r: %r" % (args, msg)
    assert can_login(b, "PLAIN", "admin", ADMIN_PW)
    b.stop()
    assert S.user_list(t) == {"admin": BOTH}
    assert S.policy_get(t, "admin-all") == S.policy_doc(S.allow("*", "sluice:*"))


# --------------------------------------------------------------------------
# Online
# --------------------------------------------------------------------------


@pytest.fixture
def online_broker(secure_broker_factory, tmp_path):
    """A broker with an HTTP listener and a TLS certificate (so that the HTTP listener can
    serve https, which `--auth` needs); `.online(user, password)` makes a Target."""
    pki = S.Pki(tmp_path / "pki-online")
    srv = pki.server()
    b = secure_broker_factory(SASL_LISTENS, extra_args=["--http", "https://127.0.0.1:0"] + S.tls_flags(pki, srv),
                              start=False)
    admin_setup(b)
    b.start()
    assert b.http, "no 'listening http' line"
    b.online = lambda user, password: S.online_target(b, user, password, tmp_path / "online", pki.ca_cert)
    return b


def test_online_user_commands(online_broker, tmp_path):
    b = online_broker
    on = b.online("admin", ADMIN_PW)
    S.user_add(on, "bob", "bob-pw-1")
    S.user_add(on, "carol", "carol-pw", mechanism="SCRAM-SHA-512", iterations=8192)
    assert S.user_list(on) == {"admin": BOTH, "bob": BOTH, "carol": ["SCRAM-SHA-512"]}
    for mech in S.MECHANISMS:
        assert can_login(b, mech, "bob", "bob-pw-1"), mech
    assert can_login(b, "SCRAM-SHA-512", "carol", "carol-pw")
    assert can_login(b, "PLAIN", "carol", "carol-pw")
    assert not can_login(b, "SCRAM-SHA-256", "carol", "carol-pw")
    with S.SecureConn(b.addr("SASL_PLAINTEXT"), sasl(b, "PLAIN", "admin", ADMIN_PW)) as conn:
        r = S.describe_user_scram_credentials(conn, ["carol", "bob"])
    assert r["error"] == 0, r
    assert r["results"]["carol"]["credentials"] == [(2, 8192)], r
    assert sorted(m for m, _ in r["results"]["bob"]["credentials"]) == [1, 2], r

    S.user_passwd(on, "bob", "bob-pw-2")
    assert not can_login(b, "SCRAM-SHA-256", "bob", "bob-pw-1")
    assert can_login(b, "SCRAM-SHA-256", "bob", "bob-pw-2")
    assert can_login(b, "PLAIN", "bob", "bob-pw-2")
    # One mechanism's password (over HTTP): the other mechanism keeps its own.
    on.ok(["user", "passwd", "bob", "--mechanism", "SCRAM-SHA-512"], stdin="bob-pw-3\n")
    assert can_login(b, "SCRAM-SHA-512", "bob", "bob-pw-3")
    assert not can_login(b, "SCRAM-SHA-512", "bob", "bob-pw-2")
    assert can_login(b, "SCRAM-SHA-256", "bob", "bob-pw-2")
    assert S.user_list(on)["bob"] == BOTH

    S.user_remove(on, "bob")
    assert not can_login(b, "PLAIN", "bob", "bob-pw-2")
    assert not can_login(b, "PLAIN", "bob", "bob-pw-3")
    assert S.user_list(on) == {"admin": BOTH, "carol": ["SCRAM-SHA-512"]}

    # Wrong admin password: refused, nothing changes.
    bad = b.online("admin", "not-the-password")
    bad.fails(["user", "add", "eve"], stdin="eve-pw\n")
    # A user without KafkaAlter on the cluster is not an admin; KafkaDescribe lets it list.
    S.user_add(on, "viewer", "viewer-pw")
    S.grant(on, "viewer", [S.allow("KafkaDescribe", "sluice:cluster")])
    viewer = b.online("viewer", "viewer-pw")
    assert set(S.user_list(viewer)) == {"admin", "carol", "viewer"}
    viewer.fails(["user", "add", "eve"], stdin="eve-pw\n")
    viewer.fails(["policy", "attach", "admin-all", "--user", "viewer"])
    no_rights = b.online("carol", "carol-pw")   # carol has no policy
    no_rights.fails(["user", "list", "--json"])
    assert set(S.user_list(on)) == {"admin", "carol", "viewer"}
    assert not can_login(b, "PLAIN", "eve", "eve-pw")


def test_online_policy_commands(online_broker, tmp_path, request):
    b = online_broker
    on = b.online("admin", ADMIN_PW)
    topic = H.unique_topic("pol-" + request.node.name)
    S.create_topic(b.addr("SASL_PLAINTEXT"), sasl(b, "PLAIN", "admin", ADMIN_PW), topic, 1)
    S.user_add(on, "alice", "alice-pw")
    doc = S.policy_doc(S.allow(["KafkaWrite", "KafkaRead"], "sluice:topic:pol-*"),
                       S.deny("KafkaWrite", "sluice:topic:pol-never-*"))
    S.policy_put(on, "alice-topics", doc)
    assert S.policy_get(on, "alice-topics") == doc
    assert sorted(S.policy_names(S.policy_list(on))) == ["admin-all", "alice-topics"]

    creds = sasl(b, "SCRAM-SHA-256", "alice", "alice-pw")
    addr = b.addr("SASL_PLAINTEXT")
    with S.SecureConn(addr, creds) as conn:
        assert S.produce_raw(conn, topic, [(b"k0", b"v0")])["error"] == S.TOPIC_AUTHORIZATION_FAILED
        S.policy_attach(on, "alice-topics", "alice")
        r = S.produce_raw(conn, topic, [(b"k1", b"v1")])
        assert (r["error"], r["base_offset"]) == (0, 0), r
        S.policy_detach(on, "alice-topics", "alice")
        assert S.produce_raw(conn, topic, [(b"k2", b"v2")])["error"] == S.TOPIC_AUTHORIZATION_FAILED
        assert K.metadata_v1(conn, None)["topics"] == {}
    S.policy_delete(on, "alice-topics")
    on.fails(["policy", "get", "alice-topics"])
    assert S.policy_names(S.policy_list(on)) == ["admin-all"]
    # A malformed document is refused with a message, and nothing is stored.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"Version": "1", "Statement": [{"Effect": "Perhaps", "Action": "KafkaRead",
                                                              "Resource": "sluice:topic:x"}]}))
    msg = on.fails(["policy", "put", "broken", str(bad)])
    assert "Effect" in msg or "Perhaps" in msg, msg
    assert S.policy_names(S.policy_list(on)) == ["admin-all"]
    with S.SecureConn(addr, sasl(b, "PLAIN", "admin", ADMIN_PW)) as conn:
        assert S.fetch_pairs(conn, topic) == [(0, b"k1", b"v1")]
    # Everything done online is in the catalog: the offline view agrees after a stop.
    b.stop()
    off = S.Target.offline(b.data_dir)
    assert S.policy_names(S.policy_list(off)) == ["admin-all"]
    assert S.user_list(off) == {"admin": BOTH, "alice": BOTH}


def test_online_over_https(secure_broker_factory, tmp_path):
    """With --tls-cert the HTTP listener serves https; `--server https://... --tls-ca`
    works, and a CA the server's certificate does not chain to is refused."""
    pki = S.Pki(tmp_path / "pki")
    srv = pki.server()
    b = secure_broker_factory(SASL_LISTENS, extra_args=["--http", "https://127.0.0.1:0"] + S.tls_flags(pki, srv),
                              start=False)
    admin_setup(b)
    b.start()
    assert b.http.startswith("https://"), b.http
    http = b.http.split("://", 1)[-1]
    assert S.speaks_tls(http)
    on = S.Target.online(http, "admin", ADMIN_PW, tmp_path, https=True, tls_ca=pki.ca_cert)
    S.user_add(on, "dora", "dora-pw")
    assert set(S.user_list(on)) == {"admin", "dora"}
    other = S.Pki(tmp_path / "pki-other", ca_cn="another-ca")
    wrong_ca = S.Target.online(http, "admin", ADMIN_PW, tmp_path, https=True, tls_ca=other.ca_cert)
    msg = wrong_ca.fails(["user", "add", "eve"], stdin="eve-pw\n")
    assert re.search(r"certificate|verify|tls|ssl", msg, re.I), msg
    assert set(S.user_list(on)) == {"admin", "dora"}
    assert can_login(b, "SCRAM-SHA-512", "dora", "dora-pw")


# --------------------------------------------------------------------------
# --config FILE
# --------------------------------------------------------------------------


def observe(b, pki):
    """What a client sees of a broker configured as in test_config_file_equivalent_to_flags."""
    out = {"listeners": [s.split("://")[0] if "://" in s else "PLAINTEXT" for s in b.listeners]}
    with S.SecureConn(b.addr("SASL_PLAINTEXT")) as conn:
        out["mechanisms"] = S.sasl_handshake(conn, "PLAIN")
    out["scram512"] = can_login(b, "SCRAM-SHA-512", "admin", ADMIN_PW)
    ssl_creds = S.Creds("SASL_SSL", "SCRAM-SHA-512", "admin", ADMIN_PW, ca=pki.ca_cert)
    with S.SecureConn(b.addr("SASL_SSL"), ssl_creds) as conn:
        out["sasl_ssl_brokers"] = [x["port"] for x in K.metadata_v1(conn, None)["brokers"]]
    out["sasl_ssl_port"] = int(b.addr("SASL_SSL").rsplit(":", 1)[1])
    out["cert"] = S.tls_peer_cert(b.addr("SASL_SSL"), pki.ca_cert)
    with S.SecureConn(b.bootstrap) as conn:   # ANONYMOUS: `required`, no policy
        out["anonymous_create"] = S.create_topics(conn, [("anon-topic", 1)])["anon-topic"][0]
    return out


def test_config_file_equivalent_to_flags(secure_broker_factory, tmp_path):
    pki = S.Pki(tmp_path / "pki")
    srv = pki.server()
    listens = ["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0", "SASL_SSL://127.0.0.1:0"]

    by_flags = secure_broker_factory(listens, extra_args=S.tls_flags(pki, srv) + [
        "--sasl-mechanisms", "SCRAM-SHA-512", "--authorization", "required"], start=False)
    admin_setup(by_flags)
    by_flags.start()

    by_file = secure_broker_factory(None, kafka_lines=3, data_dir_flag=False, start=False)
    cfg = tmp_path / "sluice.toml"
    cfg.write_text("\n".join([
        "# sluice serve configuration (TOML; keys are the long flag names)",
        'data-dir = %s' % json.dumps(str(by_file.data_dir)),
        'listen = %s' % json.dumps(listens),
        'tls-cert = %s' % json.dumps(str(srv.cert)),
        'tls-key = %s' % json.dumps(str(srv.key)),
        'sasl-mechanisms = "SCRAM-SHA-512"',
        'authorization = "required"',
    ]) + "\n")
    by_file.extra_args = ["--config", str(cfg)]
    admin_setup(by_file)
    by_file.start()

    want = {"listeners": ["PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL"],
            "mechanisms": (S.UNSUPPORTED_SASL_MECHANISM, ["SCRAM-SHA-512"]), "scram512": True,
            "cert": ("localhost", srv.serial), "anonymous_create": S.TOPIC_AUTHORIZATION_FAILED}
    for name, b in [("flags", by_flags), ("config file", by_file)]:
        got = observe(b, pki)
        assert got["sasl_ssl_brokers"] == [got.pop("sasl_ssl_port")], (name, got)
        got.pop("sasl_ssl_brokers")
        assert got == want, "%s: %r" % (name, got)


def test_command_line_replaces_config_file_settings(secure_broker_factory, tmp_path):
    """A flag on the command line replaces the file's setting for that key, the whole
    list of a repeatable one included; keys it does not give still come from the file."""
    cfg = tmp_path / "sluice.toml"
    cfg.write_text("\n".join([
        'listen = ["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"]',
        'advertise = ["PLAINTEXT://127.0.0.1:19997", "PLAINTEXT://127.0.0.1:19999"]',
        'auto-create-topics = true',
        'default-partitions = 3',
    ]) + "\n")
    b = secure_broker_factory(["127.0.0.1:0"], extra_args=[
        "--config", str(cfg), "--advertise", "PLAINTEXT://127.0.0.1:19998"])
    with S.SecureConn(b.bootstrap) as conn:
        md = K.metadata_v1(conn, ["auto-made"])
    assert [x["port"] for x in md["brokers"]] == [19998], md["brokers"]
    assert md["topics"]["auto-made"]["error"] == 0, md["topics"]
    assert len(md["topics"]["auto-made"]["partitions"]) == 3, md["topics"]
    assert b.listeners == [b.bootstrap], (b.listeners, b.stdout_lines)


# --------------------------------------------------------------------------
# TLS certificate reload
# --------------------------------------------------------------------------


def install(pair, cert_path, key_path):
    """Puts a certificate and its key in place, each file replaced atomically."""
    for src, dst in ((pair.key, key_path), (pair.cert, cert_path)):
        tmp = dst.with_name(dst.name + ".new")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)


def test_tls_certificate_reload(secure_broker_factory, tmp_path, request):
    """New certificate files are served to new connections after SIGHUP, and without a
    signal once the files change (checked every 5 s); open connections keep working."""
    pki = S.Pki(tmp_path / "pki")
    first = pki.server("server1", cn="localhost")
    second = pki.server("server2", cn="sluice-reloaded")
    third = pki.server("server3", cn="sluice-watched")
    live = tmp_path / "live"
    live.mkdir()
    cert_path, key_path = live / "server.pem", live / "server.key"
    install(first, cert_path, key_path)
    b = secure_broker_factory(["127.0.0.1:0", "SSL://127.0.0.1:0"],
                              extra_args=["--tls-cert", str(cert_path), "--tls-key", str(key_path)])
    addr = b.addr("SSL")
    ca = pki.ca_cert
    assert S.tls_peer_cert(addr, ca) == ("localhost", first.serial)
    topic = H.unique_topic("reload-" + request.node.name)
    S.create_topic(b.bootstrap, S.Creds(), topic, 1)   # PLAINTEXT + SSL only: permissive
    early = S.SecureConn(addr, S.Creds("SSL", ca=ca))
    try:
        assert S.produce_raw(early, topic, [(b"k0", b"before reload")])["error"] == 0

        install(second, cert_path, key_path)
        b.proc.send_signal(signal.SIGHUP)
        S.wait_until("the SIGHUP-reloaded certificate", lambda: S.tls_peer_cert(addr, ca) == (
            "sluice-reloaded", second.serial), timeout=5)
        r = S.produce_raw(early, topic, [(b"k1", b"after reload, old connection")])
        assert (r["error"], r["base_offset"]) == (0, 1), r

        install(third, cert_path, key_path)
        S.wait_until("the certificate picked up by the file check", lambda: S.tls_peer_cert(addr, ca) == (
            "sluice-watched", third.serial), timeout=15)
        b.assert_alive()
    finally:
        early.close()
    # Clients keep working over the new certificate.
    with S.SecureConn(addr, S.Creds("SSL", ca=ca)) as conn:
        assert S.fetch_pairs(conn, topic) == [(0, b"k0", b"before reload"), (1, b"k1", b"after reload, old connection")]
    topic2 = H.unique_topic("reload2-" + request.node.name)
    S.create_topic(b.bootstrap, S.Creds(), topic2, 1)
    S.confluent_roundtrip(addr, S.Creds("SSL", ca=ca), topic2, n=3, tag="reloaded")


# --------------------------------------------------------------------------
# Data directories, terminal prompts, attachments to unknown users
# --------------------------------------------------------------------------


def test_offline_refuses_a_directory_that_is_not_a_data_dir(secure_broker_factory, tmp_path):
    b = secure_broker_factory(SASL_LISTENS, start=False)
    t = S.Target.stopped(b)
    S.user_add(t, "admin", ADMIN_PW)
    typo = tmp_path / (b.data_dir.name + "x")
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "p.json").write_text(json.dumps(S.policy_doc(S.allow("*", "sluice:*"))))
    for where, why in [(typo, "it does not exist"), (empty, "it has no catalog.db")]:
        for args, stdin in [(["user", "add", "alice"], "alice-pw\n"), (["user", "list"], None),
                            (["policy", "put", "p", str(tmp_path / "p.json")], None),
                            (["policy", "attach", "p", "--user", "admin"], None)]:
            rc, out, err = S.sluice(args + ["--data-dir", str(where)], stdin=stdin)
            assert rc != 0, (args, where, out)
            assert "is not a Sluice data directory (%s)" % why in err and "--init" in err, err
    assert not typo.exists()
    assert os.listdir(empty) == []
    # --init makes a new (or empty) directory a data directory; an existing one is used as is.
    for where in (typo, empty):
        init = S.Target.offline(where, init=True)
        S.user_add(init, "first", "first-pw")
        assert S.user_list(S.Target.offline(where)) == {"first": BOTH}
    S.user_add(S.Target.offline(b.data_dir, init=True), "second", "second-pw")
    assert S.user_list(t) == {"admin": BOTH, "second": BOTH}
    # A non-empty directory that is not one stays untouched even with --init.
    other = tmp_path / "project"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    msg = S.Target.offline(other, init=True).fails(["user", "add", "x"], stdin="x-pw\n")
    assert "is not empty and not a Sluice data directory" in msg, msg
    assert os.listdir(other) == ["notes.txt"]


def test_quick_start_first_admin_with_init(secure_broker_factory, tmp_path):
    """docs/security.md's quick start: the first admin before the broker's first start."""
    b = secure_broker_factory(SASL_LISTENS, start=False)
    assert not (b.data_dir / "catalog.db").exists()
    t = S.Target.offline(b.data_dir, init=True)
    S.user_add(t, "admin", ADMIN_PW)
    S.policy_put(t, "admin", S.policy_doc(S.allow("*", "sluice:*")))
    S.policy_attach(t, "admin", "admin")
    b.start()
    assert can_login(b, "SCRAM-SHA-256", "admin", ADMIN_PW)
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                     "sasl.username=admin\nsasl.password=%s\n" % ADMIN_PW)
    out = S.sluice_ok(["topic", "create", "orders", "--partitions", "3", "--bootstrap", b.addr("SASL_PLAINTEXT"),
                       "--command-config", str(props)])
    assert out.strip() == "created topic 'orders' with 3 partitions", out
    S.confluent_roundtrip(b.addr("SASL_PLAINTEXT"), sasl(b, "SCRAM-SHA-512", "admin", ADMIN_PW), "orders", n=3,
                          tag="quick-start")


def test_policy_attach_to_unknown_user_is_refused(secure_broker_factory, tmp_path):
    pki = S.Pki(tmp_path / "pki")
    b = secure_broker_factory(SASL_LISTENS, extra_args=S.tls_flags(pki, pki.server()) + [
        "--http", "https://127.0.0.1:0"], start=False)
    t = admin_setup(b)
    S.policy_put(t, "reader", S.policy_doc(S.allow("KafkaDescribe", "sluice:cluster")))
    msg = t.fails(["policy", "attach", "reader", "--user", "admni"])
    assert "no user 'admni'" in msg and "--external" in msg, msg
    S.policy_attach(t, "reader", "ANONYMOUS")   # the PLAINTEXT principal needs no user
    S.policy_attach(t, "reader", "CN-carol", external=True)
    b.start()
    on = S.online_target(b, "admin", ADMIN_PW, tmp_path / "work", pki.ca_cert)
    msg = on.fails(["policy", "attach", "reader", "--user", "nobody"])
    assert "no user 'nobody'" in msg, msg
    S.policy_attach(on, "reader", "dave", external=True)
    users = {p["name"]: sorted(p["users"]) for p in S.policy_list(on)["policies"]}
    assert users["reader"] == ["ANONYMOUS", "CN-carol", "dave"], users


def run_in_pty(args, answers, timeout=30):
    """Runs `sluice ARGS` with a terminal as stdin/stdout/stderr; writes each answer once
    the terminal shows its prompt. Returns (exit code, everything the terminal showed)."""
    import pty
    import select
    import time
    pid, fd = pty.fork()
    if pid == 0:   # the child: exec at once
        os.execv(S.conftest.require_binary(), [S.conftest.require_binary()] + [str(a) for a in args])
    shown = b""
    deadline = time.monotonic() + timeout
    pending = list(answers)
    try:
        while time.monotonic() < deadline:
            if pending and shown.rstrip().endswith(pending[0][0].encode()):
                os.write(fd, pending.pop(0)[1].encode() + b"\n")
                shown += b"<sent>"
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:   # EIO: the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        else:
            os.kill(pid, signal.SIGKILL)
            raise AssertionError("no answer on the terminal within %ss: %r" % (timeout, shown))
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), shown.decode("utf-8", "replace")


def test_passwords_are_prompted_on_a_terminal_without_echo(secure_broker_factory):
    b = secure_broker_factory(SASL_LISTENS, start=False)
    t = S.Target.stopped(b)
    where = ["--data-dir", str(b.data_dir)]
    rc, shown = run_in_pty(["user", "add", "alice"] + where,
                           [("new password for alice:", "typed-secret-1"), ("again, to confirm:", "typed-secret-1")])
    assert rc == 0, shown
    assert "typed-secret-1" not in shown, "the password was echoed: %r" % shown
    assert "added user alice" in shown, shown
    # Two different answers: refused, the user keeps its password.
    rc, shown = run_in_pty(["user", "passwd", "alice"] + where,
                           [("new password for alice:", "typed-secret-2"), ("again, to confirm:", "typed-secret-3")])
    assert rc != 0 and "the passwords do not match" in shown, shown
    assert "typed-secret" not in shown, shown
    rc, shown = run_in_pty(["user", "add", "bob"] + where,
                           [("new password for bob:", "bob-secret"), ("again, to confirm:", "bob-typo")])
    assert rc != 0 and "do not match" in shown, shown
    assert S.user_list(t) == {"alice": BOTH}
    b.start()
    assert can_login(b, "SCRAM-SHA-256", "alice", "typed-secret-1")
    assert not can_login(b, "SCRAM-SHA-256", "alice", "typed-secret-2")
    # stdin that is not a terminal keeps working: the first line is the password.
    b.stop()
    S.user_passwd(t, "alice", "piped-secret")
    b.start()
    assert can_login(b, "SCRAM-SHA-512", "alice", "piped-secret")
