#include "log/append_time_index.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "common/endian.h"
#include "log/time_index.h"

namespace sluice::log {

size_t append_time_index::add(offset_t first, offset_t end, timestamp_ms t) {
    if (!_entries.empty() && _entries.back().time == t) {
        _entries.back().end = static_cast<uint32_t>(end - _base);
        return _entries.size() - 1;
    }
    _entries.push_back(
        {static_cast<uint32_t>(first - _base), static_cast<uint32_t>(end - _base), t});
    return _entries.size() - 1;
}

size_t append_time_index::trim(offset_t end) {
    const int64_t rel_end = std::max<int64_t>(end - _base, 0);
    size_t keep = 0;
    while (keep < _entries.size() && _entries[keep].end <= rel_end) ++keep;
    size_t unchanged = keep;
    if (keep < _entries.size() && _entries[keep].first < rel_end) {
        _entries[keep].end = static_cast<uint32_t>(rel_end);
        ++keep;
    }
    _entries.resize(keep);
    return unchanged;
}

ptrdiff_t append_time_index::last_starting_at_or_below(offset_t o) const {
    auto it = std::upper_bound(_entries.begin(), _entries.end(), o - _base,
                               [](int64_t r, const rel& e) { return r < e.first; });
    return (it - _entries.begin()) - 1;
}

size_t append_time_index::first_at_or_after(timestamp_ms ts) const {
    auto it = std::partition_point(_entries.begin(), _entries.end(),
                                   [ts](const rel& e) { return e.time < ts; });
    return static_cast<size_t>(it - _entries.begin());
}

bool append_time_index::operator==(const append_time_index& o) const {
    if (_base != o._base || _entries.size() != o._entries.size()) return false;
    for (size_t i = 0; i < _entries.size(); ++i)
        if (at(i) != o.at(i)) return false;
    return true;
}

void append_time_index::encode_header(uint8_t* out, offset_t base, timestamp_ms created_ms) {
    encode_file_header(out, {file_kind::append_time, current_format_version, base, created_ms});
}

void append_time_index::encode_entries(size_t from, size_t to, uint8_t* out) const {
    for (size_t i = from; i < to; ++i, out += entry_size) {
        store_be<uint32_t>(out, _entries[i].first);
        store_be<uint32_t>(out + 4, _entries[i].end);
        store_be<int64_t>(out + 8, _entries[i].time);
    }
}

bytes append_time_index::encode(timestamp_ms created_ms) const {
    bytes out(static_cast<size_t>(position(_entries.size())));
    encode_header(out.data(), _base, created_ms);
    encode_entries(0, _entries.size(), out.data() + file_header_size);
    return out;
}

result<append_time_index> append_time_index::decode(bytes_view file, offset_t base,
                                                    std::string* dropped) {
    auto h = decode_file_header(file, file_kind::append_time);
    if (!h) return h.err();
    if (h->base_offset != base)
        return {errc::corrupt, fmt::format("header names base offset {}", h->base_offset)};
    dropped->clear();
    const size_t body = file.size() - file_header_size;
    append_time_index idx(base);
    idx._entries.reserve(body / entry_size);
    const uint8_t* p = file.data() + file_header_size;
    for (size_t i = 0; i < body / entry_size; ++i, p += entry_size) {
        rel e{load_be<uint32_t>(p), load_be<uint32_t>(p + 4), load_be<int64_t>(p + 8)};
        // Zeros (a file extended but never written back) fail the first test.
        if (e.first >= e.end) {
            *dropped = fmt::format("entry {} is empty or reversed", i);
            return idx;
        }
        if (!idx._entries.empty() &&
            (e.first < idx._entries.back().end || e.time < idx._entries.back().time)) {
            *dropped = fmt::format("entry {} is out of order", i);
            return idx;
        }
        idx._entries.push_back(e);
    }
    if (body % entry_size != 0)
        *dropped = fmt::format("a torn entry of {} bytes ends the file", body % entry_size);
    return idx;
}

result<append_time_file> read_append_time_file(const fs::path& path, offset_t base) {
    append_time_file out{append_time_index(base), -1, {}};
    auto b = read_whole_file(path);
    if (!b) {
        if (b.code() != errc::not_found) return b.err();
        out.problem = "the file is missing";
        return out;
    }
    std::string dropped;
    auto idx = append_time_index::decode(*b, base, &dropped);
    if (!idx) {
        out.problem = idx.err().message;
        return out;
    }
    out.index = std::move(*idx);
    out.file_bytes = static_cast<int64_t>(b->size());
    out.problem = std::move(dropped);
    return out;
}

result<std::optional<append_time_bounds>> read_append_time_bounds(const fs::path& path,
                                                                  offset_t base) {
    constexpr auto esize = append_time_index::entry_size;
    auto o = open_entries(path, file_kind::append_time, base, esize);
    if (!o) return o.err();
    if (o->entries == 0) return std::optional<append_time_bounds>{};
    uint8_t e[esize];
    if (auto r = read_exact(*o->f, e, sizeof e, file_header_size); !r) return r.err();
    append_time_bounds out;
    out.first_time = load_be<int64_t>(e + 8);
    if (auto r = read_exact(*o->f, e, sizeof e, o->size - static_cast<int64_t>(esize)); !r)
        return r.err();
    out.last_time = load_be<int64_t>(e + 8);
    out.end = base + load_be<uint32_t>(e + 4);
    return std::optional(out);
}

timestamp_ms estimate_append_time(const protocol::batch_header& h, timestamp_ms lo,
                                  timestamp_ms hi) {
    timestamp_ms t = h.max_timestamp;
    if (hi != no_timestamp) t = std::min(t, hi);
    if (lo != no_timestamp) t = std::max(t, lo);
    return t;
}

}  // namespace sluice::log
