#include "log/record_cursor.h"

#include <fmt/format.h>

#include <utility>

#include "log/file_io.h"
#include "log/partition_log.h"

namespace sluice::log {

void record_cursor::open(const partition_log* log, offset_t start, offset_t end) {
    const size_t buffered = log == _buf_log ? find_buffered(start) : npos;
    // Within the batch being read, at or after where its reader stands: read on from
    // there instead of from the batch's first record.
    const bool read_on = buffered != npos && buffered == _batch_at && _in_batch && _records &&
                         (_rec_pending ? _rec.offset <= start : _rec.offset < start);
    _log = _buf_log = log;
    _start = _next_read = _next_record = start;
    _end = end;
    if (buffered == npos) {
        _buf_used = _batch_at = 0;
        _last_file = nullptr;
    } else {
        _batch_at = buffered;
    }
    if (read_on) {
        _next_read = _header.last_offset() + 1;
    } else {
        _in_batch = false;
        _records.reset();
        _rec_pending = false;
    }
    _times.reset();
    _time_at = 0;
    _aborted.clear();
}

result<void> record_cursor::open_committed(const partition_log* log, offset_t start, offset_t end) {
    auto aborted = log->aborted_transactions(start, end);
    if (!aborted) return aborted.err();
    open(log, start, end);
    _aborted = std::move(*aborted);
    return {};
}

size_t record_cursor::find_buffered(offset_t start) const {
    // Lookups often come in offset order: walk on from the batch last read when it is
    // not past `start`.
    size_t at = 0;
    if (_batch_at < _buf_used) {
        auto h =
            protocol::read_batch_header(bytes_view(_buf).subspan(_batch_at, _buf_used - _batch_at));
        if (h && h->base_offset <= start) at = _batch_at;
    }
    for (bool first = at == 0; at < _buf_used; first = false) {
        auto h = protocol::read_batch_header(bytes_view(_buf).subspan(at, _buf_used - at));
        if (!h || h->size_bytes() > _buf_used - at) return npos;
        // A batch after a gap (compaction) holds the first record at or after `start`,
        // unless it is the buffer's first: what comes before it is not known.
        if (h->last_offset() >= start) return first && h->base_offset > start ? npos : at;
        at += h->size_bytes();
    }
    return npos;
}

void record_cursor::close() {
    _log = nullptr;
    _times.reset();
}

result<bool> record_cursor::read_chunk() {
    if (_next_read >= _end) return false;
    auto s = _log->read_slice_at(_next_read, read_chunk_bytes, true);
    if (!s && s.code() == errc::out_of_range && _next_read < _log->log_start_offset()) {
        // Retention or DeleteRecords removed what was about to be read.
        _next_read = _log->log_start_offset();
        if (_next_read >= _end) return false;
        s = _log->read_slice_at(_next_read, read_chunk_bytes, true);
    }
    if (!s) return s.err();
    if (s->size == 0) return false;
    if (s->data_file.get() != _last_file) {
        ++_stats.segments_read;
        _last_file = s->data_file.get();
    }
    if (_buf.size() < s->size) _buf.resize(s->size);
    if (auto r = read_exact(*s->data_file, _buf.data(), s->size, s->position); !r) return r.err();
    _stats.bytes_read += static_cast<int64_t>(s->size);
    _buf_used = s->size;
    ++_buf_reads;
    _batch_at = 0;
    _in_batch = false;
    return true;
}

result<bool> record_cursor::seek_batch() {
    for (;;) {
        if (_in_batch) {
            _batch_at += _header.size_bytes();
            _in_batch = false;
            _records.reset();
        }
        const bytes_view rest = bytes_view(_buf).subspan(_batch_at, _buf_used - _batch_at);
        auto h = protocol::read_batch_header(rest);
        if (!h || h->size_bytes() > rest.size()) {
            // The chunk ends (or cuts a batch): read on from the next batch.
            auto more = read_chunk();
            if (!more || !*more) return more;
            continue;
        }
        _header = *h;
        _next_read = h->last_offset() + 1;
        if (h->base_offset >= _end) return false;
        _in_batch = true;
        if (h->last_offset() < _start || h->is_control() || in_aborted(_aborted, *h)) continue;
        return true;
    }
}

result<void> record_cursor::open_records() {
    const bytes_view rest = bytes_view(_buf).subspan(_batch_at, _buf_used - _batch_at);
    // A compressed batch looked up again (a join's next row) is decompressed once.
    const bool decompressed = _header.codec() != protocol::compression::none &&
                              _plain_of == std::pair{_buf_reads, _batch_at};
    auto records = decompressed ? result<bytes_view>(bytes_view(_plain))
                                : protocol::batch_records(rest, _header, _plain);
    if (!records)
        return error{errc::corrupt, fmt::format("the batch at offset {}: {}", _header.base_offset,
                                                records.err().message)};
    _plain_of = {_buf_reads, _batch_at};
    _records.emplace(*records, _header);
    ++_stats.batches_read;
    return {};
}

result<bool> record_cursor::next_batch() {
    auto more = seek_batch();
    if (!more || !*more) return more;
    if (auto r = open_records(); !r) return r.err();
    return true;
}

result<std::optional<int64_t>> record_cursor::next_count() {
    using count = std::optional<int64_t>;
    if (!_log) return count{};
    for (;;) {
        if (_records) {
            // The batch being read (by next(), or one the range cuts): its records in the
            // range, one by one.
            int64_t n = 0;
            bool past_end = false;
            while (std::exchange(_rec_pending, false) || _records->next(_rec)) {
                if (_rec.offset < _start) continue;
                if (_rec.offset >= _end) {
                    _rec_pending = true;
                    past_end = true;
                    break;
                }
                ++n;
                _next_record = _rec.offset + 1;
            }
            _stats.records_read += n;
            if (past_end) {
                _next_record = _end;
                _log = nullptr;
                return n > 0 ? count{n} : count{};
            }
            if (!_records->ok())
                return error{errc::corrupt,
                             fmt::format("malformed records in the batch at offset {}",
                                         _header.base_offset)};
            if (n > 0) return count{n};
        }
        auto more = seek_batch();
        if (!more) return more.err();
        if (!*more) {
            _next_record = _end;
            _log = nullptr;
            return count{};
        }
        if (_header.base_offset >= _start && _header.last_offset() < _end) {
            if (_header.record_count <= 0) continue;  // emptied by compaction
            // Whole in the range: the header's count is the records the batch holds
            // (compaction rewrites it with those it keeps).
            ++_stats.batches_read;
            _stats.records_read += _header.record_count;
            _next_record = _header.last_offset() + 1;
            return count{_header.record_count};
        }
        if (auto r = open_records(); !r) return r.err();
    }
}

result<bool> record_cursor::next() {
    if (!_log) return false;
    for (;;) {
        if (_records) {
            // The record read past the last range's end, if any, comes first.
            while (std::exchange(_rec_pending, false) || _records->next(_rec)) {
                if (_rec.offset < _start) continue;
                if (_rec.offset >= _end) {
                    // Kept for a range opened next in this batch (a join's next lookup).
                    _rec_pending = true;
                    _next_record = _end;
                    _log = nullptr;
                    return false;
                }
                ++_stats.records_read;
                _next_record = _rec.offset + 1;
                return true;
            }
            if (!_records->ok())
                return error{errc::corrupt,
                             fmt::format("malformed records in the batch at offset {}",
                                         _header.base_offset)};
        }
        auto more = next_batch();
        if (!more) return more;
        if (!*more) {
            _next_record = _end;
            _log = nullptr;
            return false;
        }
    }
}

result<timestamp_ms> record_cursor::append_time() {
    if (!_times) {
        auto t = _log->append_times(_start, _end);
        if (!t) return t.err();
        _times = std::move(*t);
        _time_at = 0;
    }
    const auto& runs = *_times;
    // Runs are in offset order and records come in offset order: walk forward.
    while (_time_at + 1 < runs.size() && runs[_time_at + 1].first_offset <= _rec.offset) ++_time_at;
    return runs.empty() ? _header.max_timestamp : runs[_time_at].time;
}

}  // namespace sluice::log
