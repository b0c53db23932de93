// Timestamp lookups of partition_log (ListOffsets by time, MAX_TIMESTAMP, SQL time
// predicates). Both use the time index to skip to the right stretch of a segment, then
// read batch headers, and records only within the one batch that may hold the answer.

#include <fmt/format.h>

#include "log/batch_scanner.h"
#include "log/partition_log.h"

namespace sluice::log {

namespace {

bool is_log_append_time(const protocol::batch_header& h) {
    return h.ts_type() == protocol::timestamp_type::log_append_time;
}

// The first record of the batch at or above offset `from` with timestamp >= ts (for
// LogAppendTime batches every record carries the batch's max timestamp).
std::optional<offset_and_time> first_record_at_or_after(bytes_view batch,
                                                        const protocol::batch_header& h,
                                                        timestamp_ms ts, offset_t from) {
    if (is_log_append_time(h))
        return h.max_timestamp >= ts
                   ? std::optional(offset_and_time{std::max(h.base_offset, from), h.max_timestamp})
                   : std::nullopt;
    std::optional<offset_and_time> found;
    protocol::for_each_record(batch, [&](const protocol::record_view& r) {
        if (r.offset < from || r.timestamp < ts) return true;
        found = offset_and_time{r.offset, r.timestamp};
        return false;
    });
    return found;
}

// The first record with the largest timestamp among those of the batch at or above
// offset `from`.
std::optional<offset_and_time> max_record_from(bytes_view batch, const protocol::batch_header& h,
                                               offset_t from) {
    if (is_log_append_time(h))
        return offset_and_time{std::max(h.base_offset, from), h.max_timestamp};
    std::optional<offset_and_time> best;
    protocol::for_each_record(batch, [&](const protocol::record_view& r) {
        if (r.offset >= from && (!best || r.timestamp > best->timestamp))
            best = offset_and_time{r.offset, r.timestamp};
        return true;
    });
    return best;
}

}  // namespace

template <typename Fn>
result<void> partition_log::scan_range(segment& seg, offset_t from, offset_t limit, Fn&& fn) const {
    auto pos = seg.find_position(from);
    if (!pos) return pos.err();
    auto f = seg.data();
    if (!f) return f.err();
    batch_scanner scan(**f, *pos, seg.size());
    while (true) {
        auto s = scan.next(false);
        if (!s) return s.err();
        if (*s == batch_scanner::step::end) return {};
        if (*s != batch_scanner::step::batch)
            return {errc::corrupt, fmt::format("{} at byte {}: {}", seg.data_path().string(),
                                               scan.position(), scan.reason())};
        if (scan.header().base_offset >= limit) return {};
        auto keep_going = fn(scan);
        if (!keep_going) return keep_going.err();
        if (!*keep_going) return {};
    }
}

result<std::optional<offset_and_time>> partition_log::offset_for_timestamp(timestamp_ms ts) const {
    std::lock_guard lk(_mu);
    if (auto r = ensure_loaded(); !r) return r.err();
    const offset_t hw = _leo.load();
    const offset_t lso = _lso.load();
    for (auto& seg : _st->segments) {
        if (seg->base_offset() >= hw) break;
        if (seg->end_offset() <= lso) continue;  // the active segment, emptied by DeleteRecords
        if (auto r = ensure_indexes(*seg); !r) return r.err();
        const offset_t limit = std::min(hw, seg->end_offset());
        // Records below `start` are all older than ts (time index invariant) or deleted.
        const offset_t start = std::max(seg->times().start_for(ts, limit), lso);
        std::optional<offset_and_time> found;
        auto r = scan_range(*seg, start, limit, [&](batch_scanner& scan) -> result<bool> {
            const auto& h = scan.header();
            if (h.max_timestamp < ts) return true;
            auto b = scan.batch();
            if (!b) return b.err();
            found = first_record_at_or_after(*b, h, ts, lso);
            return !found;
        });
        if (!r) return r.err();
        if (found) return found;
    }
    return std::optional<offset_and_time>{};
}

result<std::optional<offset_and_time>> partition_log::locate_max(segment& seg, offset_t from,
                                                                 offset_t limit,
                                                                 timestamp_ms max_ts) const {
    std::optional<offset_and_time> found;
    auto r = scan_range(seg, from, limit, [&](batch_scanner& scan) -> result<bool> {
        const auto& h = scan.header();
        if (h.max_timestamp != max_ts) return true;
        if (is_log_append_time(h)) {
            found = offset_and_time{h.base_offset, h.max_timestamp};
            return false;
        }
        auto b = scan.batch();
        if (!b) return b.err();
        // The first record carrying the batch's max timestamp; a producer that set the
        // header's max wrong gets its largest record instead.
        std::optional<offset_and_time> best;
        protocol::for_each_record(*b, [&](const protocol::record_view& rec) {
            if (!best || rec.timestamp > best->timestamp) best = {rec.offset, rec.timestamp};
            return rec.timestamp != max_ts;
        });
        found = best;
        return false;
    });
    if (!r) return r.err();
    return found;
}

result<std::optional<offset_and_time>> partition_log::max_timestamp_offset() const {
    std::lock_guard lk(_mu);
    if (auto r = ensure_loaded(); !r) return r.err();
    const offset_t hw = _leo.load();
    const offset_t lso = _lso.load();
    std::optional<offset_and_time> best;
    for (auto& seg : _st->segments) {
        if (seg->base_offset() >= hw) break;
        if (seg->end_offset() <= lso) continue;
        if (auto r = ensure_indexes(*seg); !r) return r.err();
        const offset_t limit = std::min(hw, seg->end_offset());
        auto m = lso > seg->base_offset()
                     ? segment_max_from(*seg, lso, limit)
                     : segment_max(*seg, limit, best ? best->timestamp : no_timestamp);
        if (!m) return m.err();
        if (*m && (!best || (*m)->timestamp > best->timestamp)) best = *m;
    }
    return best;
}

// The earliest record carrying the segment's largest timestamp below `limit`, when that
// timestamp beats `beat`.
result<std::optional<offset_and_time>> partition_log::segment_max(segment& seg, offset_t limit,
                                                                  timestamp_ms beat) const {
    const auto& times = seg.times();
    // The index bounds the records below its last usable entry; batches after that
    // entry are read (at most about one index interval).
    ptrdiff_t i = times.last_at_or_below(limit);
    timestamp_ms index_max = i < 0 ? no_timestamp : times.at(static_cast<size_t>(i)).timestamp;
    offset_t tail_from = i < 0 ? seg.base_offset() : times.at(static_cast<size_t>(i)).offset;
    timestamp_ms tail_max = no_timestamp;
    auto r = scan_range(seg, tail_from, limit, [&](batch_scanner& scan) -> result<bool> {
        tail_max = std::max(tail_max, scan.header().max_timestamp);
        return true;
    });
    if (!r) return r.err();
    timestamp_ms seg_max = std::max(index_max, tail_max);
    if (seg_max == no_timestamp || seg_max <= beat) return std::optional<offset_and_time>{};
    // Earliest occurrence: in the stretch before the first index entry reaching the
    // max, else in the tail.
    offset_t from = tail_from;
    offset_t to = limit;
    if (index_max >= tail_max) {
        size_t j = 0;
        while (times.at(j).timestamp < index_max) ++j;
        to = times.at(j).offset;
        from = j == 0 ? seg.base_offset() : times.at(j - 1).offset;
    }
    return locate_max(seg, from, to, seg_max);
}

// segment_max for the segment holding a log start set by DeleteRecords: the index cannot
// tell records below the start from those above, so the batch headers from the start on
// are read (one segment at most, and only until retention deletes it).
result<std::optional<offset_and_time>> partition_log::segment_max_from(segment& seg, offset_t from,
                                                                       offset_t limit) const {
    std::optional<offset_and_time> found;  // within the batch holding `from`
    timestamp_ms best = no_timestamp;
    offset_t best_batch = -1;  // a later batch whose max header timestamp is the best
    auto r = scan_range(seg, from, limit, [&](batch_scanner& scan) -> result<bool> {
        const auto& h = scan.header();
        if (h.max_timestamp <= best) return true;
        if (h.base_offset >= from) {
            best = h.max_timestamp;
            best_batch = h.base_offset;
            return true;
        }
        auto b = scan.batch();
        if (!b) return b.err();
        found = max_record_from(*b, h, from);
        if (found) best = found->timestamp;
        return true;
    });
    if (!r) return r.err();
    if (best_batch < 0) return found;
    return locate_max(seg, best_batch, limit, best);
}

}  // namespace sluice::log
