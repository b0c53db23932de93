#include "log/record_cursor.h"

#include <fmt/format.h>

#include "log/file_io.h"
#include "log/partition_log.h"

namespace sluice::log {

void record_cursor::open(const partition_log* log, offset_t start, offset_t end) {
    _log = log;
    _start = _next_read = _next_record = start;
    _end = end;
    _buf_used = _batch_at = 0;
    _in_batch = false;
    _records.reset();
    _last_file = nullptr;
    _times.reset();
    _time_at = 0;
}

void record_cursor::close() {
    _log = nullptr;
    _in_batch = false;
    _records.reset();
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
    _batch_at = 0;
    _in_batch = false;
    return true;
}

result<bool> record_cursor::next_batch() {
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
        if (h->last_offset() < _start || h->is_control()) continue;
        auto records = protocol::batch_records(rest, _header, _plain);
        if (!records)
            return error{errc::corrupt, fmt::format("the batch at offset {}: {}", h->base_offset,
                                                    records.err().message)};
        _records.emplace(*records, _header);
        ++_stats.batches_read;
        return true;
    }
}

result<bool> record_cursor::next() {
    if (!_log) return false;
    for (;;) {
        if (_records) {
            while (_records->next(_rec)) {
                if (_rec.offset < _start) continue;
                if (_rec.offset >= _end) {
                    _next_record = _end;
                    _records.reset();
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
