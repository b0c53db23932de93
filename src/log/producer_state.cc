#include "log/producer_state.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/endian.h"
#include "log/file_header.h"

namespace sluice::log {

int32_t last_sequence(int32_t base_sequence, int32_t last_offset_delta) {
    // As Kafka's DefaultRecordBatch.incrementSequence: past INT32_MAX the count goes on
    // from 0.
    constexpr int32_t max = std::numeric_limits<int32_t>::max();
    if (base_sequence > max - last_offset_delta)
        return last_offset_delta - (max - base_sequence) - 1;
    return base_sequence + last_offset_delta;
}

bool in_sequence(int32_t last, int32_t next) {
    return static_cast<int64_t>(next) == static_cast<int64_t>(last) + 1 ||
           (next == 0 && last == std::numeric_limits<int32_t>::max());
}

sequence_check producer_state::check(const protocol::batch_header& h) const {
    sequence_check out;
    auto it = _entries.find(h.producer_id);
    // A producer this partition does not know (new, or its batches left the log, or it
    // expired) starts its sequence wherever its first batch here does, as Kafka 4.3 takes
    // it (test_differential): its state may have gone with retention while it kept going.
    if (it == _entries.end()) return out;
    const producer_entry& e = it->second;
    if (h.producer_epoch < e.epoch) {
        out.verdict = sequence_verdict::invalid_epoch;
        out.reason = fmt::format("producer {} epoch {} is older than its current epoch {}",
                                 h.producer_id, h.producer_epoch, e.epoch);
        return out;
    }
    if (h.producer_epoch > e.epoch) {
        if (h.base_sequence != 0) {
            out.verdict = sequence_verdict::out_of_order;
            out.reason = fmt::format("producer {} new epoch {} must start at sequence 0, not {}",
                                     h.producer_id, h.producer_epoch, h.base_sequence);
        }
        return out;
    }
    const int32_t last = last_sequence(h.base_sequence, h.last_offset_delta);
    for (const auto& b : e.batches) {
        if (b.first_seq == h.base_sequence && b.last_seq == last) {
            out.verdict = sequence_verdict::duplicate;
            out.original = b;
            return out;
        }
    }
    // An entry without batches (all truncated away) accepts any sequence, as Kafka's does
    // when it knows no epoch's last sequence.
    if (const producer_batch* lb = e.last(); lb && !in_sequence(lb->last_seq, h.base_sequence)) {
        out.verdict = sequence_verdict::out_of_order;
        out.reason = fmt::format("producer {} epoch {}: sequence {} does not follow {}",
                                 h.producer_id, h.producer_epoch, h.base_sequence, lb->last_seq);
    }
    return out;
}

void producer_state::apply(const protocol::batch_header& h, offset_t base, timestamp_ms seen) {
    producer_entry& e = _entries[h.producer_id];
    e.producer_id = h.producer_id;
    if (h.producer_epoch != e.epoch) {
        e.batches.clear();  // a new epoch starts a new sequence
        e.epoch = h.producer_epoch;
    }
    if (e.batches.size() == producer_batches_kept) e.batches.erase(e.batches.begin());
    e.batches.push_back({h.base_sequence, last_sequence(h.base_sequence, h.last_offset_delta), base,
                         base + h.last_offset_delta});
    e.last_timestamp = h.max_timestamp;
    e.last_seen = seen;
    // The first transactional batch after a marker (or ever) starts a transaction here.
    if (h.is_transactional() && e.txn_first_offset < 0) {
        e.txn_first_offset = base;
        _ongoing.emplace(base, h.producer_id);
    }
}

marker_check producer_state::check_marker(int64_t producer_id, int16_t epoch,
                                          int32_t coordinator_epoch) const {
    marker_check out;
    auto it = _entries.find(producer_id);
    if (it == _entries.end()) return out;
    const producer_entry& e = it->second;
    if (epoch < e.epoch) {
        out.verdict = marker_check::kind::invalid_epoch;
        out.reason = fmt::format("marker of producer {} epoch {} is older than its epoch {}",
                                 producer_id, epoch, e.epoch);
    } else if (coordinator_epoch < e.coordinator_epoch) {
        out.verdict = marker_check::kind::coordinator_fenced;
        out.reason = fmt::format("marker of producer {} from coordinator epoch {}, older than {}",
                                 producer_id, coordinator_epoch, e.coordinator_epoch);
    }
    return out;
}

void producer_state::apply_marker(int64_t producer_id, int16_t epoch, bool commit,
                                  int32_t coordinator_epoch, offset_t offset, timestamp_ms seen) {
    producer_entry& e = _entries[producer_id];
    e.producer_id = producer_id;
    if (epoch != e.epoch) {
        e.batches.clear();
        e.epoch = epoch;
    }
    e.coordinator_epoch = coordinator_epoch;
    e.last_seen = seen;
    const offset_t first = e.txn_first_offset >= 0 ? e.txn_first_offset : offset;
    if (e.txn_first_offset >= 0) _ongoing.erase({e.txn_first_offset, producer_id});
    e.txn_first_offset = -1;
    if (!commit) _aborted.push_back({producer_id, first, offset});
}

bool in_aborted(const std::vector<aborted_txn>& aborted, const protocol::batch_header& h) {
    if (!h.is_transactional() || h.is_control()) return false;
    return std::any_of(aborted.begin(), aborted.end(), [&](const aborted_txn& a) {
        return a.producer_id == h.producer_id && a.first_offset <= h.base_offset &&
               h.base_offset <= a.last_offset;
    });
}

std::optional<offset_t> producer_state::first_unstable_offset() const {
    if (_ongoing.empty()) return std::nullopt;
    return _ongoing.begin()->first;
}

std::vector<aborted_txn> producer_state::aborted_between(offset_t from, offset_t to) const {
    std::vector<aborted_txn> out;
    // By last offset: the first that ends at or after `from`, then every one starting
    // below `to` (a long transaction may start before shorter ones that end earlier).
    auto it = std::lower_bound(_aborted.begin(), _aborted.end(), from,
                               [](const aborted_txn& a, offset_t o) { return a.last_offset < o; });
    for (; it != _aborted.end(); ++it)
        if (it->first_offset < to) out.push_back(*it);
    return out;
}

void producer_state::rebuild_ongoing() {
    _ongoing.clear();
    for (const auto& [id, e] : _entries)
        if (e.txn_first_offset >= 0) _ongoing.emplace(e.txn_first_offset, id);
}

void producer_state::forget_aborted(int64_t producer_id, offset_t last_offset) {
    std::erase_if(_aborted, [&](const aborted_txn& a) {
        return a.producer_id == producer_id && a.last_offset == last_offset;
    });
}

void producer_state::evict_below(offset_t log_start) {
    std::erase_if(_entries, [&](const auto& kv) {
        if (kv.second.txn_first_offset >= 0) return false;
        const producer_batch* b = kv.second.last();
        return !b || b->last_offset < log_start;
    });
    std::erase_if(_aborted, [&](const aborted_txn& a) { return a.last_offset < log_start; });
}

void producer_state::expire(timestamp_ms now, int64_t expiration_ms) {
    std::erase_if(_entries, [&](const auto& kv) {
        return kv.second.txn_first_offset < 0 && now - kv.second.last_seen >= expiration_ms;
    });
}

void producer_state::expire_one(int64_t producer_id, timestamp_ms now, int64_t expiration_ms) {
    auto it = _entries.find(producer_id);
    if (it != _entries.end() && it->second.txn_first_offset < 0 &&
        now - it->second.last_seen >= expiration_ms)
        _entries.erase(it);
}

void producer_state::truncate(offset_t end) {
    for (auto& [id, e] : _entries) {
        std::erase_if(e.batches, [&](const producer_batch& b) { return b.last_offset >= end; });
        if (e.txn_first_offset >= end) e.txn_first_offset = -1;
    }
    std::erase_if(_entries, [](const auto& kv) {
        return kv.second.batches.empty() && kv.second.txn_first_offset < 0;
    });
    std::erase_if(_aborted, [&](const aborted_txn& a) { return a.last_offset >= end; });
    rebuild_ongoing();
}

size_t producer_state::memory_bytes() const {
    // A map node: the entry plus the tree's three pointers and colour.
    size_t n = 0;
    for (const auto& [id, e] : _entries)
        n += sizeof(producer_entry) + 4 * sizeof(void*) +
             e.batches.capacity() * sizeof(producer_batch);
    n += _ongoing.size() * (sizeof(std::pair<offset_t, int64_t>) + 4 * sizeof(void*));
    return n + _aborted.capacity() * sizeof(aborted_txn);
}

namespace {

// docs/formats/producer-snapshot.md: the file header (kind producer_snapshot, base
// offset = the offset the snapshot covers), then the entries and a CRC of them.
// Version 2 adds each entry's transaction fields and the aborted-transaction index.
constexpr uint16_t snapshot_version = 2;
constexpr size_t count_size = 4;
constexpr size_t entry_size_v1 = 8 + 2 + 8 + 8 + 1;
constexpr size_t entry_txn_size = 8 + 4;  // v2: txn_first_offset, coordinator_epoch
constexpr size_t batch_size = 4 + 4 + 8 + 8;
constexpr size_t aborted_size = 8 + 8 + 8;

template <typename T>
void put(bytes& out, T v) {
    uint8_t b[sizeof(T)];
    store_be<T>(b, v);
    out.insert(out.end(), b, b + sizeof(T));
}

}  // namespace

bytes producer_state::encode(offset_t offset, timestamp_ms now) const {
    bytes out(file_header_size);
    encode_file_header(out.data(), {file_kind::producer_snapshot, snapshot_version, offset, now});
    out.reserve(file_header_size + 2 * count_size +
                _entries.size() *
                    (entry_size_v1 + entry_txn_size + producer_batches_kept * batch_size) +
                _aborted.size() * aborted_size + 4);
    put<uint32_t>(out, static_cast<uint32_t>(_entries.size()));
    for (const auto& [id, e] : _entries) {
        put<int64_t>(out, id);
        put<int16_t>(out, e.epoch);
        put<int64_t>(out, e.last_timestamp);
        put<int64_t>(out, e.last_seen);
        put<uint8_t>(out, static_cast<uint8_t>(e.batches.size()));
        for (const auto& b : e.batches) {
            put<int32_t>(out, b.first_seq);
            put<int32_t>(out, b.last_seq);
            put<int64_t>(out, b.first_offset);
            put<int64_t>(out, b.last_offset);
        }
        put<int64_t>(out, e.txn_first_offset);
        put<int32_t>(out, e.coordinator_epoch);
    }
    put<uint32_t>(out, static_cast<uint32_t>(_aborted.size()));
    for (const auto& a : _aborted) {
        put<int64_t>(out, a.producer_id);
        put<int64_t>(out, a.first_offset);
        put<int64_t>(out, a.last_offset);
    }
    put<uint32_t>(out, crc32c(out.data() + file_header_size, out.size() - file_header_size));
    return out;
}

result<std::pair<producer_state, offset_t>> producer_state::decode(bytes_view data) {
    auto bad = [](const std::string& why) -> error {
        return {errc::corrupt, "producer snapshot: " + why};
    };
    auto head = decode_file_header(data, file_kind::producer_snapshot, snapshot_version);
    if (!head) return error{head.code(), "producer snapshot: " + head.err().message};
    if (data.size() < file_header_size + count_size + 4) return bad("shorter than its header");
    const uint8_t* p = data.data();
    const size_t body = data.size() - 4;
    if (load_be<uint32_t>(p + body) != crc32c(p + file_header_size, body - file_header_size))
        return bad("CRC mismatch");
    const auto count = load_be<uint32_t>(p + file_header_size);
    size_t pos = file_header_size + count_size;
    producer_state st;
    const bool v2 = head->version >= 2;
    const size_t entry_size = entry_size_v1;
    for (uint32_t i = 0; i < count; ++i) {
        if (body - pos < entry_size) return bad("truncated entry");
        producer_entry e;
        e.producer_id = load_be<int64_t>(p + pos);
        e.epoch = load_be<int16_t>(p + pos + 8);
        e.last_timestamp = load_be<int64_t>(p + pos + 10);
        e.last_seen = load_be<int64_t>(p + pos + 18);
        const size_t n = p[pos + 26];
        pos += entry_size;
        // Version 2 entries may have no batch (a producer known from a marker only).
        if ((n == 0 && !v2) || n > producer_batches_kept || body - pos < n * batch_size)
            return bad("bad batch count");
        for (size_t j = 0; j < n; ++j, pos += batch_size)
            e.batches.push_back({load_be<int32_t>(p + pos), load_be<int32_t>(p + pos + 4),
                                 load_be<int64_t>(p + pos + 8), load_be<int64_t>(p + pos + 16)});
        if (v2) {
            if (body - pos < entry_txn_size) return bad("truncated entry");
            e.txn_first_offset = load_be<int64_t>(p + pos);
            e.coordinator_epoch = load_be<int32_t>(p + pos + 8);
            pos += entry_txn_size;
        }
        st._entries[e.producer_id] = std::move(e);
    }
    if (v2) {
        if (body - pos < count_size) return bad("truncated aborted-transaction count");
        const auto aborted = load_be<uint32_t>(p + pos);
        pos += count_size;
        if ((body - pos) / aborted_size < aborted) return bad("truncated aborted transaction");
        for (uint32_t i = 0; i < aborted; ++i, pos += aborted_size)
            st._aborted.push_back({load_be<int64_t>(p + pos), load_be<int64_t>(p + pos + 8),
                                   load_be<int64_t>(p + pos + 16)});
    }
    st.rebuild_ongoing();
    if (pos != body) return bad("trailing bytes");
    return std::pair{std::move(st), offset_t{head->base_offset}};
}

}  // namespace sluice::log
