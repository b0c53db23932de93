"""Small appends also go to the sync journal (docs/formats/journal.md): entries carry the
topic's catalog id and the batches as stored; a clean shutdown empties the journal."""

import glob
import struct
import time

import kproto as K
from test_cli import sluice_ok
from test_flexible import fetch_v13, metadata_v12, produce_v9


def journal_files(data_dir):
    return sorted(glob.glob(str(data_dir / "logs" / ".journal" / "*.journal")))


def read_journal(data_dir):
    """Every entry of the journal's files, read by the grammar of journal.md."""
    entries = []
    for path in journal_files(data_dir):
        with open(path, "rb") as f:
            b = f.read()
        assert b[:4] == b"SLJN", path
        assert struct.unpack(">H", b[4:6])[0] == 1, path
        seq = struct.unpack(">q", b[8:16])[0]
        pos = 32
        while pos + 54 <= len(b):
            crc, size = struct.unpack(">II", b[pos:pos + 8])
            if size + 8 > len(b) - pos or K.crc32c(b[pos + 4:pos + 8 + size]) != crc:
                break
            got_seq = struct.unpack(">Q", b[pos + 8:pos + 16])[0]
            if got_seq != seq:
                break  # stale bytes of a recycled file
            part, base, when, name_len = struct.unpack(">iqqH", b[pos + 32:pos + 54])
            entries.append(dict(seq=got_seq, id=b[pos + 16:pos + 32], partition=part, base=base,
                                time=when, topic=b[pos + 54:pos + 54 + name_len].decode(),
                                data=b[pos + 54 + name_len:pos + 8 + size]))
            seq += 1
            pos += 8 + size
    return entries


def test_small_appends_are_journaled_and_a_clean_stop_empties_the_journal(broker, topic_name):
    sluice_ok(["topic", "create", topic_name, "--partitions", "2", "--bootstrap", broker.bootstrap])
    sent = [
        (0, K.encode_batch([(1000, b"a", b"one", [("h", b"1")]), (1001, b"b", b"two", [])])),
        (1, K.encode_batch([(2000, b"c", b"three", [])])),
        (0, K.encode_batch([(3000, b"d", b"four", [])])),
    ]
    with K.Conn(broker.bootstrap) as conn:
        topic_id = metadata_v12(conn, topic_name)[0]["id"]
        assert topic_id != b"\x00" * 16
        bases = [produce_v9(conn, topic_name, p, batch) for p, batch in sent]
    assert [(r["error"], r["base_offset"]) for r in bases] == [(0, 0), (0, 0), (0, 2)], bases

    # acks=all was answered: the entries are in the journal, in order, with the topic's
    # id, each batch byte for byte as sent but for the base offset the broker assigned.
    entries = [e for e in read_journal(broker.data_dir) if e["topic"] == topic_name]
    assert [(e["partition"], e["base"]) for e in entries] == [(0, 0), (1, 0), (0, 2)], entries
    assert all(e["id"] == topic_id for e in entries)
    assert [e["seq"] for e in entries] == list(range(entries[0]["seq"], entries[0]["seq"] + 3))
    for e, (_, batch), r in zip(entries, sent, bases):
        assert struct.unpack(">q", e["data"][:8])[0] == r["base_offset"]
        assert e["data"][8:] == batch[8:]
        assert abs(e["time"] - time.time() * 1000) < 600_000, e["time"]  # the broker's clock

    broker.stop()
    assert journal_files(broker.data_dir) == []
    broker.start()
    with K.Conn(broker.bootstrap) as conn:
        got = fetch_v13(conn, topic_id, 0, 0)[0][1][0]
    assert got["error"] == 0 and got["hw"] == 3
    recs, _ = K.decode_batches(got["records"])
    assert [(r.offset, r.key, r.value) for r in recs] == [(0, b"a", b"one"), (1, b"b", b"two"),
                                                          (2, b"d", b"four")]
