#include "log/offset_index.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/endian.h"
#include "log/file_header.h"

namespace sluice::log {

offset_index::entry offset_index::lookup(offset_t target) const {
    auto rel_target = target - _base;
    auto it = std::upper_bound(_entries.begin(), _entries.end(), rel_target,
                               [](int64_t t, const rel& e) { return t < e.offset; });
    if (it == _entries.begin()) return {_base, static_cast<int64_t>(file_header_size)};
    --it;
    return {_base + it->offset, it->position};
}

void offset_index::append(offset_t offset, int64_t position) {
    _entries.push_back({static_cast<uint32_t>(offset - _base), static_cast<uint32_t>(position)});
}

offset_index::entry offset_index::at(size_t i) const {
    return {_base + _entries[i].offset, _entries[i].position};
}

bool offset_index::operator==(const offset_index& o) const {
    if (_base != o._base || _entries.size() != o._entries.size()) return false;
    for (size_t i = 0; i < _entries.size(); ++i)
        if (_entries[i].offset != o._entries[i].offset ||
            _entries[i].position != o._entries[i].position)
            return false;
    return true;
}

bytes offset_index::encode(timestamp_ms created_ms) const {
    bytes out(file_header_size + _entries.size() * entry_size);
    encode_file_header(out.data(),
                       {file_kind::offset_index, current_format_version, _base, created_ms});
    uint8_t* p = out.data() + file_header_size;
    for (const auto& e : _entries) {
        store_be<uint32_t>(p, e.offset);
        store_be<uint32_t>(p + 4, e.position);
        p += entry_size;
    }
    return out;
}

result<offset_index> offset_index::decode(bytes_view file, offset_t base, int64_t data_size) {
    auto h = decode_file_header(file, file_kind::offset_index);
    if (!h) return h.err();
    if (h->base_offset != base)
        return {errc::corrupt, fmt::format("offset index header names base offset {}, file {}",
                                           h->base_offset, base)};
    size_t body = file.size() - file_header_size;
    if (body % entry_size != 0)
        return {errc::corrupt, fmt::format("offset index body is {} bytes, not a multiple of {}",
                                           body, entry_size)};
    offset_index idx(base);
    idx._entries.reserve(body / entry_size);
    const uint8_t* p = file.data() + file_header_size;
    for (size_t i = 0; i < body / entry_size; ++i, p += entry_size) {
        rel e{load_be<uint32_t>(p), load_be<uint32_t>(p + 4)};
        if (e.position < file_header_size || static_cast<int64_t>(e.position) >= data_size)
            return {errc::corrupt, fmt::format("offset index entry {} points at byte {}, outside "
                                               "the {} byte data file",
                                               i, e.position, data_size)};
        if (!idx._entries.empty() &&
            (e.offset <= idx._entries.back().offset || e.position <= idx._entries.back().position))
            return {errc::corrupt, fmt::format("offset index entry {} is out of order", i)};
        idx._entries.push_back(e);
    }
    return idx;
}

}  // namespace sluice::log
