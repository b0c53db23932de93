"""Helpers for test_expansions.py: the expansions HTTP API (`/v1/expansions`), the
`sluice expansion` CLI, bounded waits on an expansion's state, and reading a target
table's positions; the JSON events (`event_key`, `event_value`) that
`crash_producer.py --values json` produces for the kill -9 test.
"""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# --------------------------------------------------------------------------
# HTTP API
# --------------------------------------------------------------------------

CALL_TIMEOUT = 30.0


def api(addr, method, path, body=None, timeout=CALL_TIMEOUT):
    """One call to the broker's HTTP listener; returns (status, parsed JSON body)."""
    data = None
    headers = {}
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request("http://%s%s" % (addr, path), data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        try:
            status, raw = e.code, e.read()
        finally:
            e.close()
    try:
        doc = json.loads(raw) if raw.strip() else None
    except ValueError:
        raise AssertionError("%s %s: HTTP %d with a body that is not JSON: %r" % (method, path, status, raw[:500]))
    return status, doc


def create_body(topic, target, schema, source=None, flatten=None, copy_source=None, backfill=None):
    """The create request; `schema` is the schema object, its JSON text, or just its field list."""
    if isinstance(schema, list):
        schema = {"fields": schema}
    body = {"topic": topic, "target": target, "schema": schema}
    for k, v in (("source", source), ("flatten", flatten), ("copy_source", copy_source), ("backfill", backfill)):
        if v is not None:
            body[k] = v
    return body


def create(addr, topic, target, schema, **opts):
    """POST /v1/expansions that must succeed (201); returns the expansion's JSON."""
    status, doc = api(addr, "POST", "/v1/expansions", create_body(topic, target, schema, **opts))
    assert status == 201, "creating expansion %s of %s: HTTP %d %r" % (target, topic, status, doc)
    assert_expansion_shape(doc)
    assert doc["target"].lower() == target.lower() and doc["topic"] == topic, doc
    return doc


def create_refused(addr, body, status):
    """POST /v1/expansions that must fail with `status`; returns its {"kind", "message"}."""
    got, doc = api(addr, "POST", "/v1/expansions", body)
    assert got == status, "expected HTTP %d for %r, got %d: %r" % (status, body, got, doc)
    assert isinstance(doc, dict) and set(doc) == {"error"}, doc
    err = doc["error"]
    assert isinstance(err.get("kind"), str) and isinstance(err.get("message"), str) and err["message"], err
    return err


def get(addr, target):
    status, doc = api(addr, "GET", "/v1/expansions/" + target)
    assert status == 200, "GET expansion %s: HTTP %d %r" % (target, status, doc)
    assert_expansion_shape(doc)
    return doc


def list_all(addr):
    status, doc = api(addr, "GET", "/v1/expansions")
    assert status == 200 and isinstance(doc, dict) and isinstance(doc.get("expansions"), list), (status, doc)
    for e in doc["expansions"]:
        assert_expansion_shape(e)
    return {e["target"]: e for e in doc["expansions"]}


def drop(addr, target, drop_target=False):
    path = "/v1/expansions/" + target + ("?drop_target=true" if drop_target else "")
    status, doc = api(addr, "DELETE", path)
    assert status == 200, "DELETE expansion %s: HTTP %d %r" % (target, status, doc)
    return doc


EXPANSION_KEYS = {"target", "topic", "source", "flatten", "copy_source", "created_ms", "state", "error",
                  "rows_written", "lag", "backfill", "columns", "schema"}


def assert_expansion_shape(e):
    assert isinstance(e, dict) and EXPANSION_KEYS <= set(e), "expansion JSON lacks keys %r: %r" % (
        EXPANSION_KEYS - set(e or {}), e)
    assert e["state"] in ("running", "backfilling", "failed"), e
    assert isinstance(e["backfill"], dict) and {"total", "done"} <= set(e["backfill"]), e
    assert all(set(c) >= {"name", "type"} for c in e["columns"]), e["columns"]


def wait_state(addr, target, pred, what, timeout=30.0, interval=0.05):
    """Polls GET /v1/expansions/<target> until pred(doc); returns (doc, every doc seen)."""
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        doc = get(addr, target)
        seen.append(doc)
        if pred(doc):
            return doc, seen
        if time.monotonic() > deadline:
            raise AssertionError("expansion %s: %s not reached within %.0fs (last: %r)" % (
                target, what, timeout, {k: doc[k] for k in ("state", "error", "lag", "rows_written", "backfill")}))
        time.sleep(interval)


def wait_caught_up(addr, target, timeout=30.0):
    """Until the expansion runs (not backfilling, not failed) with no lag."""
    doc, _ = wait_state(addr, target, lambda d: d["state"] == "running" and d["lag"] == 0,
                        "state running with lag 0", timeout=timeout)
    return doc


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def sluice(args, timeout=60.0):
    """`sluice ARGS...`; returns (rc, stdout, stderr)."""
    import conftest
    proc = subprocess.run([conftest.require_binary()] + list(args), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def write_schema(path, fields):
    path.write_text(json.dumps({"fields": fields}, indent=2))
    return str(path)


# --------------------------------------------------------------------------
# DeleteTopics v5 (raw): librdkafka and kafka-python send versions without the error message
# --------------------------------------------------------------------------

DELETE_TOPICS = 20


def delete_topics_v5(bootstrap, names, timeout_ms=10000):
    """{name: (error_code, error_message)} of a DeleteTopics v5 (flexible) request."""
    import kproto as K
    body = K.uvarint(len(names) + 1) + b"".join(K.compact_string(n) for n in names) + K.i32(timeout_ms) + K.EMPTY_TAGS
    with K.Conn(bootstrap) as conn:
        r = conn.roundtrip(DELETE_TOPICS, 5, body, header_version=2, response_header_version=1)
        r.i32()  # throttle time

        def topic(x):
            name = x.compact_string()
            code = x.i16()
            message = x.compact_string()
            x.tagged_fields()
            return name, (code, message)

        out = dict(r.compact_array(topic))
        r.tagged_fields()
        assert r.remaining() == 0, "%d unread bytes at the end of DeleteTopics v5" % r.remaining()
    return out


# --------------------------------------------------------------------------
# Target tables
# --------------------------------------------------------------------------


def positions(conn, table, where="TRUE"):
    """[(_partition, _offset)] of a target table (psycopg2 connection)."""
    with conn.cursor() as cur:
        cur.execute("SELECT _partition, _offset FROM %s WHERE %s" % (table, where))
        return [tuple(r) for r in cur.fetchall()]


def topic_positions(conn, topic, where="TRUE"):
    with conn.cursor() as cur:
        cur.execute('SELECT partition, "offset" FROM kafka_topics."%s" WHERE %s' % (topic.replace('"', '""'), where))
        return [tuple(r) for r in cur.fetchall()]


def assert_same_positions(target_pos, topic_pos, what):
    """The target holds exactly one row per event of the topic: same set, no duplicates."""
    tset = set(target_pos)
    dups = len(target_pos) - len(tset)
    assert dups == 0, "%s: %d duplicate (partition, offset) rows in the target" % (what, dups)
    kset = set(topic_pos)
    missing = sorted(kset - tset)
    extra = sorted(tset - kset)
    assert not missing and not extra, "%s: target rows differ from the topic's events: %d missing (first %r), " \
                                      "%d not in the topic (first %r)" % (what, len(missing), missing[:10],
                                                                          len(extra), extra[:10])


# --------------------------------------------------------------------------
# The producer process of the kill -9 test
# --------------------------------------------------------------------------


def event_key(seq):
    return b'{"seq":%d}' % seq


def event_value(seq):
    return json.dumps({"seq": seq, "name": "event-%d" % seq, "amount": seq * 0.5,
                       "ok": seq % 3 == 0, "pad": "x" * (seq % 50)}, separators=(",", ":")).encode()


EVENT_FIELDS = [{"name": "seq", "type": "int64"}, {"name": "name", "type": "string"},
                {"name": "amount", "type": "float64"}, {"name": "ok", "type": "bool"},
                {"name": "pad", "type": "string"}]
