#include "log/partition_log.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/endian.h"
#include "common/logging.h"
#include "log/file_header.h"
#include "log/log_start.h"

namespace sluice::log {

namespace {
// Index entries store positions and relative offsets as u32 (docs/formats/offset-index.md),
// so a segment rolls before either would overflow.
constexpr int64_t max_u32 = std::numeric_limits<uint32_t>::max();
}  // namespace

partition_log::~partition_log() = default;

topic_partition partition_log::id() const {
    return {_topic->name, _partition};
}

fs::path partition_log::dir_path() const {
    return _ctx->logs_dir / fmt::format("{}-{}", _topic->name, _partition);
}

void partition_log::fail(const error& e) const {
    if (!_st->failed) {
        // After a failed fsync the kernel may have dropped the dirty pages and a retry
        // could falsely succeed, so the partition stops serving until a restart runs
        // recovery (as PostgreSQL does after fsync errors).
        log_error("storage", "{}-{}: {}; the partition is out of service until restart",
                  _topic->name, _partition, e.message);
        _st->failed = error{errc::io_error, e.message};
    }
}

void partition_log::fail_load(const error& e, bool retrying) const {
    const auto every = _ctx->load_retry_interval;
    // Logged once; the retries that fail again say so at debug only.
    if (!retrying)
        log_error("storage", "{}-{}: {}; the partition is out of service, loaded again every {} ms",
                  _topic->name, _partition, e.message, every.count());
    else
        log_debug("storage", "{}-{}: load retry failed: {}", _topic->name, _partition, e.message);
    _st->failed = error{errc::io_error, e.message, e.sys_errno};
    _st->load_failed = true;
    _st->retry_at = std::chrono::steady_clock::now() + every;
    std::lock_guard lk(_ctx->retry_mu);
    _ctx->load_retries.insert(id());
}

result<void> partition_log::ensure_loaded() const {
    const bool retry = _st && _st->load_failed;
    if (_st && !retry) return _st->failed ? result<void>(*_st->failed) : result<void>();
    if (retry && std::chrono::steady_clock::now() < _st->retry_at) return *_st->failed;
    // A reader still holding a deleted topic: its files are gone, which is no failure.
    if (_topic->removed.load())
        return {errc::not_found, fmt::format("topic {} was deleted", _topic->name)};
    // load() starts from a fresh state: a failed load left no segment or file in use.
    const bool listed = retry || _recover_first;  // in the manager's retry list
    auto r = load();
    if (!r) {
        fail_load(r.err(), retry);
    } else if (listed) {
        forget_retry();
        log_info("storage", "{}-{}: loaded; the partition is back in service", _topic->name,
                 _partition);
    }
    _loaded.store(true, std::memory_order_release);
    return r;
}

void partition_log::forget_retry() const {
    std::lock_guard lk(_ctx->retry_mu);
    _ctx->load_retries.erase(id());
}

result<void> partition_log::available() const {
    std::lock_guard lk(_mu);
    return ensure_loaded();
}

result<void> partition_log::load() const {
    _st = std::make_unique<state>();
    _st->dir = dir_path();
    std::error_code ec;
    if (!fs::exists(_st->dir, ec)) {
        if (ec) return io_error_from_errno("stat", _st->dir, ec.value());
        return {};  // never written: an empty log at offset 0
    }
    if (_recover_first) {
        // What the start-up recovery could not finish (log_manager::open), first.
        auto rec = recover_partition(_st->dir, _topic->config().index_interval_bytes, _ctx->files,
                                     _ctx->same_boot, *_ctx->reporter);
        if (!rec) return rec.err();
        _recover_first = false;
        if (rec->repaired())
            log_at(rec->worth_warning() ? log_level::warn : log_level::info, "storage",
                   "{}-{}: recovered: {}", _topic->name, _partition, rec->describe());
    }
    repair_summary sum;
    auto files = open_partition_files(_st->dir, *_ctx->reporter, sum);
    if (!files) return files.err();
    _st->durable_start = files->log_start;
    const auto cfg = _topic->config();
    const auto& segs = files->segments;
    for (size_t i = 0; i < segs.size(); ++i) {
        bool last = i + 1 == segs.size();
        auto seg = std::make_unique<segment>(_st->dir, segs[i].base_offset, segs[i].size, last,
                                             _ctx->files);
        if (!last) seg->set_end_offset(segs[i + 1].base_offset);
        _st->segments.push_back(std::move(seg));
    }
    // After a clean shutdown the last segment's indexes are current; the tail after the
    // last index entry is still verified, cheaply, in case the marker lied.
    if (active()) {
        const timestamp_ms prev =
            segs.size() < 2 ? no_timestamp
                            : last_append_time_on_file(_st->dir, segs[segs.size() - 2].base_offset);
        // Its file is whole: written at a clean shutdown, or repaired by the recovery at
        // start-up after an unclean one.
        auto r = recover_last_segment(*active(), false, cfg.index_interval_bytes, now_ms(), prev,
                                      true, *_ctx->reporter, sum);
        if (!r) return r;
        const auto& at = active()->append_times();
        _st->append_clock = at.empty() ? prev : std::max(prev, at.last().time);
    }
    if (sum.repaired())
        log_at(sum.worth_warning() ? log_level::warn : log_level::info, "storage",
               "{}-{}: repaired on load: {}", _topic->name, _partition, sum.describe());
    settle_log_start(files->log_start);
    auto r = load_producers();
    if (r) settle_stable();
    return r;
}

// Sets the offsets of a freshly loaded log. Everything found on disk is durable:
// recovery fsynced what it changed, and a clean shutdown fsynced everything.
void partition_log::settle_log_start(offset_t from_file) const {
    if (!active()) {
        // Segment files gone but the start known: the log goes on from there, so that no
        // offset is ever handed out twice.
        const offset_t start = std::max<offset_t>(from_file, 0);
        _lso = _leo = _durable = _stable = start;
        return;
    }
    _leo = active()->end_offset();
    _lso = std::max(_st->segments.front()->base_offset(), from_file);
    _durable = _leo.load();
    if (_lso.load() <= _leo.load()) return;
    // Data below a durable log start is gone (the disk lost acknowledged records). The
    // start follows the end down, durably, so that later appends do not reappear below
    // a start read back from the file at the next load.
    log_error("storage", "{}-{}: log start offset {} is past the log end {}; using {}",
              _topic->name, _partition, _lso.load(), _leo.load(), _leo.load());
    _lso = _leo.load();
    if (auto r = write_log_start(_st->dir, _lso.load()); r)
        _st->durable_start = _lso.load();
    else
        log_error("storage", "{}-{}: {}", _topic->name, _partition, r.err().message);
}

segment* partition_log::segment_for(offset_t offset) const {
    auto& segs = _st->segments;
    auto it = std::upper_bound(segs.begin(), segs.end(), offset,
                               [](offset_t o, const auto& s) { return o < s->base_offset(); });
    return it == segs.begin() ? nullptr : std::prev(it)->get();
}

result<void> partition_log::ensure_indexes(segment& seg) const {
    if (seg.indexes_loaded()) return {};
    repair_summary sum;
    auto r =
        ensure_sealed_indexes(seg, _topic->config().index_interval_bytes, *_ctx->reporter, sum);
    if (sum.repaired())
        log_at(sum.worth_warning() ? log_level::warn : log_level::info, "storage", "{}-{}: {}",
               _topic->name, _partition, sum.describe());
    return r;
}

result<void> partition_log::prepare_segment(const log_config& cfg, size_t bytes,
                                            offset_t last_offset, timestamp_ms now) {
    if (segment* seg = active()) {
        auto grown = seg->size() + static_cast<int64_t>(bytes);
        bool roll = seg->has_data() && (grown > cfg.segment_bytes || grown > max_u32 ||
                                        now - seg->created_ms() >= cfg.segment_ms ||
                                        compaction_roll_due(*seg, cfg, now) ||
                                        last_offset + 1 - seg->base_offset() > max_u32);
        return roll ? roll_segment(now) : result<void>();
    }
    std::error_code ec;
    if (fs::create_directory(_st->dir, ec)) _st->parent_dirty = true;
    if (ec) return io_error_from_errno("mkdir", _st->dir, ec.value());
    return add_segment(now);
}

bool partition_log::compaction_roll_due(const segment& seg, const log_config& cfg,
                                        timestamp_ms now) {
    if (!cfg.compact || !seg.has_data()) return false;
    // The append-time entries of the active segment are always loaded; without any (a
    // failed write), its creation time stands in.
    const timestamp_ms first = seg.append_times_loaded() && !seg.append_times().empty()
                                   ? seg.append_times().at(0).time
                                   : seg.created_ms();
    return now - first >= cfg.max_compaction_lag_ms;
}

result<void> partition_log::roll_segment(timestamp_ms now) {
    segment* seg = active();
    // The old segment is made durable before the new one exists, so after a crash only
    // the last segment can be torn (recovery scans only that one).
    if (auto r = seg->seal(); !r) {
        // A full disk refused an index write before any fsync: the segment is unchanged
        // and the next append rolls again. Any other failure may have been an fsync's.
        if (!is_no_space(r.err())) fail(r.err());
        return r;
    }
    log_debug("storage", "{}-{}: rolled segment {} at offset {}", _topic->name, _partition,
              seg->base_offset(), _leo.load());
    // Recovery then scans only the segments after the snapshot. A failed write costs a
    // longer scan at the next load, not data.
    if (auto r = save_producer_snapshot(); !r)
        log_warn("storage", "{}-{}: {}", _topic->name, _partition, r.err().message);
    return add_segment(now);
}

result<void> partition_log::add_segment(timestamp_ms now) {
    auto created = segment::create(_st->dir, _leo.load(), now, _ctx->files);
    if (!created) return created.err();
    _st->segments.push_back(std::move(*created));
    ++_st->created_gen;
    return {};
}

void partition_log::submit_append(std::span<uint8_t> payload,
                                  const std::vector<protocol::validated_batch>& batches,
                                  timestamp_ms now, append_done done) {
    done(append(payload, batches, now));
}

result<append_info> partition_log::append(std::span<uint8_t> payload,
                                          const std::vector<protocol::validated_batch>& batches,
                                          timestamp_ms now) {
    if (batches.empty()) return {errc::invalid_argument, "append of no batches"};
    const log_config cfg = _topic->config();
    std::lock_guard lk(_mu);
    if (auto r = ensure_loaded(); !r) return r.err();
    // The sequence check and the offset assignment are one step under _mu.
    if (auto c = check_producers(batches, now); c.verdict != sequence_verdict::append) {
        append_info out{c.verdict, std::move(c.reason)};
        out.base_offset = c.original.first_offset;
        out.last_offset = c.original.last_offset;
        out.log_start_offset = _lso.load();
        return out;
    }
    return append_checked(cfg, payload, batches, now, nullptr);
}

result<append_info> partition_log::write_marker(int64_t producer_id, int16_t producer_epoch,
                                                bool commit, int32_t coordinator_epoch,
                                                timestamp_ms now) {
    bytes batch = protocol::encode_control_batch(
        producer_id, producer_epoch,
        commit ? protocol::control_type::commit : protocol::control_type::abort, coordinator_epoch,
        now);
    auto h = protocol::read_batch_header(batch);
    const std::vector<protocol::validated_batch> batches{{0, *h, now}};
    const protocol::control_record marker{
        static_cast<int16_t>(commit ? protocol::control_type::commit
                                    : protocol::control_type::abort),
        coordinator_epoch};
    const log_config cfg = _topic->config();
    std::lock_guard lk(_mu);
    if (auto r = ensure_loaded(); !r) return r.err();
    if (auto c = _st->producers.check_marker(producer_id, producer_epoch, coordinator_epoch);
        c.verdict != marker_check::kind::append) {
        append_info out{c.verdict == marker_check::kind::invalid_epoch
                            ? sequence_verdict::invalid_epoch
                            : sequence_verdict::coordinator_fenced,
                        std::move(c.reason)};
        out.log_start_offset = _lso.load();
        return out;
    }
    return append_checked(cfg, std::span<uint8_t>(batch), batches, now, &marker);
}

result<append_info> partition_log::append_checked(
    const log_config& cfg, std::span<uint8_t> payload,
    const std::vector<protocol::validated_batch>& batches, timestamp_ms now,
    const protocol::control_record* marker) {
    const bool log_append_time = cfg.timestamp_type == protocol::timestamp_type::log_append_time;
    const offset_t base = _leo.load();
    offset_t next = base;
    size_t covered = 0;
    for (const auto& b : batches) {
        next += b.header.last_offset_delta + 1;
        covered += b.header.size_bytes();
    }
    if (covered != payload.size())
        return {errc::invalid_argument, "payload and validated batches disagree"};
    next = base;
    for (const auto& b : batches) {
        uint8_t* p = payload.data() + b.position;
        protocol::set_base_offset(p, next);
        // As Kafka stores it, whatever the producer put in the header: the append time,
        // or the largest record timestamp.
        if (log_append_time)
            protocol::set_log_append_time(p, b.header.size_bytes(), now);
        else
            protocol::set_create_time(p, b.header.size_bytes(), b.max_record_timestamp);
        next += b.header.last_offset_delta + 1;
    }
    // The index's time never goes below an earlier append's, so a clock stepping back
    // does not break its order (docs/formats/append-time-index.md). LogAppendTime batches
    // carry the clock as read, as in Kafka; the two differ only after such a step.
    const timestamp_ms t = std::max(now, _st->append_clock);
    auto w = write_batches(cfg, bytes_view(payload.data(), payload.size()), batches, base, next,
                           now, t, log_append_time ? now : no_timestamp);
    if (!w) return w.err();
    if (marker) {
        const auto& h = batches.front().header;
        _st->producers.apply_marker(h.producer_id, h.producer_epoch, marker->is_commit(),
                                    marker->coordinator_epoch, base, t);
    } else {
        note_producers(batches, base, t);
    }
    // Small appends go to the journal too, so the flusher need not fsync this partition
    // for them. Without it (too big, no journal, or it failed) the files must be fsynced.
    bool journaled = false;
    if (_ctx->shared_journal && payload.size() <= _ctx->journal_max_append)
        journaled = _ctx->shared_journal
                        ->append(cfg.id, _topic->name, _partition, base, t,
                                 bytes_view(payload.data(), payload.size()))
                        .ok();
    if (!journaled) ++_st->unjournaled;
    // Readable from here on (the high watermark is the log end), before the producer's
    // answer; the flusher makes it durable.
    _leo.store(next);
    settle_stable();
    if (!_queued.exchange(true)) _ctx->dirty->enqueue_dirty(this);
    append_info out;
    out.base_offset = base;
    out.last_offset = next - 1;
    out.log_append_time = log_append_time ? now : -1;
    out.log_start_offset = _lso.load();
    return out;
}

result<void> partition_log::write_batches(const log_config& cfg, bytes_view payload,
                                          const std::vector<protocol::validated_batch>& batches,
                                          offset_t base, offset_t end, timestamp_ms now,
                                          timestamp_ms t, timestamp_ms stamped) {
    if (auto r = prepare_segment(cfg, payload.size(), end - 1, now); !r) return r.err();
    segment* seg = active();
    const int64_t start = seg->size();
    if (auto r = seg->append(payload, end - 1); !r) {
        // A full disk refuses every append until space is freed: said once, not per request.
        const bool full = is_no_space(r.err());
        if (!full || !_st->disk_full)
            log_error("storage", "{}-{}: {}", _topic->name, _partition, r.err().message);
        _st->disk_full = full;
        return r.err();
    }
    if (_st->disk_full) {
        _st->disk_full = false;
        log_info("storage", "{}-{}: appends succeed again", _topic->name, _partition);
    }
    offset_t next = base;
    for (const auto& b : batches) {
        seg->note_batch(next, start + static_cast<int64_t>(b.position),
                        stamped != no_timestamp ? stamped : b.max_record_timestamp,
                        cfg.index_interval_bytes);
        next += b.header.last_offset_delta + 1;
    }
    _st->append_clock = t;
    // The data is in; failing the produce now would only make the client send it again.
    // The entry stays in memory and goes out with the next write (or recovery estimates).
    if (auto r = seg->note_append_time(base, end, t); !r && !seg->append_time_warned()) {
        seg->set_append_time_warned();
        log_warn("storage", "{}-{}: {}", _topic->name, _partition, r.err().message);
    }
    return {};
}

result<size_t> partition_log::append_replayed(bytes_view data, offset_t base,
                                              timestamp_ms append_time) {
    const log_config cfg = _topic->config();
    std::lock_guard lk(_mu);
    if (auto r = ensure_loaded(); !r) return r.err();
    const offset_t end = _leo.load();
    std::vector<protocol::validated_batch> batches;
    size_t from = 0;  // first byte of the first batch at or past the log end
    offset_t next = base;
    for (size_t pos = 0; pos < data.size();) {
        auto h = protocol::read_batch_header(data.subspan(pos));
        if (!h || h->batch_length < 0 || h->size_bytes() > data.size() - pos ||
            h->base_offset != next)
            return {errc::corrupt, fmt::format("replayed batches are not contiguous at {}", next)};
        if (next < end) {
            from = pos + h->size_bytes();
        } else {
            batches.push_back({pos - from, *h, h->max_timestamp});  // stored as appended
        }
        next += h->last_offset_delta + 1;
        pos += h->size_bytes();
    }
    if (batches.empty()) return size_t{0};  // the log holds all of them
    const offset_t first = batches.front().header.base_offset;
    if (first != end)
        return {
            errc::out_of_range,
            fmt::format("the log ends at {}; the records in between were never acknowledged", end)};
    const timestamp_ms t = std::max(append_time, _st->append_clock);
    if (auto r = write_batches(cfg, data.subspan(from), batches, first, next, append_time, t,
                               no_timestamp);
        !r)
        return r.err();
    if (auto r = note_producers(data.subspan(from)); !r) return r.err();
    ++_st->unjournaled;  // it is not in the new journal: the files must be fsynced
    _leo.store(next);
    settle_stable();
    if (!_queued.exchange(true)) _ctx->dirty->enqueue_dirty(this);
    return data.size() - from;
}

result<read_slice> partition_log::read_slice_at(offset_t offset, size_t max_bytes, bool min_one,
                                                bool committed) const {
    read_slice out;
    int64_t end = 0;
    {
        std::lock_guard lk(_mu);
        if (auto r = ensure_loaded(); !r) return r.err();
        out.high_watermark = _leo.load();
        out.last_stable_offset = _stable.load();
        out.log_start_offset = _lso.load();
        out.log_end_offset = _leo.load();
        if (offset < out.log_start_offset || offset > out.log_end_offset)
            return {errc::out_of_range, fmt::format("offset {} is outside [{}, {}] of {}-{}",
                                                    offset, out.log_start_offset,
                                                    out.log_end_offset, _topic->name, _partition)};
        // READ_COMMITTED stops at the last stable offset, a batch's base offset (the
        // first of an ongoing transaction) or the log end.
        const offset_t bound = committed ? out.last_stable_offset : out.high_watermark;
        if (offset >= bound) return out;
        segment* seg = segment_for(offset);
        if (!seg) return {errc::out_of_range, "no segment holds the offset"};
        while (true) {
            if (auto r = ensure_indexes(*seg); !r) return r.err();
            auto p = seg->find_position(offset);
            if (!p) return p.err();
            out.position = *p;
            // Every byte a segment holds is readable: appends write whole batches under
            // the lock, and the high watermark is the log end.
            end = seg->size();
            // READ_COMMITTED: the last stable offset in this segment ends the read here.
            const bool bounded = bound < out.high_watermark && segment_for(bound) == seg;
            if (bounded) {
                auto b = seg->find_position(bound);
                if (!b) return b.err();
                end = *b;
            }
            // Compaction may leave no batch at or after `offset` in a sealed segment: the
            // next segment then holds the first record that follows, so that a consumer
            // never stalls in a gap.
            segment* next = out.position < end || bounded || seg == active()
                                ? nullptr
                                : segment_for(seg->end_offset());
            if (!next || next == seg) break;
            seg = next;
        }
        auto df = seg->data();
        if (!df) return df.err();
        out.data_file = std::move(*df);
    }
    if (out.position >= end) {
        out.data_file.reset();
        return out;
    }
    // Bytes below `end` never change, so the rest needs no lock.
    size_t want = max_bytes;
    if (min_one) {
        uint8_t head[protocol::batch_log_overhead];
        if (auto r = read_exact(*out.data_file, head, sizeof head, out.position); !r)
            return r.err();
        auto len = load_be<int32_t>(head + protocol::batch_length_offset);
        want = std::max(want, protocol::batch_log_overhead + static_cast<size_t>(std::max(len, 0)));
    }
    out.size =
        static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(want), end - out.position));
    return out;
}

