// Idempotent producers in the partition log: the check at append, and the table's
// rebuild from the snapshot and the batch headers after it (producer_state.h).

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/logging.h"
#include "log/batch_scanner.h"
#include "log/file_header.h"
#include "log/partition_log.h"

namespace sluice::log {

namespace {

constexpr const char* snapshot_name = "producer-state.snapshot";

// The snapshot as of `offset`, or nullopt when there is none or it cannot serve (it
// is then rebuilt from the log, which only costs time).
std::optional<std::pair<producer_state, offset_t>> read_snapshot(const fs::path& dir,
                                                                 const std::string& who) {
    auto data = read_whole_file(dir / snapshot_name);
    if (!data) {
        if (data.code() != errc::not_found)
            log_warn("storage", "{}: {}; rebuilding producer state from the log", who,
                     data.err().message);
        return std::nullopt;
    }
    auto st = producer_state::decode(*data);
    if (!st) {
        log_warn("storage", "{}: {}; rebuilding producer state from the log", who,
                 st.err().message);
        return std::nullopt;
    }
    return std::move(*st);
}

}  // namespace

result<void> partition_log::load_producers() const {
    const std::string who = fmt::format("{}-{}", _topic->name, _partition);
    const offset_t end = _leo.load();
    offset_t from = 0;
    if (auto snap = read_snapshot(_st->dir, who); snap && snap->second <= end) {
        _st->producers = std::move(snap->first);
        from = snap->second;
        _st->snapshot_at = from;
    } else if (snap) {
        // The log lost its tail (a disk that dropped acknowledged data): batches past
        // the end must not be remembered.
        log_warn("storage", "{}: producer snapshot at {} is past the log end {}; trimming it", who,
                 snap->second, end);
        snap->first.truncate(end);
        _st->producers = std::move(snap->first);
        from = end;
    }
    size_t scanned = 0;
    const timestamp_ms now = now_ms();
    for (auto& seg : _st->segments) {
        if (seg->end_offset() <= from) continue;
        int64_t pos = static_cast<int64_t>(file_header_size);
        if (seg->base_offset() < from) {
            if (auto r = ensure_indexes(*seg); !r) return r;
            auto p = seg->find_position(from);
            if (!p) return p.err();
            pos = *p;
        }
        auto f = seg->data();
        if (!f) return f.err();
        batch_scanner scan(**f, pos, seg->size());
        while (true) {
            auto s = scan.next(false);
            if (!s) return s.err();
            if (*s == batch_scanner::step::end) break;
            if (*s != batch_scanner::step::batch)
                return {errc::corrupt, fmt::format("{} at byte {}: {}", seg->data_path().string(),
                                                   scan.position(), scan.reason())};
            const auto& h = scan.header();
            if (h.base_offset < from || h.producer_id < 0) continue;
            bytes_view whole;
            if (h.is_control()) {
                auto b = scan.batch();
                if (!b) return b.err();
                whole = *b;
            }
            if (auto r = note_logged_batch(h, whole, now); !r)
                return {errc::corrupt,
                        fmt::format("{}: {}", seg->data_path().string(), r.err().message)};
            ++scanned;
        }
    }
    _st->producers.evict_below(_lso.load());
    _st->producers.expire(now, _ctx->producer_id_expiration_ms);
    if (scanned > 0)
        log_info("storage", "{}: producer state rebuilt from {} batches after offset {}", who,
                 scanned, from);
    return {};
}

sequence_check partition_log::check_producers(const std::vector<protocol::validated_batch>& batches,
                                              timestamp_ms now) const {
    const auto& h = batches.front().header;
    if (h.producer_id < 0) return {};
    const int64_t ttl = _ctx->producer_id_expiration_ms;
    // Producers that went silent are swept now and then (a tenth of the expiry apart),
    // so that a partition fed by short-lived producers does not grow without bound.
    if (now - _st->producers_swept >= ttl / 10) {
        _st->producers.expire(now, ttl);
        _st->producers_swept = now;
    }
    _st->producers.expire_one(h.producer_id, now, ttl);
    return _st->producers.check(h);
}

void partition_log::note_producers(const std::vector<protocol::validated_batch>& batches,
                                   offset_t base, timestamp_ms now) {
    for (const auto& b : batches) {
        if (b.header.producer_id >= 0) {
            auto h = b.header;
            h.max_timestamp = b.max_record_timestamp;  // as stored
            _st->producers.apply(h, base, now);
        }
        base += b.header.last_offset_delta + 1;
    }
}

result<void> partition_log::note_producers(bytes_view data) const {
    for (size_t pos = 0; pos + protocol::batch_header_size <= data.size();) {
        auto h = protocol::read_batch_header(data.subspan(pos));
        if (!h) return {};
        if (h->producer_id >= 0)
            if (auto r = note_logged_batch(*h, data.subspan(pos, h->size_bytes()), now_ms()); !r)
                return r;
        pos += h->size_bytes();
    }
    return {};
}

result<void> partition_log::note_logged_batch(const protocol::batch_header& h, bytes_view batch,
                                              timestamp_ms now) const {
    if (!h.is_control()) {
        _st->producers.apply(h, h.base_offset, now);
        return {};
    }
    auto c = protocol::decode_control_batch(batch);
    if (!c) return c.err();
    // Other control records (KRaft's) end no transaction.
    if (c->is_marker())
        _st->producers.apply_marker(h.producer_id, h.producer_epoch, c->is_commit(),
                                    c->coordinator_epoch, h.base_offset, now);
    return {};
}

result<void> partition_log::forget_aborted(
    const std::vector<std::pair<int64_t, offset_t>>& markers) {
    std::lock_guard lk(_mu);
    for (const auto& [pid, offset] : markers) _st->producers.forget_aborted(pid, offset);
    if (::unlink((_st->dir / snapshot_name).c_str()) != 0 && errno != ENOENT)
        return io_error_from_errno("unlink", _st->dir / snapshot_name, errno);
    _st->snapshot_at = -1;
    return {};
}

result<void> partition_log::save_producer_snapshot() const {
    if (_st->snapshot_at == _leo.load()) return {};  // the file is current
    // Written even when no producer is known, so that the next load need not scan the
    // log to find that out. No fsync: the snapshot only saves the scan. A file that a
    // crash left torn fails its CRC and the log is scanned; an older one that is whole
    // covers fewer batches, and the scan starts there. Everything it holds is in the
    // log too, except producers whose batches compaction or retention removed, which
    // the log keeps (each one's last batch) or forgets anyway (below the log start).
    const fs::path dst = _st->dir / snapshot_name;
    std::error_code ec;
    const bytes data = _st->producers.encode(_leo.load(), now_ms());
    const fs::path tmp = _st->dir / fmt::format("{}.tmp", snapshot_name);
    {
        auto f = open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC);
        if (!f) return f.err();
        if (auto r = write_exact(**f, data.data(), data.size(), 0); !r) return r;
    }
    fs::rename(tmp, dst, ec);
    if (ec) return io_error_from_errno("rename", tmp, ec.value());
    _st->snapshot_at = _leo.load();
    return {};
}

result<std::vector<producer_entry>> partition_log::producers(timestamp_ms now) const {
    std::lock_guard lk(_mu);
    if (auto r = ensure_loaded(); !r) return r.err();
    _st->producers.expire(now, _ctx->producer_id_expiration_ms);
    std::vector<producer_entry> out;
    for (const auto& [id, e] : _st->producers.entries()) out.push_back(e);
    return out;
}

}  // namespace sluice::log
