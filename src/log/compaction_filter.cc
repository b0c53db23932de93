// record_selector (compaction_filter.h): Kafka's cleaner rules for one pass.

#include "log/compaction_filter.h"

#include <algorithm>
#include <limits>

#include "common/crc32c.h"
#include "common/endian.h"
#include "protocol/control_batch.h"

namespace sluice::log {

namespace {

std::string key_of(bytes_view k) {
    return {reinterpret_cast<const char*>(k.data()), k.size()};
}

// KIP-534's delete horizon: attributes bit 6 says the batch's base timestamp is the time
// after which the cleaner may remove it (a marker whose transaction has no record left).
constexpr int16_t delete_horizon_flag = 0x40;

// Appends batch b to out with the delete horizon set to `horizon` (CRC recomputed).
void append_with_horizon(bytes_view b, timestamp_ms horizon, bytes& out) {
    const size_t at = out.size();
    out.insert(out.end(), b.begin(), b.end());
    uint8_t* p = out.data() + at;
    const auto attrs = static_cast<int16_t>(
        load_be<int16_t>(p + protocol::batch_attributes_offset) | delete_horizon_flag);
    store_be<int16_t>(p + protocol::batch_attributes_offset, attrs);
    store_be<int64_t>(p + protocol::batch_attributes_offset + 6, horizon);
    const size_t covered = protocol::batch_attributes_offset;
    store_be<uint32_t>(p + protocol::batch_crc_offset, crc32c(p + covered, b.size() - covered));
}

}  // namespace

timestamp_ms record_time(const protocol::batch_header& h, const protocol::record_view& r) {
    return h.ts_type() == protocol::timestamp_type::log_append_time ? h.max_timestamp : r.timestamp;
}

void record_selector::note_latest(const protocol::batch_header& h, bytes_view batch) {
    // Markers' keys are control record keys, and aborted records never were values of
    // their keys: neither supersedes a record.
    if (h.is_control() || in_aborted(_in.aborted, h)) return;
    // A compressed batch is decompressed here, and again by filter() later.
    protocol::for_each_record(batch, [&](const protocol::record_view& rec) {
        if (rec.offset >= _in.dirty_start && rec.key) _latest[key_of(*rec.key)] = rec.offset;
        return true;
    });
}

// A transaction marker, as Kafka's cleaner treats it (KIP-534): kept while its
// transaction has a record left in the log; once the pass finds none, kept with its
// delete horizon set to now + delete.retention.ms (so that a read_committed consumer
// that read the transaction's records before they went still finds the marker that ends
// them); removed by the first pass after that horizon, an ABORT marker with its
// aborted-transaction index entry.
result<record_selector::verdict> record_selector::keep_marker(const protocol::batch_header& h,
                                                              bytes_view b, bytes& out) {
    auto c = protocol::decode_control_batch(b);
    if (!c) return c.err();
    verdict v;
    const auto it = _txn_kept.find(h.producer_id);
    const bool has_records = it != _txn_kept.end() && it->second;
    if (c->is_marker()) _txn_kept.erase(h.producer_id);
    const bool stamped = (h.attributes & delete_horizon_flag) != 0;
    const timestamp_ms now = _in.now;
    // Kept as it is: not a marker, a marker whose transaction still has records, or a
    // stamped marker whose horizon (its base timestamp) has not passed.
    if (!c->is_marker() || has_records || (stamped && now < h.base_timestamp)) {
        out.insert(out.end(), b.begin(), b.end());
    } else if (!stamped) {
        constexpr int64_t top = std::numeric_limits<int64_t>::max();
        const int64_t keep_ms = std::max<int64_t>(_in.delete_retention_ms, 0);
        append_with_horizon(b, keep_ms > top - now ? top : now + keep_ms, out);
        v.changed = true;
    } else {
        v.removed += h.record_count;
        if (!c->is_commit()) _dropped_aborts.emplace_back(h.producer_id, h.base_offset);
    }
    return v;
}

result<record_selector::verdict> record_selector::filter(const protocol::batch_header& h,
                                                         bytes_view b, bytes& out) {
    auto keep = [&](const protocol::record_view& rec) {
        if (rec.offset < _in.log_start || !rec.key) return true;
        auto it = _latest.find(key_of(*rec.key));
        if (it != _latest.end() && rec.offset < it->second) return false;
        // A tombstone goes once an earlier pass has seen it (it lies in the clean part)
        // and delete.retention.ms has passed since its timestamp.
        if (!rec.value && rec.offset < _in.dirty_start &&
            _in.now - record_time(h, rec) > _in.delete_retention_ms)
            return false;
        return true;
    };
    const size_t at = out.size();
    verdict v;
    // Each idempotent producer's last batch stays whole: the producer state rebuilt from
    // the log needs its sequence range (Kafka keeps its header). An aborted
    // transaction's batches go whole.
    if (h.is_control()) {
        auto m = keep_marker(h, b, out);
        if (!m) return m.err();
        v = *m;
    } else if (h.producer_id >= 0 && _in.producer_last.contains(h.base_offset)) {
        out.insert(out.end(), b.begin(), b.end());
    } else if (in_aborted(_in.aborted, h)) {
        v.removed += h.record_count;
    } else {
        auto d = protocol::filter_batch(b, keep, out);
        if (!d) return d.err();
        v.removed += *d;
    }
    if (out.size() > at && h.is_transactional() && !h.is_control()) _txn_kept[h.producer_id] = true;
    return v;
}

}  // namespace sluice::log