result<read_result> partition_log::read(offset_t offset, size_t max_bytes, bool min_one,
                                        bool committed) const {
    auto s = read_slice_at(offset, max_bytes, min_one, committed);
    if (!s) return s.err();
    read_result out;
    out.high_watermark = s->high_watermark;
    out.last_stable_offset = s->last_stable_offset;
    out.log_start_offset = s->log_start_offset;
    out.log_end_offset = s->log_end_offset;
    if (s->size == 0) return out;
    bytes buf(s->size);
    if (auto r = read_exact(*s->data_file, buf.data(), buf.size(), s->position); !r) return r.err();
    // Whole batches only: drop a batch that max_bytes cut.
    size_t used = 0;
    while (used + protocol::batch_header_size <= buf.size()) {
        auto h = *protocol::read_batch_header(bytes_view(buf).subspan(used));
        if (used + h.size_bytes() > buf.size()) break;
        used += h.size_bytes();
    }
    buf.resize(used);
    out.data = std::move(buf);
    return out;
}

offset_t partition_log::high_watermark() const {
    return log_end_offset();
}

offset_t partition_log::last_stable_offset() const {
    if (!loaded()) {
        std::lock_guard lk(_mu);
        (void)ensure_loaded();
    }
    return _stable.load();
}

result<std::vector<aborted_txn>> partition_log::aborted_transactions(offset_t from,
                                                                     offset_t to) const {
    std::lock_guard lk(_mu);
    if (auto r = ensure_loaded(); !r) return r.err();
    return _st->producers.aborted_between(from, to);
}

