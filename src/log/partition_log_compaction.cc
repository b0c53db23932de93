// Log compaction of one partition: keeps, in its sealed segments, only the latest record
// of each key. Rewritten segments are written under cleaning/, made durable, committed
// by the cleaner-swap marker and then renamed over the originals; load() finishes or
// rolls back an interrupted swap (finish_clean_swap). See docs/formats/segment.md,
// "Compaction swap", and docs/design/compaction-status.md.

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include "common/logging.h"
#include "log/cleaner_files.h"
#include "log/compaction_filter.h"
#include "log/file_header.h"
#include "log/partition_log.h"

namespace sluice::log {

struct partition_log::clean_plan {
    struct seg {
        offset_t base = 0;
        offset_t end = 0;
        int64_t size = 0;
        fs::path path;  // opened one at a time, so a pass holds one descriptor
    };
    std::vector<seg> segs;  // cleanable, oldest first
    offset_t dirty_start = 0;
    offset_t log_start = 0;
    double ratio = 0;
    bool forced = false;
    // The base offsets of each idempotent producer's last batch: kept whole, so that a
    // rebuild of the producer state from the log finds every producer's last sequence.
    std::set<offset_t> producer_last;
    // Transactions (KIP-98): the aborted ones, whose records every pass removes, as
    // Kafka's cleaner does; their markers stay until delete.retention.ms after the
    // transaction has no record left (record_selector).
    std::vector<aborted_txn> aborted;
};

namespace {

// The batches of a sealed segment's data file, after its header, read into `buf` (one
// read: segments are bounded by segment.bytes, and the cleaner holds one at a time). The
// buffer serves every segment of a pass: allocating and zero-filling a fresh one per
// segment cost more in page faults than the reads themselves. Opened by path rather
// than through the descriptor cache: retention may delete the segment object while the
// pass runs without trim_mu, and then the file is gone (errc::not_found).
//
// Reads in chunks, each charged to the throttle as it is read, so the budget paces the
// reads themselves rather than the time after a whole segment. Errors: shutting_down
// when the pass is cancelled.
result<bytes_view> read_batches(const fs::path& path, int64_t size, io_throttle& io, bytes& buf) {
    auto f = open_file(path, O_RDONLY);
    if (!f) return f.err();
    uint8_t head[file_header_size];
    if (auto r = read_exact(**f, head, sizeof head, 0); !r) return r.err();
    if (auto h = decode_file_header(bytes_view(head, sizeof head), file_kind::data); !h)
        return error{h.code(), fmt::format("{}: {}", path.string(), h.err().message)};
    const auto n = static_cast<size_t>(size - static_cast<int64_t>(file_header_size));
    if (buf.size() < n) buf.resize(n);
    // 1 MiB: large enough for sequential reads, small enough to pace a 32 MiB/s budget
    // in steps of about 30 ms.
    constexpr size_t chunk = 1 << 20;
    io.consume(static_cast<int64_t>(file_header_size));
    for (size_t done = 0; done < n;) {
        if (io.cancelled()) return error{errc::shutting_down, "compaction cancelled"};
        const size_t len = std::min(chunk, n - done);
        if (auto r = read_exact(**f, buf.data() + done, len,
                                static_cast<int64_t>(file_header_size + done));
            !r)
            return r.err();
        io.consume(static_cast<int64_t>(len));
        done += len;
    }
    return bytes_view(buf.data(), n);
}

// Calls fn(header, batch bytes, position in buf) for each whole batch of buf.
template <typename Fn>
result<void> each_batch(bytes_view buf, Fn&& fn) {
    size_t pos = 0;
    while (pos < buf.size()) {
        auto h = protocol::read_batch_header(buf.subspan(pos));
        if (!h || h->batch_length < 0 || pos + h->size_bytes() > buf.size())
            return error{errc::corrupt, fmt::format("bad batch at byte {}", pos)};
        if (auto r = fn(*h, buf.subspan(pos, h->size_bytes()), pos); !r) return r;
        pos += h->size_bytes();
    }
    return {};
}

result<void> sync_file(const fs::path& p) {
    auto f = open_file(p, O_RDONLY);
    if (!f) return f.err();
    return sync_data(**f);
}

}  // namespace

bool partition_log::compaction_candidate() const {
    auto files = list_segments(dir_path());
    if (!files) return files.code() != errc::not_found;
    // One segment with data: loaded, so that its active segment may roll (max lag).
    return files->size() > 1 ||
           (files->size() == 1 && files->front().size > static_cast<int64_t>(file_header_size));
}

result<bool> partition_log::plan_clean(const log_config& cfg, timestamp_ms now, clean_plan& plan) {
    std::lock_guard lk(_mu);
    if (auto r = ensure_loaded(); !r) return r.err();
    if (_st->clean_offset == -2) {
        auto c = read_clean_checkpoint(_st->dir);
        if (!c) return c.err();
        _st->clean_offset = *c;
    }
    const offset_t hw = _leo.load();
    // A partition without appends rolls here, or its last records would wait for the
    // next append (Kafka rolls only on append).
    if (segment* a = active(); a && a->end_offset() <= hw && compaction_roll_due(*a, cfg, now)) {
        if (auto r = roll_segment(now); !r) return r.err();
    }
    plan.log_start = _lso.load();
    for (const auto& [id, e] : _st->producers.entries())
        if (const producer_batch* b = e.last()) plan.producer_last.insert(b->first_offset);
    plan.aborted = _st->producers.aborted();
    const auto& segs = _st->segments;
    // The active segment is never cleaned (appends go there), nor what a reader may not
    // see yet, nor what an open transaction may still abort (at or past the last stable
    // offset, as Kafka), nor segments holding records newer than min.compaction.lag.ms.
    const offset_t stable = _stable.load();
    for (size_t i = 0; i + 1 < segs.size(); ++i) {
        segment& seg = *segs[i];
        if (seg.end_offset() > hw || seg.end_offset() > stable) break;
        if (cfg.min_compaction_lag_ms > 0) {
            auto ts = largest_timestamp(seg);
            if (!ts) return ts.err();
            if (now - *ts < cfg.min_compaction_lag_ms) break;
        }
        if (seg.end_offset() <= plan.log_start) continue;  // retention's to delete
        plan.segs.push_back({seg.base_offset(), seg.end_offset(), seg.size(), seg.data_path()});
    }
    if (plan.segs.empty()) return false;
    plan.dirty_start = std::max(_st->clean_offset, plan.log_start);
    int64_t total = 0;
    int64_t dirty = 0;
    const clean_plan::seg* first_dirty = nullptr;
    for (const auto& s : plan.segs) {
        total += s.size;
        if (s.end <= plan.dirty_start) continue;
        dirty += s.size;
        if (!first_dirty) first_dirty = &s;
    }
    if (!first_dirty || total == 0) return false;
    plan.ratio = static_cast<double>(dirty) / static_cast<double>(total);
    // max.compaction.lag.ms is judged by the oldest dirty record: the first batch of the
    // first dirty segment (its timestamp, or its append time on LogAppendTime topics).
    if (cfg.max_compaction_lag_ms < std::numeric_limits<int64_t>::max() &&
        first_dirty->size > static_cast<int64_t>(file_header_size)) {
        uint8_t head[protocol::batch_header_size];
        auto f = open_file(first_dirty->path, O_RDONLY);
        if (!f) return f.err();
        if (auto r = read_exact(**f, head, sizeof head, file_header_size); !r) return r.err();
        auto h = *protocol::read_batch_header(bytes_view(head, sizeof head));
        const timestamp_ms ts = h.ts_type() == protocol::timestamp_type::log_append_time
                                    ? h.max_timestamp
                                    : h.base_timestamp;
        plan.forced = now - ts > cfg.max_compaction_lag_ms;
    }
    return plan.ratio >= cfg.min_cleanable_dirty_ratio || plan.forced;
}

result<partition_log::clean_result> partition_log::clean(const log_config& cfg, timestamp_ms now,
                                                         io_throttle& io) {
    state* st = loaded_state();
    if (!st) return failure().value_or(error{errc::io_error, "partition failed to load"});
    // One pass at a time per partition (cleaning/ and clean_offset are the pass's).
    std::lock_guard one(st->clean_mu);
    const auto started = std::chrono::steady_clock::now();
    clean_plan plan;
    result<bool> go = false;
    {
        // Retention and DeleteRecords hold trim_mu on the event loop's behalf, so the
        // long part of the pass runs without it; the commit below checks what they did.
        std::lock_guard trim(st->trim_mu);
        go = plan_clean(cfg, now, plan);
    }
    if (!go) return go.err();
    clean_result out;
    out.dirty_ratio = plan.ratio;
    out.clean_offset = st->clean_offset;
    if (!*go) return out;
    out.cleaned = true;

    bytes segment_buf;  // read_batches' buffer, for every segment of the pass
    // 1. The latest offset of each key in the dirty part. Records below it go.
    record_selector select({plan.log_start, plan.dirty_start, plan.producer_last, plan.aborted,
                            cfg.delete_retention_ms, now});
    for (const auto& s : plan.segs) {
        if (s.end <= plan.dirty_start) continue;
        auto buf = read_batches(s.path, s.size, io, segment_buf);
        if (!buf && buf.code() == errc::not_found) continue;  // trimmed meanwhile
        if (!buf) return buf.err();
        out.bytes_read += s.size;
        auto r = each_batch(*buf, [&](const protocol::batch_header& h, bytes_view b, size_t) {
            select.note_latest(h, b);
            return result<void>();
        });
        if (!r) return r.err();
    }

    // 2. Rewrite, under cleaning/, every segment that loses a record, and merge runs of
    // consecutive segments that fit in one (as Kafka groups them): a topic rolled every
    // max.compaction.lag.ms would otherwise keep a small segment per period.
    const fs::path cleaning = st->dir / cleaning_dir_name;
    std::error_code ec;
    fs::remove_all(cleaning, ec);
    if (!ec) fs::create_directory(cleaning, ec);
    if (ec) return io_error_from_errno("mkdir", cleaning, ec.value());
    std::vector<offset_t> bases;
    std::vector<int64_t> sizes;
    std::vector<std::vector<offset_t>> merged;
    for (size_t from = 0; from < plan.segs.size();) {
        const size_t to = group_end(plan, from, cfg.segment_bytes);
        auto size = rewrite_group(plan, from, to, select, cfg, now, io, segment_buf, out);
        if (!size) return size.err();
        if (*size >= 0) {
            bases.push_back(plan.segs[from].base);
            sizes.push_back(*size);
            merged.emplace_back();
            for (size_t i = from + 1; i < to; ++i) merged.back().push_back(plan.segs[i].base);
        }
        from = to;
    }

    // 3. Commit and swap (docs/formats/segment.md, "Compaction swap"). A cancel before
    // the commit leaves the old segments; cleaning/ goes at the next pass or load.
    if (io.cancelled()) return error{errc::shutting_down, "compaction cancelled"};
    std::lock_guard trim(st->trim_mu);
    if (auto r = drop_trimmed(bases, sizes, merged); !r) return r.err();
    // Before the swap: an ABORT marker's index entry may go before the marker (no record
    // of its transaction is left), never after it.
    if (!select.dropped_aborts().empty()) {
        if (auto r = forget_aborted(select.dropped_aborts()); !r) return r.err();
    }
    if (!bases.empty()) {
        // cleaning/ and its files are durable before the marker can be: its own fsync,
        // then the partition directory's (which holds the cleaning/ entry).
        if (auto r = sync_dir(cleaning); !r) return r.err();
        if (auto r = sync_dir(st->dir); !r) return r.err();
        if (auto r = write_clean_swap_marker(st->dir); !r) return r.err();
        if (auto r = swap_cleaned(bases, sizes, merged); !r) return r.err();
    }
    fs::remove(cleaning, ec);  // empty now; a leftover is removed at the next load

    // 4. Everything below the end of the cleanable part is clean now.
    const offset_t clean_to = plan.segs.back().end;
    if (auto r = write_clean_checkpoint(st->dir, clean_to); !r) return r.err();
    st->clean_offset = clean_to;
    out.clean_offset = clean_to;
    out.segments_rewritten = bases.size();
    for (const auto& m : merged) out.segments_merged += m.size();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count();
    log_info("cleaner",
             "{}-{}: dirty ratio {:.2f}{}; read {} bytes, wrote {} bytes, removed {} records, "
             "rewrote {} segments (merging {} more into them) in {} ms (throttled {} ms); clean up "
             "to offset {}",
             _topic->name, _partition, plan.ratio, plan.forced ? " (max.compaction.lag.ms)" : "",
             out.bytes_read, out.bytes_written, out.records_removed, out.segments_rewritten,
             out.segments_merged, ms,
             std::chrono::duration_cast<std::chrono::milliseconds>(io.slept()).count(), clean_to);
    return out;
}

size_t partition_log::group_end(const clean_plan& plan, size_t from, int64_t segment_bytes) {
    // Index entries hold u32 positions and relative offsets (docs/formats/offset-index.md).
    constexpr int64_t max_u32 = std::numeric_limits<uint32_t>::max();
    const int64_t limit = std::min(segment_bytes, max_u32);
    int64_t total = plan.segs[from].size;
    size_t to = from + 1;
    for (; to < plan.segs.size(); ++to) {
        const auto& s = plan.segs[to];
        const int64_t grown = total + s.size - static_cast<int64_t>(file_header_size);
        if (grown > limit || s.end - plan.segs[from].base > max_u32) break;
        total = grown;
    }
    return to;
}

result<int64_t> partition_log::rewrite_group(const clean_plan& plan, size_t from, size_t to,
                                             record_selector& select, const log_config& cfg,
                                             timestamp_ms now, io_throttle& io, bytes& buf_space,
                                             clean_result& out) {
    const fs::path cleaning = _st->dir / cleaning_dir_name;
    const offset_t base = plan.segs[from].base;
    std::unique_ptr<segment> ns;
    append_time_index kept_index(base);
    int64_t removed = 0;
    // Abandons the group (a member trimmed meanwhile): its partial rewrite must not swap.
    auto abandon = [&]() -> result<int64_t> {
        ns.reset();
        if (auto r = remove_segment_files(cleaning, base); !r) return r.err();
        return int64_t{-1};
    };
    for (size_t i = from; i < to; ++i) {
        const auto& s = plan.segs[i];
        auto buf = read_batches(s.path, s.size, io, buf_space);
        if (!buf && buf.code() == errc::not_found) return abandon();  // trimmed meanwhile
        if (!buf) return buf.err();
        out.bytes_read += s.size;
        auto kept = filter_segment(plan, i, *buf, select);
        if (!kept) return kept.err();
        removed += kept->removed;
        // A segment alone is rewritten only when it loses a record (or a marker gets
        // its delete horizon).
        if (!ns && (to - from > 1 || kept->removed > 0 || kept->changed)) {
            auto created = segment::create(cleaning, base, now, _ctx->files);
            if (!created) return created.err();
            ns = std::move(*created);
        }
        if (!ns) return int64_t{-1};
        const int64_t at = ns->size();
        if (!kept->data.empty()) {
            if (auto a = ns->append(kept->data, kept->batches.back().first.last_offset()); !a)
                return a.err();
        }
        for (size_t k = 0; k < kept->batches.size(); ++k) {
            const auto& [h, pos] = kept->batches[k];
            ns->note_batch(h.base_offset, at + static_cast<int64_t>(pos), h.max_timestamp,
                           cfg.index_interval_bytes);
            kept_index.add(h.base_offset, h.last_offset() + 1, kept->times[k]);
        }
    }
    ns->adopt_append_times(std::move(kept_index), 0);  // written whole by seal()
    ns->set_end_offset(plan.segs[to - 1].end);
    ns->set_indexes_dirty(true);  // index files are written even when empty
    if (auto sr = ns->seal(); !sr) return sr.err();
    for (const char* ext : {index_ext, time_index_ext}) {
        if (auto sr = sync_file(cleaning / segment_file_name(base, ext)); !sr) return sr.err();
    }
    // The segments merged into this one go at the swap (cleaner_files.h, merged_ext).
    for (size_t i = from + 1; i < to; ++i) {
        auto m = open_file(cleaning / segment_file_name(plan.segs[i].base, merged_ext),
                           O_WRONLY | O_CREAT | O_TRUNC);
        if (!m) return m.err();
    }
    io.consume(ns->size());
    out.bytes_written += ns->size();
    for (size_t i = from; i < to; ++i) out.bytes_reclaimed += plan.segs[i].size;
    out.bytes_reclaimed -= ns->size();
    out.records_removed += removed;
    return ns->size();
}

result<partition_log::kept_batches> partition_log::filter_segment(const clean_plan& plan,
                                                                  size_t index, bytes_view buf,
                                                                  record_selector& select) {
    const auto& s = plan.segs[index];
    // Offsets stay, so the kept batches keep their append times: the original's
    // entries, or estimates where it has none (a file from an older version).
    auto times =
        read_append_time_file(_st->dir / segment_file_name(s.base, append_time_ext), s.base);
    if (!times) return times.err();
    times->index.trim(s.end);
    timestamp_ms last_time = no_timestamp;
    auto time_of = [&](const protocol::batch_header& h) {
        const auto& idx = times->index;
        const ptrdiff_t i = idx.last_starting_at_or_below(h.base_offset);
        const bool covered = i >= 0 && idx.at(static_cast<size_t>(i)).end > h.base_offset;
        const timestamp_ms t = covered ? idx.at(static_cast<size_t>(i)).time
                                       : estimate_append_time(h, last_time, no_timestamp);
        last_time = std::max(last_time, t);
        return t;
    };
    kept_batches out;
    auto r = each_batch(buf, [&](const protocol::batch_header& h, bytes_view b, size_t) {
        const timestamp_ms appended = time_of(h);
        const size_t at = out.data.size();
        auto v = select.filter(h, b, out.data);
        if (!v) return result<void>(v.err());
        out.removed += v->removed;
        out.changed = out.changed || v->changed;
        if (out.data.size() > at) {
            out.batches.emplace_back(*protocol::read_batch_header(bytes_view(out.data).subspan(at)),
                                     at);
            out.times.push_back(appended);
        }
        return result<void>();
    });
    if (!r) return r.err();
    return out;
}

result<void> partition_log::drop_trimmed(std::vector<offset_t>& bases, std::vector<int64_t>& sizes,
                                         std::vector<std::vector<offset_t>>& merged) {
    // Retention and DeleteRecords remove segments from the front, so a group whose first
    // segment is still there is whole.
    std::vector<offset_t> gone;
    {
        std::lock_guard lk(_mu);
        for (size_t i = 0; i < bases.size();) {
            const bool present =
                std::any_of(_st->segments.begin(), _st->segments.end(),
                            [&](const auto& s) { return s->base_offset() == bases[i]; });
            if (present) {
                ++i;
                continue;
            }
            gone.push_back(bases[i]);
            for (offset_t m : merged[i])
                fs::remove(_st->dir / cleaning_dir_name / segment_file_name(m, merged_ext));
            bases.erase(bases.begin() + static_cast<ptrdiff_t>(i));
            sizes.erase(sizes.begin() + static_cast<ptrdiff_t>(i));
            merged.erase(merged.begin() + static_cast<ptrdiff_t>(i));
        }
    }
    // Retention or DeleteRecords removed these while the pass ran: their rewrites must
    // not bring them back.
    const fs::path cleaning = _st->dir / cleaning_dir_name;
    for (offset_t base : gone) {
        for (const char* ext : segment_exts) {
            std::error_code ec;
            fs::remove(cleaning / segment_file_name(base, ext), ec);
            if (ec) return io_error_from_errno("unlink", cleaning, ec.value());
        }
    }
    return {};
}

result<void> partition_log::swap_cleaned(const std::vector<offset_t>& bases,
                                         const std::vector<int64_t>& sizes,
                                         const std::vector<std::vector<offset_t>>& merged) {
    const fs::path cleaning = _st->dir / cleaning_dir_name;
    std::vector<std::unique_ptr<segment>> old;
    {
        // Renames and the new segment objects under _mu, so no reader pairs an old index
        // with new data. A reader that already holds an old data file keeps reading it.
        std::lock_guard lk(_mu);
        for (size_t i = 0; i < bases.size(); ++i) {
            for (const char* ext : segment_exts) {
                const std::string name = segment_file_name(bases[i], ext);
                std::error_code ec;
                fs::rename(cleaning / name, _st->dir / name, ec);
                if (ec) {
                    // The marker stays: the next load finishes the swap.
                    auto e = io_error_from_errno("rename", cleaning / name, ec.value());
                    fail(e);
                    return e;
                }
            }
            auto& segs = _st->segments;
            auto it = std::find_if(segs.begin(), segs.end(),
                                   [&](const auto& s) { return s->base_offset() == bases[i]; });
            if (it == segs.end()) continue;
            // The merged segments follow it: the new one ends where the last of them did.
            const auto last = it + static_cast<ptrdiff_t>(merged[i].size());
            for (size_t k = 0; k < merged[i].size(); ++k) {
                const auto m = it + static_cast<ptrdiff_t>(k + 1);
                if (m >= segs.end() || (*m)->base_offset() != merged[i][k]) {
                    // Invariant (the segments of a group are consecutive and trimmed
                    // only from the front): broken, the files are still right on disk.
                    error e{errc::corrupt,
                            fmt::format("segment {} to merge is not in place", merged[i][k])};
                    fail(e);
                    return e;
                }
            }
            auto ns = std::make_unique<segment>(_st->dir, bases[i], sizes[i], false, _ctx->files);
            ns->set_end_offset((*last)->end_offset());
            for (auto m = it; m <= last; ++m) old.push_back(std::move(*m));
            *it = std::move(ns);
            segs.erase(it + 1, last + 1);
        }
    }
    // Directory fsync, the merged segments' files go, then the marker
    // (roll_clean_swap_forward finds nothing left to rename).
    if (auto r = roll_clean_swap_forward(_st->dir); !r) {
        std::lock_guard lk(_mu);
        fail(r.err());
        return r;
    }
    return {};
}

}  // namespace sluice::log
