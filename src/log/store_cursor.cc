#include "log/store_cursor.h"

#include <fmt/format.h>

#include <algorithm>

namespace sluice::log {

result<void> store_cursor::open(const partition_store* log, offset_t start, offset_t end) {
    close();
    auto aborted = log->aborted_transactions(start, end);
    if (!aborted) return aborted.err();
    _aborted = std::move(*aborted);
    _log = log;
    _start = _next_read = start;
    _end = end;
    return {};
}

void store_cursor::close() {
    _log = nullptr;
    _records.reset();
    _buf.clear();
    _at = 0;
    _times.clear();
    _batch_index = 0;
    _append_time = -1;
    _aborted.clear();
}

// The next chunk of whole batches from _next_read; false when the range has no more.
result<bool> store_cursor::read_more() {
    _records.reset();
    _buf.clear();
    _at = 0;
    _times.clear();
    _batch_index = 0;
    for (int attempt = 0; _next_read < _end; ++attempt) {
        auto r = _log->read(_next_read, read_chunk_bytes, true, true);
        if (!r) {
            // Retention or DeleteRecords moved the log start past the range's next offset
            // meanwhile: what is left starts there.
            const offset_t start = _log->log_start_offset();
            if (r.code() != errc::out_of_range || start <= _next_read || attempt > 0)
                return r.err();
            _next_read = start;
            continue;
        }
        if (r->data.empty()) return false;
        _buf = std::move(r->data);
        _times = std::move(r->append_times);
        _stats.bytes_read += static_cast<int64_t>(_buf.size());
        return true;
    }
    return false;
}

// The next batch of the range that holds records a reader sees, its header in _header,
// its records not yet opened; false when the range has no more.
result<bool> store_cursor::seek_batch() {
    for (;;) {
        if (_at >= _buf.size()) {
            auto more = read_more();
            if (!more || !*more) return more;
        }
        const bytes_view rest = bytes_view(_buf).subspan(_at);
        auto h = protocol::read_batch_header(rest);
        if (!h || h->size_bytes() > rest.size())
            return error{errc::corrupt,
                         fmt::format("a truncated batch after offset {}", _next_read - 1)};
        _batch_at = _at;
        _at += h->size_bytes();
        _header = *h;
        const size_t index = _batch_index++;
        _append_time = index < _times.size() ? _times[index] : -1;
        _next_read = std::max(_next_read, h->last_offset() + 1);
        if (h->base_offset >= _end) return false;
        if (h->last_offset() < _start || h->is_control() || in_aborted(_aborted, *h)) continue;
        return true;
    }
}

result<void> store_cursor::open_records() {
    const bytes_view batch = bytes_view(_buf).subspan(_batch_at, _header.size_bytes());
    auto records = protocol::batch_records(batch, _header, _plain);
    if (!records)
        return error{errc::corrupt, fmt::format("the batch at offset {}: {}", _header.base_offset,
                                                records.err().message)};
    _records.emplace(*records, _header);
    ++_stats.batches_read;
    return {};
}

result<bool> store_cursor::next_batch() {
    auto more = seek_batch();
    if (!more || !*more) return more;
    if (auto r = open_records(); !r) return r.err();
    return true;
}

result<bool> store_cursor::next() {
    if (!_log) return false;
    for (;;) {
        if (_records) {
            while (_records->next(_rec)) {
                if (_rec.offset < _start) continue;
                if (_rec.offset >= _end) {
                    close();
                    return false;
                }
                ++_stats.records_read;
                return true;
            }
            if (!_records->ok())
                return error{errc::corrupt,
                             fmt::format("malformed records in the batch at offset {}",
                                         _header.base_offset)};
            _records.reset();
        }
        auto more = next_batch();
        if (!more) return more;
        if (!*more) {
            close();
            return false;
        }
    }
}

result<std::optional<int64_t>> store_cursor::next_count() {
    using count = std::optional<int64_t>;
    if (!_log) return count{};
    for (;;) {
        if (_records) {
            // A batch the range cuts: its records in the range, one by one.
            int64_t n = 0;
            bool past_end = false;
            while (_records->next(_rec)) {
                if (_rec.offset < _start) continue;
                if (_rec.offset >= _end) {
                    past_end = true;
                    break;
                }
                ++n;
            }
            _stats.records_read += n;
            if (past_end) {
                close();
                return n > 0 ? count{n} : count{};
            }
            if (!_records->ok())
                return error{errc::corrupt,
                             fmt::format("malformed records in the batch at offset {}",
                                         _header.base_offset)};
            _records.reset();
            if (n > 0) return count{n};
        }
        auto more = seek_batch();
        if (!more) return more.err();
        if (!*more) {
            close();
            return count{};
        }
        if (_header.base_offset >= _start && _header.last_offset() < _end) {
            if (_header.record_count <= 0) continue;  // emptied by compaction
            // Whole in the range: the header's count is the records the batch holds
            // (compaction writes it with those it keeps).
            ++_stats.batches_read;
            _stats.records_read += _header.record_count;
            return count{_header.record_count};
        }
        if (auto r = open_records(); !r) return r.err();
    }
}

}  // namespace sluice::log