void partition_log::settle_stable() const {
    _stable.store(
        std::min(_st->producers.first_unstable_offset().value_or(_leo.load()), _leo.load()));
}

offset_t partition_log::durable_offset() const {
    if (!loaded()) {
        std::lock_guard lk(_mu);
        (void)ensure_loaded();
    }
    return _durable.load();
}

offset_t partition_log::log_end_offset() const {
    if (!loaded()) {
        std::lock_guard lk(_mu);
        (void)ensure_loaded();
    }
    return _leo.load();
}

offset_t partition_log::log_start_offset() const {
    if (!loaded()) {
        std::lock_guard lk(_mu);
        (void)ensure_loaded();
    }
    return _lso.load();
}

result<partition_log::summary> partition_log::describe() const {
    std::lock_guard lk(_mu);
    if (auto r = ensure_loaded(); !r) return r.err();
    summary out;
    out.log_start_offset = _lso.load();
    out.high_watermark = _leo.load();
    out.log_end_offset = _leo.load();
    out.segments = _st->segments.size();
    for (const auto& seg : _st->segments) out.bytes += seg->size();
    return out;
}

size_t partition_log::segment_count() const {
    std::lock_guard lk(_mu);
    return _st ? _st->segments.size() : 0;
}

size_t partition_log::memory_bytes() const {
    std::lock_guard lk(_mu);
    size_t n = sizeof(*this);
    if (_st) {
        n +=
            sizeof(state) + _st->dir.native().capacity() + _st->segments.capacity() * sizeof(void*);
        for (const auto& s : _st->segments) n += s->memory_bytes();
        n += _st->producers.memory_bytes();
    }
    return n;
}

