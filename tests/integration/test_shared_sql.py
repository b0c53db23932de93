"""SQL over topics in shared mode (docs/shared-mode.md, "SQL"): two brokers of
scripts/cluster (PostgreSQL, s3proxy) with their PostgreSQL and HTTP listeners. Records
produced through broker 0 are read back at broker 1 with psycopg2 and with HTTP POST
/v1/sql: the same partitions, offsets, keys, values and timestamps, count(*) equal, an
offset/partition filter narrowed in the scan (sluice_last_scan), the system tables
listing the topic with its offsets, and the users and ACLs of the shared catalog
deciding who reads: a user denied Read on a topic is refused at broker 1's listeners
(the cluster authenticates on a SASL listener and is permissive: a Deny denies). Right
after the producer's ack, both brokers answer count, GROUP BY a JSON field and offset and
timestamp filters alike, over pg and HTTP, without the records of an aborted transaction,
and up to the last stable offset while one is open.

Expansions (docs/expansions.md, "Shared mode"): one created over HTTP at broker 1, with a
backfill, over events produced at broker 0 before and after; both brokers' copies of the
target hold the same typed rows; listed at broker 0; exactly once on broker 0 after a
kill -9 while events produced at broker 1 stream in, and it catching up on restart; a drop
at broker 0 ends it at broker 1."""

import base64
import time

import psycopg2
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import sql_helpers as Q
from cluster_helpers import kafka, running_cluster, state, wait_for

TOPIC = "sql-events"
CLOSED = "sql-closed"
PARTITIONS = 3
COUNT = 90
BASE_TS = 1764460800000
USERS = {"reader": "reader-pw", "alice": "alice-pw"}
PRODUCE_WINDOW = {}  # the wall clock (ms) before the first produce and after the last ack


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    import security_helpers as S
    p = S.Pki(tmp_path_factory.mktemp("pki"))
    p.server_cert = p.server()
    return p


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, pki):
    """Basic credentials go over HTTPS only: the brokers have a TLS certificate."""
    import security_helpers as S
    yield from running_cluster(tmp_path_factory.mktemp("shared-sql"), "--brokers", 2, "--",
                               "--listen", "SASL_PLAINTEXT://127.0.0.1:0", "--authorization", "permissive",
                               *S.tls_flags(pki, pki.server_cert))


def broker(d, i, what):
    return next(b[what] for b in state(d)["brokers"] if b["id"] == i)


def pg_login(d, i, user, password=None):
    host, port = broker(d, i, "pg").rsplit(":", 1)
    conn = psycopg2.connect(host=host, port=int(port), dbname="sluice", user=user,
                            password=password if password is not None else USERS[user], connect_timeout=10)
    conn.autocommit = True
    return conn


def https_sql(d, pki, user, sql):
    """POST /v1/sql at broker 1 over HTTPS as `user`: (status, parsed JSON body)."""
    return https_call(d, pki, 1, user, "POST", "/v1/sql", sql.encode(), "application/sql")


def https_call(d, pki, i, user, method, path, data=None, ctype=None):
    """One HTTPS request to broker i as `user`: (status, parsed JSON body)."""
    import json
    import ssl
    import urllib.error
    import urllib.request
    token = base64.b64encode(("%s:%s" % (user, USERS[user])).encode()).decode()
    headers = {"Authorization": "Basic " + token}
    if ctype:
        headers["Content-Type"] = ctype
    req = urllib.request.Request(broker(d, i, "http") + path, data=data, method=method, headers=headers)
    ctx = ssl.create_default_context(cafile=str(pki.ca_cert))
    try:
        with urllib.request.urlopen(req, timeout=30, context=ctx) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read())
        finally:
            e.close()


