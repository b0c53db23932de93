#include "log/recovery.h"

#include <unistd.h>

#include <cerrno>
#include <limits>

#include <fmt/format.h>

#include "common/clock.h"
#include "log/batch_scanner.h"
#include "log/cleaner_files.h"
#include "log/file_header.h"
#include "log/log_start.h"

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
// `gaps`: sealed segments, which compaction may have thinned (docs/formats/segment.md).
result<scan_end> scan_and_index(segment& seg, const file& f, int64_t position, offset_t offset,
                                int64_t file_size, int32_t interval, bool gaps = false) {
    batch_scanner scan(f, position, file_size, offset, gaps);
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

// A rebuilt index or append-time file that cannot be written (ENOSPC on a full disk) does
// not take the partition out of service: the segment keeps the copy in memory, still
// marked dirty, and writes it at its next save (a roll, a shutdown). What is on disk is
// at worst rebuilt again by the next recovery.
void save_or_keep(const result<void>& saved, const fs::path& file, repair_summary& sum) {
    if (saved) return;
    ++sum.unsaved;
    sum.notes.push_back(fmt::format("could not write {} ({}); serving from memory",
                                    file_name(file), saved.err().message));
}

}  // namespace

result<void> recover_append_times(segment& seg, offset_t data_end, const estimate_bounds_fn& bounds,
                                  bool trust_tail, recovery_reporter& rep, repair_summary& sum) {
    auto file = read_append_time_file(seg.append_time_path(), seg.base_offset());
    if (!file) return file.err();
    append_time_index idx = std::move(file->index);
    // Entries past the data describe batches a crash or recovery cut off.
    size_t same = idx.trim(data_end);
    // Appends in the last entry's millisecond grew it in memory only.
    if (trust_tail && file->problem.empty() && !idx.empty() && idx.covered_end() < data_end) {
        same = std::min(same, idx.size() - 1);
        idx.add(idx.covered_end(), data_end, idx.last().time);
    }
    const offset_t covered = idx.covered_end();
    if (covered < data_end) {
        // Asked first: it may load the offset index, which saves reading from byte 32.
        auto lohi = bounds();
        if (!lohi) return lohi.err();
        auto f = seg.data();
        if (!f) return f.err();
        int64_t pos = file_header_size;
        if (seg.indexes_loaded()) {
            auto p = seg.find_position(covered);
            if (!p) return p.err();
            pos = *p;
        }
        offset_t from = -1;
        offset_t to = -1;
        batch_scanner scan(**f, pos, seg.size());
        while (true) {
            auto s = scan.next(false);
            if (!s) return s.err();
            // Damaged data is the data recovery's to report; estimates stop there.
            if (*s != step::batch) break;
            const auto& h = scan.header();
            if (h.last_offset() < covered) continue;
            if (h.base_offset >= data_end) break;
            const timestamp_ms lo = idx.empty() ? lohi->first : idx.last().time;
            const offset_t first = std::max(h.base_offset, covered);
            idx.add(first, h.last_offset() + 1, estimate_append_time(h, lo, lohi->second));
            if (from < 0) from = first;
            to = h.last_offset() + 1;
        }
        if (from >= 0) {
            const std::string why = file->problem.empty()
                                        ? fmt::format("its entries end at offset {}", covered)
                                        : file->problem;
            rep.append_times_estimated(seg.append_time_path(), from, to, why);
            sum.notes.push_back(
                fmt::format("estimated the append times of offsets [{}, {}) in {} ({})", from, to,
                            file_name(seg.append_time_path()), why));
        }
    }
    seg.adopt_append_times(std::move(idx), same, file->file_bytes);
    save_or_keep(seg.save_append_times(), seg.append_time_path(), sum);
    return {};
}

timestamp_ms last_append_time_on_file(const fs::path& dir, offset_t base) {
    auto b = read_append_time_bounds(dir / segment_file_name(base, append_time_ext), base);
    return b && *b ? (*b)->last_time : no_timestamp;
}

