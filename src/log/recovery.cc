#include "log/recovery.h"

#include <fmt/format.h>

#include "common/clock.h"
#include "log/batch_scanner.h"
#include "log/file_header.h"

namespace sluice::log {

std::string repair_summary::describe() const {
    std::string out;
    for (const auto& n : notes) {
        if (!out.empty()) out += "; ";
        out += n;
    }
    return out;
}

namespace {

using step = batch_scanner::step;

struct scan_end {
    int64_t valid_end;     // byte after the last valid batch
    offset_t next_offset;  // offset after the last valid batch
    bool clean;            // the data ended exactly at a batch boundary
    std::string reason;
};

// Scans from (position, offset) to the end of the file, verifying every batch and
// feeding the segment's index bookkeeping.
result<scan_end> scan_and_index(segment& seg, const file& f, int64_t position, offset_t offset,
                                int64_t file_size, int32_t interval) {
    batch_scanner scan(f, position, file_size, offset);
    while (true) {
        auto s = scan.next(true);
        if (!s) return s.err();
        if (*s == step::end) return scan_end{scan.position(), scan.next_offset(), true, {}};
        if (*s != step::batch)
            return scan_end{scan.position(), scan.next_offset(), false, scan.reason()};
        const auto& h = scan.header();
        seg.note_batch(h.base_offset, scan.position(), h.max_timestamp, interval);
    }
}

std::string file_name(const fs::path& p) {
    return p.filename().string();
}

}  // namespace

result<void> recover_last_segment(segment& seg, bool full, int32_t interval, timestamp_ms now,
                                  recovery_reporter& rep, repair_summary& sum) {
    auto f = seg.data();
    if (!f && f.code() == errc::corrupt && seg.size() <= static_cast<int64_t>(file_header_size)) {
        // Only a crash while the segment was being created leaves a short or torn
        // header, and then the segment holds no batch yet.
        std::string why = f.err().message;
        if (auto r = seg.rewrite_header(now); !r) return r;
        rep.truncated(seg.data_path(), 0, seg.size(), seg.base_offset(), why);
        sum.notes.push_back(
            fmt::format("rewrote the torn header of empty segment {}", file_name(seg.data_path())));
        f = seg.data();
    }
    if (!f) {
        rep.corruption(seg.data_path(), f.err().message);
        ++sum.corruptions;
        return f.err();
    }
    const int64_t file_size = seg.size();

    std::string why;
    auto loaded = seg.load_indexes(&why);
    if (!loaded) return loaded.err();
    std::optional<offset_index> old_offsets;
    std::optional<time_index> old_times;
    if (*loaded && full) {
        old_offsets = seg.offsets();
        old_times = seg.times();
    }
    int64_t start_pos = file_header_size;
    offset_t start_off = seg.base_offset();
    if (*loaded && !full) {
        if (!seg.offsets().empty()) {
            start_pos = seg.offsets().last().position;
            start_off = seg.offsets().last().offset;
        }
    } else {
        seg.reset_indexes();
    }

    auto end = scan_and_index(seg, **f, start_pos, start_off, file_size, interval);
    if (!end) return end.err();
    seg.set_end_offset(end->next_offset);
    sum.log_end_offset = end->next_offset;
    bool changed = false;
    if (!end->clean) {
        int64_t cut = file_size - end->valid_end;
        if (auto r = seg.truncate(end->valid_end, end->next_offset); !r) return r;
        rep.truncated(seg.data_path(), end->valid_end, cut, end->next_offset, end->reason);
        sum.bytes_truncated += cut;
        sum.notes.push_back(
            fmt::format("truncated {} bytes at byte {} of {} ({}); log end offset is now {}", cut,
                        end->valid_end, file_name(seg.data_path()), end->reason, end->next_offset));
        changed = true;
        if (*loaded && !full) {
            // Entries written at a clean shutdown may name offsets that are gone now.
            seg.reset_indexes();
            auto again = scan_and_index(seg, **f, file_header_size, seg.base_offset(),
                                        end->valid_end, interval);
            if (!again) return again.err();
            *loaded = false;
            why = "the data under it was truncated";
        }
    }
    // The final entry makes a rebuilt index equal to one saved at a clean shutdown.
    seg.add_final_time_entry();
    if (!*loaded || (full && (!(*old_offsets == seg.offsets()) || !(*old_times == seg.times())))) {
        if (why.empty()) why = "it did not cover the data";
        rep.index_rebuilt(seg.index_path(), why);
        ++sum.indexes_rebuilt;
        sum.notes.push_back(
            fmt::format("rebuilt the indexes of {} ({})", file_name(seg.data_path()), why));
        seg.set_indexes_dirty(true);
    } else if (full) {
        seg.set_indexes_dirty(false);
    }
    if (auto r = seg.save_indexes(); !r) return r;
    if (full || changed) {
        auto g = seg.data();
        if (!g) return g.err();
        if (auto r = sync_data(**g); !r) return r;
    }
    return {};
}

result<void> ensure_sealed_indexes(segment& seg, int32_t interval, recovery_reporter& rep,
                                   repair_summary& sum) {
    if (seg.indexes_loaded()) return {};
    std::string why;
    auto loaded = seg.load_indexes(&why);
    if (!loaded) return loaded.err();
    if (*loaded) return {};
    auto f = seg.data();
    if (!f) return f.err();
    seg.reset_indexes();
    auto end = scan_and_index(seg, **f, file_header_size, seg.base_offset(), seg.size(), interval);
    if (!end) return end.err();
    if (!end->clean || end->next_offset != seg.end_offset()) {
        auto what = end->clean ? fmt::format(
                                     "data ends at offset {}, the next segment starts "
                                     "at {}",
                                     end->next_offset, seg.end_offset())
                               : fmt::format("{} at byte {}", end->reason, end->valid_end);
        rep.corruption(seg.data_path(), what);
        ++sum.corruptions;
        sum.notes.push_back(fmt::format("sealed segment {} is damaged ({}), left as is",
                                        file_name(seg.data_path()), what));
    } else {
        seg.add_final_time_entry();
    }
    rep.index_rebuilt(seg.index_path(), why);
    ++sum.indexes_rebuilt;
    sum.notes.push_back(
        fmt::format("rebuilt the indexes of {} ({})", file_name(seg.data_path()), why));
    return seg.save_indexes();
}

namespace {

// A sealed segment must end with a whole batch whose last offset is just below the next
// segment's base. Reads from the last index entry only.
void check_sealed_tail(segment& seg, recovery_reporter& rep, repair_summary& sum) {
    auto f = seg.data();
    if (!f) return;
    auto e = seg.offsets().lookup(seg.end_offset());
    batch_scanner scan(**f, e.position, seg.size(), e.offset);
    result<step> s = step::batch;
    while ((s = scan.next(false)) && *s == step::batch) {
    }
    std::string what;
    if (!s)
        what = s.err().message;
    else if (*s != step::end)
        what = fmt::format("{} at byte {}", scan.reason(), scan.position());
    else if (scan.next_offset() != seg.end_offset())
        what = fmt::format("data ends at offset {}, the next segment starts at {}",
                           scan.next_offset(), seg.end_offset());
    if (what.empty()) return;
    rep.corruption(seg.data_path(), what);
    ++sum.corruptions;
    sum.notes.push_back(fmt::format("sealed segment {} is damaged ({}), left as is",
                                    file_name(seg.data_path()), what));
}

}  // namespace

result<repair_summary> recover_partition(const fs::path& dir, int32_t interval, fd_cache& cache,
                                         recovery_reporter& rep) {
    repair_summary sum;
    auto files = list_segments(dir);
    if (!files) return files.err();
    for (size_t i = 0; i < files->size(); ++i) {
        const auto& fi = (*files)[i];
        bool last = i + 1 == files->size();
        segment seg(dir, fi.base_offset, fi.size, last, cache);
        if (last) {
            if (auto r = recover_last_segment(seg, true, interval, now_ms(), rep, sum); !r)
                return r.err();
            continue;
        }
        seg.set_end_offset((*files)[i + 1].base_offset);
        if (auto r = ensure_sealed_indexes(seg, interval, rep, sum); !r) {
            rep.corruption(seg.data_path(), r.err().message);
            ++sum.corruptions;
            sum.notes.push_back(fmt::format("sealed segment {} is unreadable ({})",
                                            file_name(seg.data_path()), r.err().message));
            continue;
        }
        check_sealed_tail(seg, rep, sum);
    }
    return sum;
}

}  // namespace sluice::log
