"""The web console (/ui/, docs/console.md) in headless Chromium (Debian's `chromium`,
driven by playwright-core from node/console.mjs), against a broker with users and
policies, HTTPS, and real data:
  admin  everything: every page loads and shows the data produced here
  alice  KafkaRead on sluice:topic:co-orders and KafkaDescribe on sluice:group:co-*,
         nothing on the cluster: no admin page, other topics refused
  carol  alice's rights, no password: a client certificate (CN=carol) on the HTTPS
         listener, which asks for one (--http-tls-client-auth requested)
With SCREENSHOTS=DIR in the environment the pages' screenshots go there (docs/console/).
"""

import base64
import json
import os
import shutil
import ssl
import subprocess
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import security_helpers as S
import sluice_helpers as H

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE = "/usr/bin/node" if os.path.exists("/usr/bin/node") else shutil.which("node")
CHROMIUM = "/usr/bin/chromium"
ADMIN_PW = "admin-secret"
ALICE_PW = "alice-secret"
TOPIC = "co-orders"
SECRET = "co-secret"
PARTITIONS = 3
N = 30
GROUP_APP = "co-app"
GROUP_LAG = "co-lag"
LISTENS = ["127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"]


def run_console(scenario, args, timeout=180):
    if NODE is None or not os.path.exists(CHROMIUM):
        pytest.fail("node and chromium are needed (scripts/install-deps.sh test)", pytrace=False)
    if not (NODE_DIR / "node_modules" / "playwright-core" / "package.json").exists():
        pytest.fail("playwright-core is not installed: run `npm ci` in %s (make test-deps does)" % NODE_DIR,
                    pytrace=False)
    proc = subprocess.run([NODE, str(NODE_DIR / "console.mjs"), scenario, json.dumps(args)],
                          cwd=str(NODE_DIR), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, "console.mjs exited %d\nstderr:\n%s" % (proc.returncode, err[-5000:])
    lines = [ln for ln in proc.stdout.decode().splitlines() if ln.strip()]
    assert lines, "console.mjs printed nothing\nstderr:\n%s" % err[-5000:]
    out = json.loads(lines[-1])
    assert "error_thrown" not in out, "%s failed in the browser:\n%s\n%r" % (scenario, out["error_thrown"], out)
    assert out["page_errors"] == [], out["page_errors"]
    return out


class Env:
    pass


def https_call(e, method, path, body=None, user="admin", password=ADMIN_PW, headers=None, client=None):
    ctx = ssl.create_default_context(cafile=str(e.pki.ca_cert))
    if client is not None:
        ctx.load_cert_chain(str(client.cert), str(client.key))
    req = urllib.request.Request("https://%s%s" % (e.https, path), data=body, method=method,
                                 headers=dict(headers or {}))
    if user:
        token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        req.add_header("Authorization", "Basic " + token)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


@pytest.fixture(scope="module")
def env(module_secure_broker_factory, tmp_path_factory):
    work = tmp_path_factory.mktemp("console")
    pki = S.Pki(work / "pki")
    server = pki.server()
    b = module_secure_broker_factory(
        LISTENS, extra_args=S.tls_flags(pki, server) + [
            "--http", "https://127.0.0.1:0", "--tls-client-ca", str(pki.ca_cert),
            "--http-tls-client-auth", "requested"], start=False)
    t = S.Target.offline(b.data_dir, workdir=work / "policies", init=True)
    S.grant(t, "admin", [S.allow("*", "sluice:*")], password=ADMIN_PW)
    restricted = [S.allow(["KafkaRead"], ["sluice:topic:co-orders"]),
                  S.allow(["KafkaRead", "KafkaDescribe"], ["sluice:group:co-*"])]
    S.grant(t, "alice", restricted, password=ALICE_PW)
    S.grant(t, "carol", restricted)  # --external: a certificate's name
    b.start()
    e = Env()
    e.broker, e.pki = b, pki
    e.carol = pki.client("carol")
    e.https = b.http.split("://", 1)[-1]
    e.kafka = b.addr("SASL_PLAINTEXT")
    admin = S.Creds("SASL_PLAINTEXT", "SCRAM-SHA-256", "admin", ADMIN_PW)
    sec = S.confluent_conf(admin)
    S.create_topic(e.kafka, admin, TOPIC, PARTITIONS)
    S.create_topic(e.kafka, admin, SECRET, 1)
    # Record i: partition i % 3, a timestamp a second apart, a key, a JSON value, a header.
    e.base_ms = H.now_ms() - 3_600_000
    producer = Producer(H.producer_conf(e.kafka, **sec))
    H.produce_all(producer, TOPIC, [
        dict(key=b"order-%d" % i, value=b'{"n": %d, "amount": %d}' % (i, 10 * i), partition=i % PARTITIONS,
             timestamp=e.base_ms + 1000 * i, headers=[("source", b"web")]) for i in range(N)])
    H.produce_all(producer, SECRET, [dict(key=b"s", value=b"hidden", partition=0)])
    # co-app has read everything; co-lag only the first 2 records of each partition.
    per_part = N // PARTITIONS
    for group, committed in ((GROUP_APP, per_part), (GROUP_LAG, 2)):
        c = Consumer(H.consumer_conf(e.kafka, **sec, **{"group.id": group}))
        c.commit(offsets=[TopicPartition(TOPIC, p, committed) for p in range(PARTITIONS)], asynchronous=False)
        c.close()
    e.lag = N - 2 * PARTITIONS
    status, _, body = https_call(e, "POST", "/v1/expansions", json.dumps({
        "topic": TOPIC, "target": "shop.orders", "backfill": True,
        "schema": {"fields": [{"name": "n", "type": "int64"}, {"name": "amount", "type": "int64"}]}}).encode())
    assert status == 201, body
    e.shots = os.environ.get("SCREENSHOTS")
    return e


def base_args(e, user="admin", password=ADMIN_PW):
    return {"url": "https://" + e.https, "user": user, "password": password, "shots": e.shots}


def test_files_served_with_caching_and_gzip_without_login(env):
    status, headers, body = https_call(env, "GET", "/ui/", user=None, headers={"Accept-Encoding": "gzip"})
    assert status == 200 and headers["Content-Encoding"] == "gzip", headers
    import gzip
    html = gzip.decompress(body).decode()
    assert '<script type="module" src="app.js">' in html
    etag = headers["ETag"]
    assert headers["Cache-Control"] == "no-cache"
    status, _, body = https_call(env, "GET", "/ui/", user=None, headers={"If-None-Match": etag})
    assert status == 304 and body == b""
    status, headers, body = https_call(env, "GET", "/ui/app.js", user=None)
    assert status == 200 and headers["Content-Type"].startswith("text/javascript") and len(body) > 10000
    assert https_call(env, "GET", "/ui/nothing.js", user=None)[0] == 404
    # The data is not: the API still asks for credentials, and a script gets no challenge.
    status, headers, _ = https_call(env, "GET", "/v1/whoami", user=None,
                                    headers={"X-Requested-With": "sluice-console"})
    assert status == 401 and "WWW-Authenticate" not in headers
    status, headers, _ = https_call(env, "GET", "/v1/whoami", user=None)
    assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
    status, _, body = https_call(env, "GET", "/v1/whoami", user="alice", password=ALICE_PW)
    assert status == 200 and json.loads(body) == {
        "user": "alice", "authenticated": True, "certificate": False, "security": True,
        "cluster": {"describe": False, "alter": False}}
    # Mutual TLS: the client certificate names the user, unless Basic credentials are sent.
    status, _, body = https_call(env, "GET", "/v1/whoami", user=None, client=env.carol)
    assert status == 200 and json.loads(body) == {
        "user": "carol", "authenticated": True, "certificate": True, "security": True,
        "cluster": {"describe": False, "alter": False}}
    status, _, body = https_call(env, "GET", "/v1/whoami", user="alice", password=ALICE_PW, client=env.carol)
    assert status == 200 and json.loads(body)["user"] == "alice", body
    # `sluice sql` presents one the same way, and sees only what carol may describe.
    out = S.sluice_ok(["sql", "--server", "https://" + env.https, "--tls-ca", env.pki.ca_cert,
                       "--tls-cert", env.carol.cert, "--tls-key", env.carol.key, "--format", "csv",
                       "SELECT topic FROM system.topics ORDER BY topic"])
    assert out.split() == ["topic", TOPIC], out
    # A certificate the CA did not sign fails the handshake.
    with pytest.raises((ssl.SSLError, ConnectionError, urllib.error.URLError)):
        https_call(env, "GET", "/v1/whoami", user=None, client=env.pki.self_signed_client("mallory"))


def test_every_page_shows_the_data(env):
    out = run_console("pages", dict(base_args(env), topic=TOPIC, group=GROUP_APP, sql=(
        "SELECT partition, count(*) AS records, sum(CAST(value ->> '$.amount' AS BIGINT)) AS amount "
        "FROM kafka_topics.\"co-orders\" GROUP BY partition ORDER BY partition")))
    assert out["login_form"] is True
    assert out["who"].startswith("admin")
    assert out["topic_count"] == 2
    assert any(r[1] == "SASL_PLAINTEXT" for r in out["listeners"]), out["listeners"]
    assert "Users & policies" in out["nav"]
    assert [r[0] for r in out["topics"]] == [TOPIC, SECRET]
    assert out["topics"][0][1:4] == [str(PARTITIONS), "delete", str(N)]
    assert [r[:3] for r in out["partitions"]] == [[str(p), "0", str(N // PARTITIONS)] for p in range(PARTITIONS)]
    assert ["cleanup.policy", "delete", "default", ""] in out["configs"]
    first = out["messages"][0]
    assert first[:2] == ["0", "0"] and first[3] == "order-0" and json.loads(first[4]) == {"n": 0, "amount": 0}
    assert first[5] == "source: web"
    assert len(out["messages"]) == N
    assert out["download_name"] == TOPIC + ".jsonl" and len(out["download"]) == N
    rec = out["download"][0]
    assert (rec["topic"], rec["partition"], rec["offset"], rec["key"]) == (TOPIC, 0, 0, "order-0")
    assert json.loads(rec["value"]) == {"n": 0, "amount": 0}
    assert rec["headers"] == [{"key": "source", "value": "web"}], rec["headers"]
    assert [GROUP_APP, "classic", "Empty"] == out["groups"][0][:3] and out["groups"][0][6] == "0"
    assert [r[:5] for r in out["group_offsets"]] == [
        [TOPIC, str(p), str(N // PARTITIONS), str(N // PARTITIONS), "0"] for p in range(PARTITIONS)]
    amounts = [sum(10 * i for i in range(N) if i % PARTITIONS == p) for p in range(PARTITIONS)]
    assert out["sql_rows"] == [[str(p), str(N // PARTITIONS), str(amounts[p])] for p in range(PARTITIONS)]
    assert out["sql_status"].startswith("3 row(s)")
    assert out["sql_chart_canvas"] == 1 and out["sql_chart_points"] == 3 and out["sql_bar_canvas"] == 1
    assert out["expansions"][0][:3] == ["shop.orders", TOPIC, "running"], out["expansions"]
    assert ["admin", "SCRAM-SHA-256, SCRAM-SHA-512"] in [r[:2] for r in out["users"]] or \
        any(r[0] == "admin" for r in out["users"]), out["users"]
    assert any(r[0] == "alice" for r in out["users"])
    assert len(out["policies"]) == 3  # admin, alice, carol


def test_find_a_record_by_time(env):
    i = 17
    out = run_console("time", dict(base_args(env), topic=TOPIC, from_ms=env.base_ms + 1000 * i))
    got = [(int(r[0]), int(r[1]), r[3]) for r in out["messages"]]
    assert got == [(j % PARTITIONS, j // PARTITIONS, "order-%d" % j) for j in (i, i + 1, i + 2)], got


def test_group_lag_falls_to_zero_as_the_consumer_catches_up(env):
    out = run_console("lag", dict(base_args(env), topic=TOPIC, group=GROUP_LAG, lag=env.lag,
                                  bootstrap=env.broker.bootstrap, sasl={"mechanism": "scram-sha-256",
                                                                        "username": "admin",
                                                                        "password": ADMIN_PW},
                                  kafka=env.kafka))
    assert out["lag_before"] == env.lag
    assert out["consumed"] >= env.lag
    assert out["lag_after"] == 0
    assert out["chart_points"] >= 2
    # The kafkajs consumer (a classic group's member) was listed as the group's one member
    # while it ran, with the partitions its group's leader (itself) assigned it.
    assert len(out["members"]) == 1 and "console-test" in out["members"][0], out["members"]
    assert out["members"][0][5] == "%s:0,1,2" % TOPIC, out["members"]


def test_restricted_user_sees_and_does_only_what_it_may(env):
    out = run_console("restricted", dict(base_args(env, "alice", ALICE_PW), topic=TOPIC,
                                         sql='SELECT * FROM kafka_topics."co-secret"'))
    assert "Users & policies" not in out["nav"]
    assert "User:alice may not KafkaDescribe sluice:cluster" in out["security_error"], out
    assert "co-secret" in out["sql_error"], out
    assert out["topics"] == [TOPIC]
    assert out["config_error"] == "User:alice may not KafkaAlterConfigs sluice:topic:co-orders", out
    # Nothing changed.
    status, _, body = https_call(env, "POST", "/v1/sql", b"SELECT count(*) FROM system.configs "
                                 b"WHERE topic = 'co-orders' AND source = 'topic'")
    assert status == 200 and json.loads(body)["rows"] == [[0]], body


def test_client_certificate_user_needs_no_password_and_gets_its_rights(env):
    # Chromium presents carol's certificate (mutual TLS): no log-in form, carol's policies.
    out = run_console("restricted", dict(base_args(env, None, None), topic=TOPIC,
                                         client_cert={"cert": str(env.carol.cert), "key": str(env.carol.key)},
                                         sql='SELECT * FROM kafka_topics."co-secret"'))
    assert out["login_form"] == 0
    assert out["who"].startswith("carol") and "(client certificate)" in out["who"], out["who"]
    assert "Users & policies" not in out["nav"]
    assert "User:carol may not KafkaDescribe sluice:cluster" in out["security_error"], out
    assert out["topics"] == [TOPIC]
    assert out["config_error"] == "User:carol may not KafkaAlterConfigs sluice:topic:co-orders", out


def test_topic_config_set_from_the_topics_page(env):
    out = run_console("config", dict(base_args(env), topic=SECRET, name="retention.ms", value="7200000"))
    assert out["after_set"] == ["retention.ms", "7200000", "topic", "reset"]
    status, _, body = https_call(env, "POST", "/v1/sql", b"SELECT value, source FROM system.configs "
                                 b"WHERE topic = 'co-secret' AND name = 'retention.ms'")
    assert json.loads(body)["rows"] == [["7200000", "topic"]]
    # The endpoint refuses what Kafka refuses, and unknown topics.
    status, _, body = https_call(env, "PUT", "/v1/topics/co-secret/configs",
                                 json.dumps({"set": {"retention.ms": "soon"}}).encode())
    assert status == 400 and "retention.ms" in json.loads(body)["error"]["message"], body
    status, _, body = https_call(env, "PUT", "/v1/topics/nope/configs", b'{"set": {}}')
    assert status == 404, body
    status, _, body = https_call(env, "PUT", "/v1/topics/co-secret/configs", b'{"delete": ["retention.ms"]}')
    assert status == 200 and json.loads(body) == {"topic": SECRET, "configs": {}}, body


def test_group_offsets_reset_to_a_time_from_the_groups_page(env):
    # co-app has read everything (lag 0); back to record 12's time: records 12..29 again.
    i = 12
    out = run_console("reset", dict(base_args(env), group=GROUP_APP, to="timestamp",
                                    from_ms=env.base_ms + 1000 * i, lag=N - i))
    assert out["lag_before"] == 0
    assert out["done"] == "3 partition(s) reset"
    assert out["lag_after"] == N - i
    # Record j is offset j // 3 of partition j % 3: the first at or after record 12.
    want = [min(j // PARTITIONS for j in range(i, N) if j % PARTITIONS == p) for p in range(PARTITIONS)]
    assert [int(r[2]) for r in out["group_offsets"]] == want
    out = run_console("reset", dict(base_args(env), group=GROUP_APP, to="latest", lag=0))
    assert out["lag_after"] == 0
    status, _, body = https_call(env, "POST", "/v1/groups/co-app/reset-offsets", b'{"to": "sometime"}')
    assert status == 400, body
    # A group with members is refused, as kafka-consumer-groups refuses it.
    admin = S.Creds("SASL_PLAINTEXT", "SCRAM-SHA-256", "admin", ADMIN_PW)
    c = Consumer(H.consumer_conf(env.kafka, **S.confluent_conf(admin), **{"group.id": "co-live"}))
    try:
        c.subscribe([TOPIC])
        H.wait_until("co-live has its partitions", lambda: c.poll(0.2) is not None or c.assignment(), timeout=30)
        # librdkafka's classic member: its ConsumerProtocol subscription and assignment.
        status, _, body = https_call(env, "POST", "/v1/sql", b"SELECT type, subscribed_topics, assigned, "
                                     b"target FROM system.group_members WHERE group_id = 'co-live'")
        assert status == 200 and json.loads(body)["rows"] == [
            ["classic", TOPIC, "%s:0,1,2" % TOPIC, None]], body
        status, _, body = https_call(env, "POST", "/v1/groups/co-live/reset-offsets", b'{"to": "earliest"}')
        assert status == 409 and "active members" in json.loads(body)["error"]["message"], body
    finally:
        c.close()


def test_wrong_password_is_refused(env):
    out = run_console("badlogin", dict(base_args(env, "alice", "wrong")))
    assert out["error"] == "invalid user name or password"
    assert out["logged_in"] == 0
