#include "log/time_index.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/endian.h"
#include "log/file_header.h"

namespace sluice::log {

void time_index::append(timestamp_ms t, offset_t o) {
    auto r = static_cast<uint32_t>(o - _base);
    if (!_entries.empty() && _entries.back().offset == r) {
        _entries.back().timestamp = std::max(_entries.back().timestamp, t);
        return;
    }
    _entries.push_back({t, r});
}

ptrdiff_t time_index::last_at_or_below(offset_t limit) const {
    auto it = std::upper_bound(_entries.begin(), _entries.end(), limit - _base,
                               [](int64_t l, const rel& e) { return l < e.offset; });
    return (it - _entries.begin()) - 1;
}

offset_t time_index::start_for(timestamp_ms ts, offset_t limit) const {
    // Last entry with t < ts (timestamps never decrease), capped by the last entry at or
    // below limit (offsets never decrease, so that entry's t is no larger).
    auto it = std::partition_point(_entries.begin(), _entries.end(),
                                   [ts](const rel& e) { return e.timestamp < ts; });
    ptrdiff_t i = std::min((it - _entries.begin()) - 1, last_at_or_below(limit));
    return i < 0 ? _base : _base + _entries[static_cast<size_t>(i)].offset;
}

bool time_index::operator==(const time_index& o) const {
    if (_base != o._base || _entries.size() != o._entries.size()) return false;
    for (size_t i = 0; i < _entries.size(); ++i)
        if (_entries[i].timestamp != o._entries[i].timestamp ||
            _entries[i].offset != o._entries[i].offset)
            return false;
    return true;
}

bytes time_index::encode(timestamp_ms created_ms) const {
    bytes out(file_header_size + _entries.size() * entry_size);
    encode_file_header(out.data(),
                       {file_kind::time_index, current_format_version, _base, created_ms});
    uint8_t* p = out.data() + file_header_size;
    for (const auto& e : _entries) {
        store_be<int64_t>(p, e.timestamp);
        store_be<uint32_t>(p + 8, e.offset);
        p += entry_size;
    }
    return out;
}

result<time_index> time_index::decode(bytes_view file, offset_t base, offset_t end_offset) {
    auto h = decode_file_header(file, file_kind::time_index);
    if (!h) return h.err();
    if (h->base_offset != base)
        return {errc::corrupt, fmt::format("time index header names base offset {}, file {}",
                                           h->base_offset, base)};
    size_t body = file.size() - file_header_size;
    if (body % entry_size != 0)
        return {errc::corrupt,
                fmt::format("time index body is {} bytes, not a multiple of {}", body, entry_size)};
    time_index idx(base);
    idx._entries.reserve(body / entry_size);
    const uint8_t* p = file.data() + file_header_size;
    for (size_t i = 0; i < body / entry_size; ++i, p += entry_size) {
        rel e{load_be<int64_t>(p), load_be<uint32_t>(p + 8)};
        if (base + e.offset > end_offset)
            return {errc::corrupt, fmt::format("time index entry {} names offset {}, past the "
                                               "segment end {}",
                                               i, base + e.offset, end_offset)};
        if (!idx._entries.empty() &&
            (e.offset <= idx._entries.back().offset || e.timestamp < idx._entries.back().timestamp))
            return {errc::corrupt, fmt::format("time index entry {} is out of order", i)};
        idx._entries.push_back(e);
    }
    return idx;
}

}  // namespace sluice::log
