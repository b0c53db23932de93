// Broker append times of partition_log (SQL's timestamp_broker column and its range
// predicates): per-segment append-time files (docs/formats/append-time-index.md), loaded
// on demand for sealed segments and always held for the active one. Times never
// decrease along the partition, so a time search skips whole segments by their first
// and last times and binary-searches one segment's entries.

#include <algorithm>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/logging.h"
#include "log/partition_log.h"

namespace sluice::log {

size_t partition_log::segment_index(const segment& seg) const {
    const auto& segs = _st->segments;
    auto it = std::lower_bound(
        segs.begin(), segs.end(), seg.base_offset(),
        [](const std::unique_ptr<segment>& s, offset_t o) { return s->base_offset() < o; });
    return static_cast<size_t>(it - segs.begin());
}

result<void> partition_log::ensure_append_times(segment& seg) const {
    if (seg.append_times_loaded()) return {};
    const size_t i = segment_index(seg);
    // Estimates lie between the neighbours' times: the previous segment's last and the
    // next one's first (a sealed segment always has a next one).
    auto bounds = [&]() -> result<std::pair<timestamp_ms, timestamp_ms>> {
        if (auto r = ensure_indexes(seg); !r) return r.err();
        timestamp_ms lo = no_timestamp;
        timestamp_ms hi = no_timestamp;
        if (i > 0) {
            auto b = segment_append_bounds(i - 1, false);
            if (!b) return b.err();
            if (*b) lo = (*b)->last_time;
        }
        if (i + 1 < _st->segments.size()) {
            auto b = segment_append_bounds(i + 1, false);
            if (!b) return b.err();
            if (*b) hi = (*b)->first_time;
        }
        if (hi == no_timestamp) hi = now_ms();
        return std::pair(lo, hi);
    };
    repair_summary sum;
    // Sealed: the file was fsynced whole at seal, so any entry it lacks is damage.
    auto r = recover_append_times(seg, seg.end_offset(), bounds, false, *_ctx->reporter, sum);
    if (sum.repaired()) log_warn("storage", "{}-{}: {}", _topic->name, _partition, sum.describe());
    return r;
}

result<std::optional<append_time_bounds>> partition_log::segment_append_bounds(size_t i,
                                                                               bool load) const {
    segment& seg = *_st->segments[i];
    if (auto known = seg.known_append_time_bounds()) return *known;
    auto b = read_append_time_bounds(seg.append_time_path(), seg.base_offset());
    if (!b && b.code() == errc::io_error) return b.err();
    // Trusted only when it covers the segment to its end; otherwise (file missing,
    // damaged, or a segment compaction shortened) loading settles it.
    if (b && *b && (*b)->end == seg.end_offset()) {
        seg.set_append_time_bounds(*b);
        return *b;
    }
    if (!load) return std::optional<append_time_bounds>{};
    if (auto r = ensure_append_times(seg); !r) return r.err();
    return *seg.known_append_time_bounds();
}

result<std::vector<append_time_run>> partition_log::append_times(offset_t from,
                                                                 offset_t limit) const {
    std::lock_guard lk(_mu);
    if (auto r = ensure_loaded(); !r) return r.err();
    from = std::max(from, _lso.load());
    limit = std::min(limit, _leo.load());
    std::vector<append_time_run> out;
    if (from >= limit) return out;
    const auto& segs = _st->segments;
    segment* first_seg = segment_for(from);
    for (size_t i = first_seg ? segment_index(*first_seg) : 0;
         i < segs.size() && segs[i]->base_offset() < limit; ++i) {
        segment& seg = *segs[i];
        if (auto r = ensure_append_times(seg); !r) return r.err();
        const auto& idx = seg.append_times();
        size_t j = 0;
        if (out.empty()) {
            const ptrdiff_t k = idx.last_starting_at_or_below(from);
            j = k < 0 ? 0 : static_cast<size_t>(k);
        }
        for (; j < idx.size(); ++j) {
            const auto e = idx.at(j);
            if (e.first >= limit) break;
            if (!out.empty() && out.back().time == e.time) continue;
            // The first run starts at or before `from`: offsets before an entry that
            // starts later hold no record (compaction emptied them).
            out.push_back({out.empty() ? std::min(e.first, from) : e.first, e.time});
        }
    }
    return out;
}

result<offset_t> partition_log::offset_for_append_time(timestamp_ms ts) const {
    std::lock_guard lk(_mu);
    if (auto r = ensure_loaded(); !r) return r.err();
    const offset_t hw = _leo.load();
    const offset_t lso = _lso.load();
    if (lso >= hw) return hw;
    const auto& segs = _st->segments;
    segment* first_seg = segment_for(lso);
    const size_t begin = first_seg ? segment_index(*first_seg) : 0;
    size_t end = begin;
    while (end < segs.size() && segs[end]->base_offset() < hw) ++end;
    // The first segment whose last time reaches ts. A segment without entries (compaction
    // can empty one) is judged by the next one that has some. Everything before `lo`
    // ends below ts; the walk from `lo` below finds the answer.
    size_t lo = begin;
    size_t hi = end;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        size_t j = mid;
        std::optional<append_time_bounds> b;
        for (; j < hi && !b; ++j) {
            auto r = segment_append_bounds(j, true);
            if (!r) return r.err();
            b = *r;
        }
        if (!b || b->last_time >= ts)
            hi = mid;
        else
            lo = j;  // one past the segment that ended below ts
    }
    for (size_t i = lo; i < end; ++i) {
        segment& seg = *segs[i];
        if (auto r = ensure_append_times(seg); !r) return r.err();
        const auto& idx = seg.append_times();
        for (size_t j = idx.first_at_or_after(ts); j < idx.size(); ++j) {
            const auto e = idx.at(j);
            if (e.end <= lso) continue;  // below a start DeleteRecords set inside the segment
            return std::min(std::max(e.first, lso), hw);
        }
    }
    return hw;
}

}  // namespace sluice::log
