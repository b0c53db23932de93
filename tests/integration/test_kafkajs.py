"""kafkajs 2.2.x round trip (node/roundtrip.js), cross-checked with librdkafka.

Needs the node dependencies installed first:
    cd tests/integration/node && npm ci
"""

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import sluice_helpers as H

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE = "/usr/bin/node" if os.path.exists("/usr/bin/node") else shutil.which("node")


def run_node(script, *args, timeout=180):
    if NODE is None:
        pytest.fail("node is not installed (expected /usr/bin/node)", pytrace=False)
    if not (NODE_DIR / "node_modules" / "kafkajs" / "package.json").exists():
        pytest.fail("kafkajs is not installed: run `npm ci` in %s first (make test does this)" % NODE_DIR,
                    pytrace=False)
    proc = subprocess.run([NODE, str(NODE_DIR / script)] + [str(a) for a in args],
                          cwd=str(NODE_DIR), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, "%s exited %d\nstderr:\n%s" % (script, proc.returncode, err[-5000:])
    lines = [ln for ln in proc.stdout.decode().splitlines() if ln.strip()]
    assert lines, "%s printed nothing\nstderr:\n%s" % (script, err[-5000:])
    return json.loads(lines[-1])


def run_roundtrip(bootstrap, topic, n, partitions):
    return run_node("roundtrip.js", bootstrap, topic, n, partitions)


def decode(rec):
    return dict(
        partition=rec["partition"],
        offset=int(rec["offset"]),
        key=base64.b64decode(rec["key"]) if rec["key"] is not None else None,
        value=base64.b64decode(rec["value"]) if rec["value"] is not None else None,
        headers={k: base64.b64decode(v) for k, v in rec["headers"].items()},
        timestamp=int(rec["timestamp"]),
    )


def test_kafkajs_roundtrip(broker, topic_name):
    n, parts = 2000, 3
    out = run_roundtrip(broker.bootstrap, topic_name, n, parts)
    assert out["created"] is True, "kafkajs createTopics did not report creation"
    assert out["partitionsInMetadata"] == parts

    produced = [decode(r) for r in out["produced"]]
    fetched = [decode(r) for r in out["fetched"]]
    assert len(produced) == n
    assert len(fetched) == n, "fetched %d of %d records" % (len(fetched), n)

    by_pos = {}
    for i, r in enumerate(produced):
        assert r["partition"] == i % parts
        assert r["key"] == b"jk%06d" % i
        assert (r["partition"], r["offset"]) not in by_pos
        by_pos[(r["partition"], r["offset"])] = r
    H.assert_contiguous(by_pos, "kafkajs produce-response offsets")
    counts = H.counts_by_partition(by_pos)

    assert {int(k): int(v) for k, v in out["earliest"].items()} == {p: 0 for p in range(parts)}
    assert {int(k): int(v) for k, v in out["latest"].items()} == counts

    seen = set()
    for f in fetched:
        pos = (f["partition"], f["offset"])
        assert pos not in seen, "fetched %r twice" % (pos,)
        seen.add(pos)
        assert pos in by_pos, "fetched a record that was never produced: %r" % (pos,)
        assert f == by_pos[pos], "mismatch at %r:\n produced %r\n fetched  %r" % (pos, by_pos[pos], f)
    assert seen == set(by_pos)

    # Cross-client check: librdkafka reads exactly what kafkajs wrote.
    expected = {pos: dict(key=r["key"], value=r["value"], timestamp=r["timestamp"],
                          headers=[("idx", r["headers"]["idx"]), ("sig", r["headers"]["sig"])])
                for pos, r in by_pos.items()}
    got = H.consume_all(broker.bootstrap, topic_name, counts)
    H.assert_records_match(expected, got)


def test_kafkajs_compressed_batches_round_trip(broker, topic_name):
    """kafkajs's GZIP, and Snappy and LZ4 through kafkajs-snappy and kafkajs-lz4: each batch
    is stored with its codec (raw Fetch), and kafkajs and librdkafka read it back."""
    from test_compression import stored

    H.create_topic(broker.bootstrap, topic_name, 1)
    out = run_node("compressed.js", broker.bootstrap, topic_name, timeout=90)
    assert out["sends"] == {"gzip": {"baseOffset": "0", "errorCode": 0}, "snappy": {"baseOffset": "20", "errorCode": 0},
                            "lz4": {"baseOffset": "40", "errorCode": 0}}, out
    text = "kafkajs compresses this text " * 8
    want = [(n * 20 + i, "%s-%d" % (codec, i), '{"codec":"%s","i":%d,"text":"%s"}' % (codec, i, text))
            for n, codec in enumerate(("gzip", "snappy", "lz4")) for i in range(20)]
    assert [tuple(r) for r in out["records"]] == want  # kafkajs read them back
    recs, batches, _ = stored(broker.bootstrap, topic_name)
    assert [b["compression"] for b in batches] == [1, 2, 3], batches
    assert [(r.offset, r.key.decode(), r.value.decode()) for r in recs] == want
    got = H.consume_all(broker.bootstrap, topic_name, {0: 60})
    assert [(r["offset"], r["key"].decode(), r["value"].decode()) for r in got] == want