@pytest.fixture(scope="module")
def produced(cluster):
    """Topics, users and an ACL made through broker 0; COUNT records produced there with
    their keys, values and timestamps; returns [(partition, offset, key, value, ts)] in
    partition then offset order."""
    import kproto as K
    import security_helpers as S
    from kafka.admin import (ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             KafkaAdminClient, ResourcePattern, ResourceType)
    admin = AdminClient({"bootstrap.servers": kafka(cluster, 0)})
    fs = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1), NewTopic(CLOSED, 1, 1)], operation_timeout=30)
    for f in fs.values():
        f.result(timeout=30)
    with K.Conn(kafka(cluster, 0)) as conn:
        got = S.alter_user_scram_credentials(
            conn, upsertions=[(u, "SCRAM-SHA-256", 4096, pw) for u, pw in USERS.items()])
        assert got == {u: (0, None) for u in USERS}, got
    kadmin = KafkaAdminClient(bootstrap_servers=kafka(cluster, 0))
    try:
        deny = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.DENY,
                   ResourcePattern(ResourceType.TOPIC, CLOSED, ACLResourcePatternType.LITERAL))
        assert not kadmin.create_acls([deny])["failed"]
    finally:
        kadmin.close()
    acked, errors = [], []

    def done(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked.append((msg.partition(), msg.offset(), msg.key(), msg.value(), msg.timestamp()[1]))

    p = Producer({"bootstrap.servers": kafka(cluster, 0), "enable.idempotence": True, "linger.ms": 5})
    PRODUCE_WINDOW["from"] = int(time.time() * 1000)
    for i in range(COUNT):
        p.produce(TOPIC, key=b"key-%d" % i, value=b'{"n":%d}' % i, partition=i % PARTITIONS,
                  timestamp=BASE_TS + i * 1000, on_delivery=done)
    p.produce(CLOSED, key=b"s", value=b"secret", on_delivery=done)
    assert p.flush(30) == 0 and not errors, errors
    PRODUCE_WINDOW["to"] = int(time.time() * 1000)
    records = sorted(r for r in acked if r[2] != b"s")
    assert len(records) == COUNT
    # Broker 1 reads the topics and users of the shared catalog within a second or so.
    wait_for(lambda: _can_login(cluster, "reader"), timeout=15, what="the users on broker 1")
    return records


def _can_login(d, user):
    try:
        pg_login(d, 1, user).close()
        return True
    except psycopg2.OperationalError:
        return False


def as_bytes(v):
    return bytes(v) if v is not None else None


def test_topic_rows_at_another_brokers_pg(cluster, produced):
    with pg_login(cluster, 1, "reader") as conn:
        def rows():
            return [(p, o, as_bytes(k), as_bytes(v), t) for p, o, k, v, t in Q.pg_rows(
                conn, 'SELECT partition, "offset", key, value, timestamp_producer FROM kafka_topics."%s" '
                      'ORDER BY 1, 2' % TOPIC)]
        # Broker 1 knows the topic within its refresh interval.
        wait_for(lambda: len(rows()) == COUNT, timeout=10, what="the records at broker 1")
        assert rows() == produced
        assert Q.pg_rows(conn, 'SELECT count(*) FROM kafka_topics."%s"' % TOPIC) == [(COUNT,)]


def test_timestamp_broker_is_the_batches_append_time_at_every_broker(cluster, produced):
    """Each batch's append time from the batch index (shared catalog version 10), as
    single-node mode's timestamp_broker: within the produce's time range (the brokers
    share this machine's clock), never decreasing along a partition, one time for all the
    records of a batch, and the same at broker 0 and broker 1."""
    sql = ('SELECT partition, "offset", timestamp_broker, extract(epoch FROM timestamp_broker_tz) * 1000 '
           'FROM kafka_topics."%s" ORDER BY partition, "offset"' % TOPIC)
    answers = []
    for i in (0, 1):
        with pg_login(cluster, i, "reader") as conn:
            wait_for(lambda: len(Q.pg_rows(conn, sql)) == COUNT, timeout=10, what="the records")
            answers.append([(p, o, t, None if tz is None else round(tz)) for p, o, t, tz in Q.pg_rows(conn, sql)])
    assert answers[0] == answers[1]
    rows = answers[0]
    lo, hi = PRODUCE_WINDOW["from"], PRODUCE_WINDOW["to"]
    assert all(t is not None and lo <= t <= hi for _, _, t, _ in rows), (lo, hi, rows[:5])
    assert all(t == tz for _, _, t, tz in rows), rows[:5]
    for part in range(PARTITIONS):
        times = [t for p, _, t, _ in rows if p == part]
        assert times == sorted(times), times
    # Records of one batch share its time: the producer's batches (linger.ms 5) hold
    # several records, so a partition has fewer distinct times than records.
    distinct = len({(p, t) for p, _, t, _ in rows})
    print("timestamp_broker: %d records, %d distinct (partition, time), produce took %d ms"
          % (len(rows), distinct, hi - lo))
    assert distinct < COUNT
    # A bound on it is applied (row by row) the same at both brokers.
    mid = sorted(t for _, _, t, _ in rows)[COUNT // 2]
    for i in (0, 1):
        with pg_login(cluster, i, "reader") as conn:
            got = Q.pg_rows(conn, 'SELECT count(*) FROM kafka_topics."%s" WHERE timestamp_broker >= %d'
                            % (TOPIC, mid))
            assert got == [(sum(1 for _, _, t, _ in rows if t >= mid),)]


def test_filter_on_partition_and_offset_is_pushed_down(cluster, produced):
    """The rows at both brokers; the scan's counters in sluice_last_scan() at broker 0."""
    want = [r for r in produced if r[0] == 1 and 5 <= r[1] < 12]
    assert len(want) == 7
    with pg_login(cluster, 1, "reader") as conn:
        got = Q.pg_rows(conn, 'SELECT partition, "offset", key, value, timestamp_producer FROM kafka_topics."%s" '
                              'WHERE partition = 1 AND "offset" >= 5 AND "offset" < 12 ORDER BY 2' % TOPIC)
        assert [(p, o, as_bytes(k), as_bytes(v), t) for p, o, k, v, t in got] == want
    with pg_login(cluster, 0, "reader") as conn:
        got = Q.pg_rows(conn, 'SELECT partition, "offset", key, value, timestamp_producer FROM kafka_topics."%s" '
                              'WHERE partition = 1 AND "offset" >= 5 AND "offset" < 12' % TOPIC)
        assert [(p, o, as_bytes(k), as_bytes(v), t) for p, o, k, v, t in got] == want
        import json
        scan = json.loads(Q.pg_rows(conn, "SELECT sluice_last_scan()")[0][0])
        assert scan["partitions_scanned"] == 1 and scan["records_read"] == 7, scan
        # A lower bound on timestamp_producer starts each partition's read at the first
        # record at or after it.
        since = BASE_TS + 60 * 1000
        got = Q.pg_rows(conn, 'SELECT partition, "offset" FROM kafka_topics."%s" WHERE timestamp_producer >= %d'
                        % (TOPIC, since))
        assert sorted(got) == [(p, o) for p, o, _, _, t in produced if t >= since]
        scan = json.loads(Q.pg_rows(conn, "SELECT sluice_last_scan()")[0][0])
        assert scan["records_read"] == COUNT - 60, scan


def test_system_tables_list_the_topic(cluster, produced):
    with pg_login(cluster, 1, "reader") as conn:
        assert Q.pg_rows(conn, "SELECT topic, partitions FROM system.topics WHERE topic = %s", (TOPIC,)) \
            == [(TOPIC, PARTITIONS)]
        hw = {p: 0 for p in range(PARTITIONS)}
        for p, o, *_ in produced:
            hw[p] = max(hw[p], o + 1)
        got = Q.pg_rows(conn, "SELECT partition, log_start_offset, high_watermark FROM system.partitions "
                              "WHERE topic = %s ORDER BY partition", (TOPIC,))
        assert got == [(p, 0, hw[p]) for p in range(PARTITIONS)]


def test_https_at_another_broker(cluster, pki, produced):
    assert broker(cluster, 1, "http").startswith("https://")
    status, doc = https_sql(cluster, pki, "reader",
                            'SELECT partition, "offset", key, value, timestamp_producer FROM kafka_topics."%s" '
                            'ORDER BY 1, 2' % TOPIC)
    assert status == 200, doc
    assert [tuple(r) for r in doc["rows"]] == [(p, o, k.decode(), v.decode(), t) for p, o, k, v, t in produced]
    status, doc = https_sql(cluster, pki, "reader", 'SELECT count(*) FROM kafka_topics."%s"' % TOPIC)
    assert status == 200 and doc["rows"] == [[COUNT]], doc
    # /metrics is served there too.
    import ssl
    import urllib.request
    token = base64.b64encode(b"reader:" + USERS["reader"].encode()).decode()
    req = urllib.request.Request(broker(cluster, 1, "http") + "/metrics", headers={"Authorization": "Basic " + token})
    ctx = ssl.create_default_context(cafile=str(pki.ca_cert))
    with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
        assert r.status == 200 and b"sluice_" in r.read()
    # The users made through broker 0 (AlterUserScramCredentials) are broker 1's users.
    import json
    req = urllib.request.Request(broker(cluster, 1, "http") + "/v1/users", headers={"Authorization": "Basic " + token})
    with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
        assert sorted(u["name"] for u in json.loads(r.read())["users"]) == sorted(USERS)


def test_a_user_denied_read_is_refused(cluster, pki, produced):
    with pg_login(cluster, 1, "alice") as conn:
        assert Q.pg_rows(conn, 'SELECT count(*) FROM kafka_topics."%s"' % TOPIC) == [(COUNT,)]
        e = Q.pg_error(conn, 'SELECT * FROM kafka_topics."%s"' % CLOSED)
        assert e.pgcode == "42501", (e.pgcode, str(e))
    status, doc = https_sql(cluster, pki, "alice", 'SELECT * FROM kafka_topics."%s"' % CLOSED)
    assert status in (400, 403) and doc["error"]["sqlstate"] == "42501", (status, doc)
    with pg_login(cluster, 1, "reader") as conn:  # not denied: reads it
        assert [as_bytes(v) for v, in Q.pg_rows(conn, 'SELECT value FROM kafka_topics."%s"' % CLOSED)] == [b"secret"]
    with pytest.raises(psycopg2.OperationalError):
        pg_login(cluster, 1, "alice", password="wrong")


def test_group_offsets_listed_at_every_broker(cluster, produced):
    """A group's offsets committed through broker 0 (to its coordinator, by placement) are
    in system.group_offsets at both brokers, with the partition's lag."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": kafka(cluster, 0), "group.id": "sql-group", "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(TOPIC, 0, 7)], asynchronous=False)
    finally:
        c.close()
    hw = 1 + max(o for p, o, *_ in produced if p == 0)
    for i in (0, 1):
        with pg_login(cluster, i, "reader") as conn:
            got = Q.pg_rows(conn, "SELECT group_id, topic, partition, committed_offset, high_watermark, lag "
                                  "FROM system.group_offsets WHERE group_id = 'sql-group'")
            assert got == [("sql-group", TOPIC, 0, 7, hw, hw - 7)], (i, got)


ENGINES_TOPIC = "sql-after-ack"
KINDS = ("buy", "hold", "sell")


def _answers(d, pki, sql):
    """`sql`'s rows from broker 0 (pg) and broker 1 (pg, and HTTPS)."""
    got = []
    for i in (0, 1):
        with pg_login(d, i, "reader") as conn:
            got.append([tuple(r) for r in Q.pg_rows(conn, sql)])
    status, doc = https_sql(d, pki, "reader", sql)
    assert status == 200, doc
    got.append([tuple(r) for r in doc["rows"]])
    return got


def _same_answers(d, pki, sql, want):
    pg0, pg1, http1 = _answers(d, pki, sql)
    assert pg0 == want, (sql, pg0)
    assert pg1 == want, (sql, pg1)
    assert http1 == want, (sql, http1)


def test_every_broker_answers_right_after_the_ack(cluster, pki, produced):
    """Records produced at broker 0 are rows at broker 1 as soon as the producer has its
    ack, with broker 0's answers; an aborted transaction's records are never seen, an open
    one cuts each broker's scan at the last stable offset, and once it commits both
    brokers see what a read_committed consumer reads."""
    import json
    from confluent_kafka import Consumer, TopicPartition
    from cluster_helpers import wait_topic_known
    admin = AdminClient({"bootstrap.servers": kafka(cluster, 0)})
    for f in admin.create_topics([NewTopic(ENGINES_TOPIC, 2, 1, config={"retention.ms": "-1"})],
                                 operation_timeout=30).values():
        f.result(timeout=30)
    wait_topic_known(cluster, ENGINES_TOPIC)
    acked = []
    p = Producer({"bootstrap.servers": kafka(cluster, 0), "enable.idempotence": True, "linger.ms": 5})

    def done(err, m):
        assert err is None, err
        acked.append((m.partition(), m.offset(), m.timestamp()[1]))

    def produce(values, partition=None, producer=p):
        """values: [(i, JSON)]; i >= 0 stamps BASE_TS + i s and picks partition i % 2."""
        for i, v in values:
            kw = {"partition": partition if partition is not None else i % 2}
            if i >= 0:
                kw["timestamp"] = BASE_TS + i * 1000
            producer.produce(ENGINES_TOPIC, value=json.dumps(v).encode(), on_delivery=done, **kw)
        assert producer.flush(30) == 0
    produce([(i, {"kind": KINDS[i % 3], "n": i}) for i in range(60)])
    assert len(acked) == 60
    t = 'kafka_topics."%s"' % ENGINES_TOPIC
    count = "SELECT count(*) FROM %s" % t
    by_kind = "SELECT value ->> '$.kind' AS kind, count(*) AS n FROM %s GROUP BY 1 ORDER BY 1" % t
    offsets = 'SELECT partition, "offset" FROM %s WHERE partition = 1 AND "offset" BETWEEN 3 AND 9 ORDER BY 1, 2' % t
    times = ('SELECT partition, "offset" FROM %s WHERE timestamp_producer >= %d AND timestamp_producer < %d '
             'ORDER BY 1, 2' % (t, BASE_TS + 10000, BASE_TS + 20000))
    # No wait: the ack means committed in the shared catalog, which every broker reads.
    _same_answers(cluster, pki, count, [(60,)])
    _same_answers(cluster, pki, by_kind, [(k, 20) for k in KINDS])
    _same_answers(cluster, pki, offsets, [(1, o) for o in range(3, 10)])
    _same_answers(cluster, pki, times, sorted((pa, o) for pa, o, ts in acked if BASE_TS + 10000 <= ts < BASE_TS + 20000))

    tx = Producer({"bootstrap.servers": kafka(cluster, 0), "transactional.id": "sql-after-ack-tx"})
    tx.init_transactions(30)
    tx.begin_transaction()
    produce([(-1, {"kind": "aborted", "n": -1})] * 5, partition=0, producer=tx)
    tx.abort_transaction(30)
    tx.begin_transaction()
    produce([(-1, {"kind": "committed", "n": 100})] * 4, partition=0, producer=tx)
    tx.commit_transaction(30)
    # The markers may follow EndTxn's answer by a moment.
    wait_for(lambda: _answers(cluster, pki, count) == [[(64,)]] * 3, timeout=10, what="the committed transaction")
    _same_answers(cluster, pki, by_kind, sorted([(k, 20) for k in KINDS] + [("committed", 4)]))

    # An open transaction on partition 1: its records, and the ones after them, wait
    # for its end (the last stable offset), at both brokers.
    tx.begin_transaction()
    produce([(-1, {"kind": "open", "n": 1})] * 3, partition=1, producer=tx)
    produce([(-1, {"kind": "after", "n": 2})] * 2, partition=1)
    _same_answers(cluster, pki, "SELECT count(*) FROM %s WHERE partition = 1" % t, [(30,)])
    tx.commit_transaction(30)
    wait_for(lambda: _answers(cluster, pki, count) == [[(69,)]] * 3, timeout=10, what="the second commit")
    _same_answers(cluster, pki, by_kind,
                  sorted([(k, 20) for k in KINDS] + [("committed", 4), ("open", 3), ("after", 2)]))
    # What a read_committed consumer at broker 1 reads is what SQL returns.
    c = Consumer({"bootstrap.servers": kafka(cluster, 1), "group.id": "sql-after-ack-reader",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.assign([TopicPartition(ENGINES_TOPIC, pa, 0) for pa in range(2)])
    consumed = set()
    deadline = time.monotonic() + 30
    while len(consumed) < 69 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            consumed.add((m.partition(), m.offset()))
    c.close()
    _same_answers(cluster, pki, 'SELECT partition, "offset" FROM %s ORDER BY 1, 2' % t, sorted(consumed))


EXP_TOPIC = "sql-exp"
EXP_TARGET = "exp.events"
EXP_SCHEMA = {"fields": [{"name": "n", "type": "int64"}, {"name": "name", "type": "string"}]}


def produce_events_at(d, i, start, count):
    """Events start..start+count-1 as JSON, one request each, at broker i itself (every
    broker takes every partition in shared mode); returns [(partition, offset, n, name)]."""
    import kproto as K
    out = []
    with K.Conn(kafka(d, i)) as conn:
        for n in range(start, start + count):
            value = b'{"n":%d,"name":"e%d"}' % (n, n)
            r = K.produce_v3(conn, EXP_TOPIC, n % 2, K.encode_batch([(BASE_TS + n, b"k%d" % n, value, [])]))
            assert r["error"] == 0, r
            out.append((n % 2, r["base_offset"], n, "e%d" % n))
    return out


def target_rows(d, i):
    try:
        with pg_login(d, i, "reader") as conn:
            return Q.pg_rows(conn, "SELECT _partition, _offset, n, name FROM %s ORDER BY _partition, _offset"
                             % EXP_TARGET)
    except psycopg2.Error:
        return None  # not there yet, or the broker is down


def expansion_api(d, pki, i, method, path, body=None):
    import json
    return https_call(d, pki, i, "reader", method, path, json.dumps(body).encode() if body else None,
                      "application/json" if body else None)


@pytest.fixture(scope="module")
def expanded(cluster, pki, produced):
    """The expansion created at broker 1 over events produced at broker 0 before (backfilled)
    and after; returns the rows it must hold."""
    admin = AdminClient({"bootstrap.servers": kafka(cluster, 0)})
    # Kept forever: its events are stamped BASE_TS, long past the default retention, and
    # shared mode's retention job, due at once for a new partition, would delete them
    # (under load before every broker had expanded them, which the broker logs).
    for f in admin.create_topics([NewTopic(EXP_TOPIC, 2, 1, config={"retention.ms": "-1"})],
                                 operation_timeout=30).values():
        f.result(timeout=30)
    before = produce_events_at(cluster, 0, 0, 10)
    wait_for(lambda: expansion_api(cluster, pki, 1, "POST", "/v1/expansions",
                                   {"topic": EXP_TOPIC, "target": EXP_TARGET, "schema": EXP_SCHEMA,
                                    "backfill": True})[0] == 201,
             timeout=10, what="the topic known at broker 1 and the expansion created")
    return sorted(before + produce_events_at(cluster, 0, 10, 30))


def test_expansion_rows_at_every_broker(cluster, pki, expanded):
    assert len(expanded) == 40
    for i in (0, 1):
        wait_for(lambda: target_rows(cluster, i) == expanded, timeout=15, what="the rows at broker %d" % i)
    # Broker 0 lists the expansion created at broker 1, with its rows.
    status, doc = expansion_api(cluster, pki, 0, "GET", "/v1/expansions/" + EXP_TARGET)
    assert status == 200 and doc["topic"] == EXP_TOPIC and doc["rows"] == 40, doc
    assert doc["state"] == "running" and doc["backfill"] == {"total": 10, "done": 10}, doc
    status, doc = expansion_api(cluster, pki, 1, "GET", "/v1/expansions")
    assert status == 200 and [e["target"] for e in doc["expansions"]] == [EXP_TARGET], doc
    # The target belongs to the expansion on every broker.
    with pg_login(cluster, 0, "reader") as conn:
        assert Q.pg_error(conn, "DELETE FROM %s" % EXP_TARGET).pgcode == "42501"


def test_expansion_exactly_once_after_kill(cluster, pki, expanded):
    """kill -9 of broker 0 while it expands events produced at broker 1: broker 1's copy
    goes on; broker 0's, restarted, catches up from its own progress, each event once."""
    import threading
    from cluster_helpers import cluster_cmd
    more, errors = [], []

    def produce():
        try:
            more.extend(produce_events_at(cluster, 1, 40, 150))
        except Exception as e:  # reported below
            errors.append(e)

    t = threading.Thread(target=produce)
    t.start()
    try:
        wait_for(lambda: len(target_rows(cluster, 0) or []) >= 80, timeout=30, what="broker 0 expanding")
        cluster_cmd("kill", cluster, 0)
    finally:
        t.join(60)
    assert not errors, errors
    want = sorted(expanded + more)
    seen = {}

    def all_rows(i):
        seen[i] = target_rows(cluster, i)
        return seen[i] == want
    try:
        try:
            wait_for(lambda: all_rows(1), timeout=45, what="all rows at broker 1")
        except AssertionError as e:
            raise AssertionError("%s: %d of %d rows, %d distinct" % (
                e, len(seen[1] or []), len(want), len(set(map(tuple, seen[1] or []))))) from None
    finally:
        cluster_cmd("start", cluster, 0)  # the next tests need it whatever happened here
    try:
        wait_for(lambda: all_rows(0), timeout=45, what="all rows at broker 0 again")
    except AssertionError as e:
        raise AssertionError("%s: %d of %d rows, %d distinct" % (
            e, len(seen[0] or []), len(want), len(set(map(tuple, seen[0] or []))))) from None


def test_expansion_dropped_at_another_broker(cluster, pki, expanded):
    status, doc = expansion_api(cluster, pki, 0, "DELETE", "/v1/expansions/" + EXP_TARGET)
    assert status == 200, doc
    wait_for(lambda: expansion_api(cluster, pki, 1, "GET", "/v1/expansions/" + EXP_TARGET)[0] == 404,
             timeout=10, what="the drop at broker 1")
    # Its table stays at broker 1 (no drop_target), no longer the broker's alone.
    assert len(target_rows(cluster, 1)) == 190
