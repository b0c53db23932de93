#include "log/batch_scanner.h"

#include <algorithm>

#include <fmt/format.h>

namespace sluice::log {

namespace {
constexpr size_t read_chunk = 64 * 1024;  // large enough to cover an index interval at once
constexpr int32_t min_batch_length =
    static_cast<int32_t>(protocol::batch_header_size - protocol::batch_log_overhead);
}  // namespace

batch_scanner::batch_scanner(const file& f, int64_t position, int64_t end, offset_t expected_offset,
                             bool gaps)
    : _f(f), _next(position), _end(end), _expected(expected_offset), _gaps(gaps), _cur(position) {}

result<bool> batch_scanner::fill(int64_t pos, size_t n) {
    if (pos >= _buf_start &&
        pos + static_cast<int64_t>(n) <= _buf_start + static_cast<int64_t>(_buf_len))
        return true;
    size_t want = std::max(n, read_chunk);
    want = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(want), _end - pos));
    if (want < n) return false;
    if (_buf.size() < want) _buf.resize(want);
    auto r = read_at(_f, _buf.data(), want, pos);
    if (!r) return r.err();
    _buf_start = pos;
    _buf_len = *r;
    return *r >= n;
}

result<batch_scanner::step> batch_scanner::next(bool verify) {
    _cur = _next;
    int64_t left = _end - _cur;
    if (left <= 0) return step::end;
    if (left < static_cast<int64_t>(protocol::batch_header_size)) {
        _reason = fmt::format("{} trailing bytes, shorter than a batch header", left);
        return step::torn;
    }
    auto ok = fill(_cur, protocol::batch_header_size);
    if (!ok) return ok.err();
    if (!*ok) {
        _reason = "file shorter than expected";
        return step::torn;
    }
    _h = *protocol::read_batch_header(bytes_view(at(_cur), protocol::batch_header_size));
    if (_h.batch_length < min_batch_length || _h.magic != 2 || _h.last_offset_delta < 0) {
        _reason = fmt::format("bad batch framing (length {}, magic {}, last offset delta {})",
                              _h.batch_length, _h.magic, _h.last_offset_delta);
        return step::invalid;
    }
    if (_expected >= 0 && (_gaps ? _h.base_offset < _expected : _h.base_offset != _expected)) {
        _reason =
            fmt::format("batch base offset {} where {} was expected", _h.base_offset, _expected);
        return step::invalid;
    }
    if (static_cast<int64_t>(_h.size_bytes()) > left) {
        _reason = fmt::format("batch at offset {} needs {} bytes, {} remain", _h.base_offset,
                              _h.size_bytes(), left);
        return step::torn;
    }
    if (verify) {
        auto b = batch();
        if (!b) return b.err();
        if (!protocol::batch_crc_ok(*b)) {
            _reason = fmt::format("CRC mismatch in batch at offset {}", _h.base_offset);
            return step::invalid;
        }
    }
    _next = _cur + static_cast<int64_t>(_h.size_bytes());
    _expected = _h.last_offset() + 1;
    return step::batch;
}

result<bytes_view> batch_scanner::batch() {
    auto ok = fill(_cur, _h.size_bytes());
    if (!ok) return ok.err();
    if (!*ok) return {errc::corrupt, "batch extends past the end of the segment"};
    return bytes_view(at(_cur), _h.size_bytes());
}

}  // namespace sluice::log