result<std::optional<partition_log::sync_plan>> partition_log::plan_sync(bool files) {
    std::lock_guard lk(_mu);
    if (!_st) return std::optional<sync_plan>();
    if (_st->failed) return *_st->failed;
    if (!active()) return std::optional<sync_plan>();  // nothing appended since a load found none
    sync_plan p;
    p.target = _leo.load();
    p.seg_base = active()->base_offset();
    p.seg_pos = active()->size();
    p.gen = _st->created_gen;
    p.unjournaled = _st->unjournaled;
    p.new_files = p.gen != _st->synced_gen;
    p.parent = _st->parent_dirty;
    p.files = files || p.unjournaled != _st->unjournaled_synced;
    // Nothing new to cover, and no file sync asked for or owed for new files.
    if (!files && p.target == _durable.load() && !(p.files && (p.new_files || p.parent)))
        return std::optional<sync_plan>();
    auto df = active()->data();
    if (!df) {
        fail(df.err());
        return df.err();
    }
    p.data = std::move(*df);
    p.dir = _st->dir;
    return std::optional<sync_plan>(std::move(p));
}

result<bool> partition_log::finish_sync(sync_plan& p, bool journal_synced) {
    result<void> r;
    const bool files = p.files || !journal_synced;
    if (files) {
        // A new file is durable only once its directory entry is; the segment fsync comes
        // first so the entry never names a file with lost contents.
        r = sync_data(*p.data);
        if (r && p.new_files) r = sync_dir(p.dir);
        if (r && p.parent) r = sync_dir(_ctx->logs_dir);
    }
    std::lock_guard lk(_mu);
    if (!r) {
        fail(r.err());
        return r.err();
    }
    if (files) {
        _st->synced_gen = std::max(_st->synced_gen, p.gen);
        if (p.parent) _st->parent_dirty = false;
        _st->unjournaled_synced = std::max(_st->unjournaled_synced, p.unjournaled);
    }
    if (p.target <= _durable.load()) return false;
    _durable.store(p.target);
    return true;
}

