// Trimming the front of a partition log: DeleteRecords and retention. Both advance the
// log start offset, make it durable in the log-start-offset file, and only then delete
// the segments lying wholly below it, oldest first, data file first. A crash at any
// point leaves a loadable partition: load() finishes an interrupted deletion
// (open_partition_files). See docs/formats/data-dir.md, "Deleting segments".

#include <fmt/format.h>

#include "common/logging.h"
#include "log/file_header.h"
#include "log/log_start.h"
#include "log/partition_log.h"

namespace sluice::log {

partition_log::state* partition_log::loaded_state() {
    std::lock_guard lk(_mu);
    if (auto r = ensure_loaded(); !r) return nullptr;
    // Stays valid: only unload() (remove_topic, after which the caller may not use this
    // partition) replaces it; a load retry replaces only a state whose load failed.
    return _st.get();
}

result<offset_t> partition_log::delete_records(offset_t before) {
    state* st = loaded_state();
    if (!st) return failure().value_or(error{errc::io_error, "partition failed to load"});
    std::lock_guard trim(st->trim_mu);
    {
        std::lock_guard lk(_mu);
        if (auto r = ensure_loaded(); !r) return r.err();
        const offset_t hw = _leo.load();
        if (before == -1) before = hw;
        if (before < 0 || before > hw)
            return {errc::out_of_range,
                    fmt::format("cannot delete records of {}-{} before offset {}: the high "
                                "watermark is {}",
                                _topic->name, _partition, before, hw)};
        if (before <= _lso.load()) return _lso.load();
    }
    // The start file is durable at once; the records below it must be too, or a machine
    // crash would leave a start past the end and offsets handed out again below it.
    if (before > _durable.load()) {
        if (auto r = sync_files(); !r) return r.err();
    }
    auto done = advance_start(*st, before);
    if (!done) return done.err();
    log_info("storage",
             "{}-{}: log start offset advanced to {} (DeleteRecords); {} segments, {} bytes "
             "deleted",
             _topic->name, _partition, done->log_start, done->segments, done->bytes);
    return done->log_start;
}

result<partition_log::trim_result> partition_log::advance_start(state& st, offset_t target) {
    // Durable first: once a reader has seen the new start, a crash must not bring back
    // the records below it; and a deleted segment must never leave a gap below a start
    // that still points into it.
    if (target > st.durable_start) {
        if (auto r = write_log_start(st.dir, target); !r) return r.err();
        st.durable_start = target;
    }
    trim_result out;
    std::vector<std::unique_ptr<segment>> gone;
    {
        std::lock_guard lk(_mu);
        if (target > _lso.load()) _lso.store(target);
        out.log_start = _lso.load();
        auto& segs = st.segments;
        // The active segment stays even when wholly below: appends go there.
        size_t n = 0;
        while (n + 1 < segs.size() && segs[n]->end_offset() <= out.log_start) ++n;
        const auto end = segs.begin() + static_cast<ptrdiff_t>(n);
        gone.assign(std::make_move_iterator(segs.begin()), std::make_move_iterator(end));
        segs.erase(segs.begin(), end);
        // As Kafka: a producer whose batches all lie below the start is forgotten.
        st.producers.evict_below(out.log_start);
    }
    // Outside _mu: no reader can find these segments any more, and one that already took
    // a data file keeps reading it (an unlinked file lives while it is open).
    for (const auto& seg : gone) {
        if (auto r = remove_segment_files(seg->dir(), seg->base_offset()); !r) {
            // Stop here to keep the files contiguous; the next load removes the rest, as
            // they lie below the durable start.
            log_warn("storage", "{}-{}: {}; the rest goes at the next load", _topic->name,
                     _partition, r.err().message);
            break;
        }
        ++out.segments;
        out.bytes += seg->size();
    }
    return out;
}

result<partition_log::trim_result> partition_log::apply_retention(const log_config& cfg,
                                                                  timestamp_ms now) {
    state* st = loaded_state();
    if (!st) return failure().value_or(error{errc::io_error, "partition failed to load"});
    std::lock_guard trim(st->trim_mu);
    offset_t target = 0;
    {
        std::lock_guard lk(_mu);
        if (auto r = ensure_loaded(); !r) return r.err();
        auto n = retention_count(cfg, now);
        if (!n) return n.err();
        if (*n == 0) return trim_result{0, 0, _lso.load()};
        // As in Kafka: an expired active segment is replaced by an empty one at the log
        // end so that it can go. The new file's directory entry becomes durable with the
        // log-start-offset file's rename, before the old segment is unlinked.
        if (*n == st->segments.size()) {
            if (auto r = roll_segment(now); !r) return r.err();
        }
        target = st->segments[*n]->base_offset();
    }
    auto done = advance_start(*st, target);
    if (done && done->segments > 0)
        log_info("retention", "{}-{}: deleted {} segments ({} bytes); log start offset {}",
                 _topic->name, _partition, done->segments, done->bytes, done->log_start);
    return done;
}

result<size_t> partition_log::retention_count(const log_config& cfg, timestamp_ms now) const {
    const auto& segs = _st->segments;
    int64_t total = 0;
    for (const auto& s : segs) total += s->size();
    const offset_t hw = _leo.load();
    size_t n = 0;
    for (; n < segs.size(); ++n) {
        segment& seg = *segs[n];
        const bool active = n + 1 == segs.size();
        // Only records every reader may already have seen go; an empty active segment
        // holds nothing to delete.
        if (!seg.has_data() || seg.end_offset() > hw) break;
        // Size never rolls the active segment: segment.bytes bounds it already.
        bool expired =
            !active && cfg.retention_bytes >= 0 && total - seg.size() >= cfg.retention_bytes;
        if (!expired && cfg.retention_ms >= 0) {
            auto ts = largest_timestamp(seg);
            if (!ts) return ts.err();
            expired = now - *ts > cfg.retention_ms;
        }
        if (!expired) break;
        total -= seg.size();
    }
    return n;
}

result<timestamp_ms> partition_log::largest_timestamp(segment& seg) const {
    auto known = seg.known_max_timestamp();
    if (!known) return known.err();
    timestamp_ms ts = known->value_or(no_timestamp);
    if (!*known) {
        if (auto r = ensure_indexes(seg); !r) return r.err();
        ts = seg.max_timestamp();
    }
    if (ts >= 0) return ts;
    // No batch carries a timestamp (a producer may send -1): like Kafka, the time the
    // data file was last written stands in.
    return file_mtime_ms(seg.data_path());
}

bool partition_log::retention_candidate(const log_config& cfg, timestamp_ms now) const {
    const fs::path dir = dir_path();
    auto files = list_segments(dir);
    if (!files) return files.code() != errc::not_found;  // no directory: never written
    if (files->empty()) return false;
    const auto& first = files->front();
    if (cfg.retention_bytes >= 0 && files->size() > 1) {
        int64_t total = 0;
        for (const auto& f : *files) total += f.size;
        if (total - first.size >= cfg.retention_bytes) return true;
    }
    if (cfg.retention_ms < 0 || first.size <= static_cast<int64_t>(file_header_size)) return false;
    // Any time index entry's timestamp is at most the segment's largest, so "not expired"
    // told from the last entry is right; "expired", an unreadable index, or one without
    // entries are settled by loading.
    auto last = read_last_time_entry(dir / segment_file_name(first.base_offset, time_index_ext),
                                     first.base_offset);
    return !last || !*last || now - (*last)->timestamp > cfg.retention_ms;
}

}  // namespace sluice::log