result<void> recover_last_segment(segment& seg, bool full, int32_t interval, timestamp_ms now,
                                  timestamp_ms prev_time, bool trust_tail, recovery_reporter& rep,
                                  repair_summary& sum) {
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
    save_or_keep(seg.save_indexes(), seg.index_path(), sum);
    // The last segment's append times stand between the previous segment's and now.
    auto bounds = [&]() -> result<std::pair<timestamp_ms, timestamp_ms>> {
        return std::pair(prev_time, std::max(now, prev_time));
    };
    if (auto r = recover_append_times(seg, seg.end_offset(), bounds, trust_tail, rep, sum); !r)
        return r;
    if (full || changed) {
        auto g = seg.data();
        if (!g) return g.err();
        if (auto r = sync_data(**g); !r) return r;
    }
    // Entries that outlived a process crash in the page cache become durable too.
    if (full) save_or_keep(seg.sync_append_times(), seg.append_time_path(), sum);
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
    auto end =
        scan_and_index(seg, **f, file_header_size, seg.base_offset(), seg.size(), interval, true);
    if (!end) return end.err();
    // Compaction may have removed the last batches, so the data may end below the next
    // segment's base, never above it.
    if (!end->clean || end->next_offset > seg.end_offset()) {
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
    save_or_keep(seg.save_indexes(), seg.index_path(), sum);
    return {};
}

namespace {

// A sealed segment must end with a whole batch whose last offset is just below the next
// segment's base. Reads from the last index entry only.
void check_sealed_tail(segment& seg, recovery_reporter& rep, repair_summary& sum) {
    auto f = seg.data();
    if (!f) return;
    auto e = seg.offsets().lookup(seg.end_offset());
    batch_scanner scan(**f, e.position, seg.size(), e.offset, true);
    result<step> s = step::batch;
    while ((s = scan.next(false)) && *s == step::batch) {
    }
    std::string what;
    if (!s)
        what = s.err().message;
    else if (*s != step::end)
        what = fmt::format("{} at byte {}", scan.reason(), scan.position());
    else if (scan.next_offset() > seg.end_offset())  // below it: compaction
        what = fmt::format("data ends at offset {}, the next segment starts at {}",
                           scan.next_offset(), seg.end_offset());
    if (what.empty()) return;
    rep.corruption(seg.data_path(), what);
    ++sum.corruptions;
    sum.notes.push_back(fmt::format("sealed segment {} is damaged ({}), left as is",
                                    file_name(seg.data_path()), what));
}

}  // namespace

namespace {

// The offset in the log-start-offset file; -1 when there is none or it is unusable.
result<offset_t> load_log_start(const fs::path& dir, recovery_reporter& rep, repair_summary& sum) {
    auto v = read_log_start(dir);
    if (v || v.code() == errc::io_error) return v;
    if (v.code() == errc::not_found) return offset_t{-1};
    const fs::path p = dir / log_start_file_name;
    rep.corruption(p, v.err().message);
    ++sum.corruptions;
    sum.notes.push_back(fmt::format("ignored {} ({}); the log starts at its first segment",
                                    log_start_file_name, v.err().message));
    // A file of a newer format stays for the broker that wrote it.
    if (v.code() == errc::corrupt) {
        std::error_code ec;
        fs::rename(p, dir / log_start_damaged_name, ec);
        if (ec) return io_error_from_errno("rename", p, ec.value());
    }
    return offset_t{-1};
}

// Index files without their data file below the first segment, and a temporary
// log-start-offset file: what a crash during a deletion or a write of the file leaves.
result<void> remove_leftover_files(const fs::path& dir, offset_t below, repair_summary& sum) {
    const std::string tmp_name = fmt::format("{}.tmp", log_start_file_name);
    std::vector<fs::path> gone;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto name = it->path().filename().string();
        offset_t base = parse_segment_file_name(name, index_ext);
        if (base < 0) base = parse_segment_file_name(name, time_index_ext);
        if (base < 0) base = parse_segment_file_name(name, append_time_ext);
        if ((base >= 0 && base < below) || name == tmp_name) gone.push_back(it->path());
    }
    if (ec) return io_error_from_errno("list", dir, ec.value());
    for (const auto& p : gone) {
        if (::unlink(p.c_str()) != 0 && errno != ENOENT)
            return io_error_from_errno("unlink", p, errno);
        sum.notes.push_back(fmt::format("removed leftover {}", file_name(p)));
    }
    return {};
}

}  // namespace

result<partition_files> open_partition_files(const fs::path& dir, recovery_reporter& rep,
                                             repair_summary& sum) {
    partition_files out;
    // First, so that the segments listed are those of one side of a compaction swap.
    if (auto r = finish_clean_swap(dir, sum); !r) return r.err();
    auto files = list_segments(dir);
    if (!files) return files.err();
    auto start = load_log_start(dir, rep, sum);
    if (!start) return start.err();
    out.log_start = *start;
    auto& segs = *files;
    // Oldest first, as at run time, so a crash here too leaves the segments contiguous.
    size_t n = 0;
    while (n + 1 < segs.size() && segs[n + 1].base_offset <= out.log_start) ++n;
    for (size_t i = 0; i < n; ++i) {
        if (auto r = remove_segment_files(dir, segs[i].base_offset); !r) return r.err();
        sum.notes.push_back(fmt::format("removed segment {} below the log start offset {}",
                                        segment_file_name(segs[i].base_offset, data_ext),
                                        out.log_start));
    }
    segs.erase(segs.begin(), segs.begin() + static_cast<ptrdiff_t>(n));
    // Only deletions leave such files, and a partition that deleted anything has the file.
    if (out.log_start >= 0) {
        offset_t below =
            segs.empty() ? std::numeric_limits<offset_t>::max() : segs.front().base_offset;
        if (auto r = remove_leftover_files(dir, below, sum); !r) return r.err();
    }
    out.segments = std::move(segs);
    return out;
}

result<repair_summary> recover_partition(const fs::path& dir, int32_t interval, fd_cache& cache,
                                         bool same_boot, recovery_reporter& rep) {
    repair_summary sum;
    auto listed = open_partition_files(dir, rep, sum);
    if (!listed) return listed.err();
    const auto& files = listed->segments;
    for (size_t i = 0; i < files.size(); ++i) {
        const auto& fi = files[i];
        bool last = i + 1 == files.size();
        segment seg(dir, fi.base_offset, fi.size, last, cache);
        if (last) {
            const timestamp_ms prev =
                i == 0 ? no_timestamp : last_append_time_on_file(dir, files[i - 1].base_offset);
            if (auto r =
                    recover_last_segment(seg, true, interval, now_ms(), prev, same_boot, rep, sum);
                !r)
                return r.err();
            continue;
        }
        seg.set_end_offset(files[i + 1].base_offset);
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