std::optional<partition_log::byte_range> partition_log::take_writeback(const sync_plan& plan) {
    constexpr int64_t page = 4096;
    std::lock_guard lk(_mu);
    if (!_st) return std::nullopt;
    if (_st->kick_base != plan.seg_base) {
        _st->kick_base = plan.seg_base;
        _st->kick_pos = 0;
    }
    const int64_t end = plan.seg_pos / page * page;  // the last page is still being filled
    if (end <= _st->kick_pos) return std::nullopt;
    byte_range r{_st->kick_pos, end};
    _st->kick_pos = end;
    return r;
}

result<bool> partition_log::sync_files() {
    auto plan = plan_sync(true);
    if (!plan) return plan.err();
    if (!*plan) return false;
    return finish_sync(**plan, false);
}

result<void> partition_log::save_for_shutdown() {
    std::lock_guard lk(_mu);
    if (!_st || _st->failed || !active()) return {};
    active()->add_final_time_entry();
    if (auto r = active()->save_append_times(); !r) return r;
    if (auto r = save_producer_snapshot(); !r) return r;
    return active()->save_indexes();
}

std::optional<error> partition_log::failure() const {
    std::lock_guard lk(_mu);
    return _st ? _st->failed : std::nullopt;
}

void partition_log::unload() {
    std::lock_guard lk(_mu);
    _st.reset();
    _loaded.store(false);
}

}  // namespace sluice::log
