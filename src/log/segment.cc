#include "log/segment.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <limits>

#include <fmt/format.h>

#include "common/endian.h"
#include "common/logging.h"
#include "log/batch_scanner.h"
#include "log/file_header.h"

namespace sluice::log {

std::string segment_file_name(offset_t base, const char* ext) {
    return fmt::format("{:020d}{}", base, ext);
}

offset_t parse_segment_file_name(std::string_view name, std::string_view ext) {
    constexpr size_t digits = 20;  // see segment_file_name
    if (name.size() != digits + ext.size() || !name.ends_with(ext)) return -1;
    offset_t base = -1;
    auto [p, err] = std::from_chars(name.data(), name.data() + digits, base);
    if (err != std::errc() || p != name.data() + digits || base < 0) return -1;
    return base;
}

result<std::vector<segment_file_info>> list_segments(const fs::path& dir) {
    std::vector<segment_file_info> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const offset_t base = parse_segment_file_name(it->path().filename().string(), data_ext);
        if (base < 0) continue;
        auto size = it->file_size(ec);
        if (ec) break;
        out.push_back({base, static_cast<int64_t>(size)});
    }
    if (ec) return io_error_from_errno("list", dir, ec.value());
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.base_offset < b.base_offset; });
    return out;
}

result<void> remove_segment_files(const fs::path& dir, offset_t base) {
    for (const char* ext : segment_exts) {
        const fs::path p = dir / segment_file_name(base, ext);
        if (::unlink(p.c_str()) != 0 && errno != ENOENT)
            return io_error_from_errno("unlink", p, errno);
    }
    return {};
}

result<std::optional<time_index::entry>> read_last_time_entry(const fs::path& path, offset_t base) {
    auto o = open_entries(path, file_kind::time_index, base, time_index::entry_size);
    if (!o) return o.err();
    if (o->entries == 0) return std::optional<time_index::entry>{};
    uint8_t e[time_index::entry_size];
    if (auto r = read_exact(*o->f, e, sizeof e, o->size - static_cast<int64_t>(sizeof e)); !r)
        return r.err();
    return std::optional(time_index::entry{load_be<int64_t>(e), base + load_be<uint32_t>(e + 8)});
}

segment::segment(fs::path dir, offset_t base, int64_t size, bool writable, fd_cache& cache)
    : _dir(std::move(dir)),
      _base(base),
      _end_offset(base),
      _size(size),
      _last_indexed_pos(file_header_size),
      _id(cache.new_id()),
      _at_id(cache.new_id()),
      _cache(cache),
      _writable(writable) {}

segment::~segment() {
    _cache.forget(_id);
    _cache.forget(_at_id);
}

fs::path segment::data_path() const {
    return _dir / segment_file_name(_base, data_ext);
}
fs::path segment::index_path() const {
    return _dir / segment_file_name(_base, index_ext);
}
fs::path segment::time_index_path() const {
    return _dir / segment_file_name(_base, time_index_ext);
}
fs::path segment::append_time_path() const {
    return _dir / segment_file_name(_base, append_time_ext);
}

result<std::unique_ptr<segment>> segment::create(const fs::path& dir, offset_t base,
                                                 timestamp_ms now, fd_cache& cache) {
    auto seg = std::make_unique<segment>(dir, base, 0, true, cache);
    auto f = cache.get(
        seg->_id, [&] { return seg->data_path(); }, O_RDWR | O_CREAT | O_EXCL);
    if (!f) return f.err();
    seg->_created_ms = now;
    uint8_t h[file_header_size];
    encode_file_header(h, {file_kind::data, current_format_version, base, now});
    if (auto r = write_exact(**f, h, sizeof h, 0); !r) return r.err();
    seg->_size = file_header_size;
    seg->_header_checked = true;
    seg->reset_indexes();
    // Created now, so that the flusher's directory fsync covers its name with the data
    // file's. A failure is not the append's: the next append writes the file again.
    seg->_atidx = std::make_unique<append_time_index>(base);
    if (auto r = seg->save_append_times(); !r) {
        log_warn("storage", "{}", r.err().message);
        seg->_at_warned = true;
    }
    return seg;
}

result<std::shared_ptr<file>> segment::data(bool check_header) {
    bool fresh = false;
    auto f = _cache.get(
        _id, [this] { return data_path(); }, _writable ? O_RDWR : O_RDONLY, &fresh);
    if (!f || _header_checked || !check_header) return f;
    uint8_t h[file_header_size];
    auto n = read_at(**f, h, sizeof h, 0);
    if (!n) return n.err();
    auto hdr = decode_file_header(bytes_view(h, *n), file_kind::data);
    if (hdr && hdr->base_offset != _base)
        hdr = error{errc::corrupt, fmt::format("header names base offset {}", hdr->base_offset)};
    if (!hdr) {
        _cache.forget(_id);
        return error{hdr.code(), fmt::format("{}: {}", data_path().string(), hdr.err().message)};
    }
    _created_ms = hdr->created_ms;
    _header_checked = true;
    return f;
}

result<void> segment::rewrite_header(timestamp_ms now) {
    auto f = data(false);
    if (!f) return f.err();
    uint8_t h[file_header_size];
    encode_file_header(h, {file_kind::data, current_format_version, _base, now});
    if (auto r = truncate_file(**f, file_header_size); !r) return r;
    if (auto r = write_exact(**f, h, sizeof h, 0); !r) return r;
    _size = file_header_size;
    _end_offset = _base;
    _created_ms = now;
    _header_checked = true;
    return sync_data(**f);
}

result<std::optional<timestamp_ms>> segment::known_max_timestamp() {
    if (_max_ts != no_timestamp) return std::optional(_max_ts);
    if (_oidx || _writable) return std::optional<timestamp_ms>{};  // holds no batch yet
    auto last = read_last_time_entry(time_index_path(), _base);
    if (!last) {
        if (last.code() == errc::io_error) return last.err();
        return std::optional<timestamp_ms>{};  // missing or damaged: a load rebuilds it
    }
    // Only the final entry, at the segment end, covers every batch.
    if (!*last || (*last)->offset != _end_offset) return std::optional<timestamp_ms>{};
    _max_ts = (*last)->timestamp;
    return std::optional(_max_ts);
}

result<bool> segment::load_indexes(std::string* why) {
    auto ob = read_whole_file(index_path());
    auto tb = read_whole_file(time_index_path());
    if (!ob || !tb) {
        const auto& e = !ob ? ob.err() : tb.err();
        if (e.code != errc::not_found) return e;
        *why = fmt::format("{} is missing", (!ob ? index_path() : time_index_path()).string());
        return false;
    }
    auto oi = offset_index::decode(*ob, _base, _size);
    if (!oi) {
        *why = fmt::format("{}: {}", index_path().string(), oi.err().message);
        return false;
    }
    // The end of the last segment is only known after its tail scan; bound it loosely.
    offset_t end = _end_offset > _base ? _end_offset : std::numeric_limits<offset_t>::max();
    auto ti = time_index::decode(*tb, _base, end);
    if (!ti) {
        *why = fmt::format("{}: {}", time_index_path().string(), ti.err().message);
        return false;
    }
    if (!oi->empty()) {
        auto last = oi->last();
        if (ti->empty() || ti->last().offset < last.offset) {
            *why = fmt::format("{} ends before the offset index", time_index_path().string());
            return false;
        }
        auto f = data();
        if (!f) return f.err();
        uint8_t h[protocol::batch_header_size];
        auto n = read_at(**f, h, sizeof h, last.position);
        if (!n) return n.err();
        auto bh = protocol::read_batch_header(bytes_view(h, *n));
        if (!bh || bh->base_offset != last.offset) {
            *why = fmt::format("{}: last entry (offset {}, byte {}) does not name a batch there",
                               index_path().string(), last.offset, last.position);
            return false;
        }
    }
    _oidx = std::make_unique<offset_index>(std::move(*oi));
    _tidx = std::make_unique<time_index>(std::move(*ti));
    _last_indexed_pos = _oidx->empty() ? file_header_size : _oidx->last().position;
    _max_ts = _tidx->empty() ? no_timestamp : _tidx->last().timestamp;
    _indexes_dirty = false;
    return true;
}

void segment::reset_indexes() {
    _oidx = std::make_unique<offset_index>(_base);
    _tidx = std::make_unique<time_index>(_base);
    _last_indexed_pos = file_header_size;
    _max_ts = no_timestamp;
    _indexes_dirty = true;
}

void segment::unload_indexes() {
    _oidx.reset();
    _tidx.reset();
}

void segment::note_batch(offset_t base, int64_t position, timestamp_ms batch_max_ts,
                         int32_t interval_bytes) {
    // Invariant: an entry is at least interval bytes after the previous one (or the
    // segment start), so a lookup reads at most about one interval plus one batch.
    if (position > _last_indexed_pos && position - _last_indexed_pos >= interval_bytes &&
        (_oidx->empty() || base > _oidx->last().offset)) {
        _oidx->append(base, position);
        if (_max_ts != no_timestamp) _tidx->append(_max_ts, base);
        _last_indexed_pos = position;
        _indexes_dirty = true;
    }
    _max_ts = std::max(_max_ts, batch_max_ts);
}

void segment::add_final_time_entry() {
    if (!has_data() || !_tidx || _max_ts == no_timestamp) return;
    if (!_tidx->empty() && _tidx->last() == time_index::entry{_max_ts, _end_offset}) return;
    _tidx->append(_max_ts, _end_offset);
    _indexes_dirty = true;
}

result<void> segment::save_indexes() {
    if (!_oidx || !_indexes_dirty) return {};
    if (auto r = write_whole_file(index_path(), _oidx->encode(_created_ms)); !r) return r;
    if (auto r = write_whole_file(time_index_path(), _tidx->encode(_created_ms)); !r) return r;
    _indexes_dirty = false;
    return {};
}

result<void> segment::append(bytes_view data_bytes, offset_t last_offset) {
    auto f = data();
    if (!f) return f.err();
    if (auto r = write_exact(**f, data_bytes.data(), data_bytes.size(), _size); !r) {
        // Drop whatever part landed, so the file never holds half a payload we did not
        // acknowledge; if even that fails, recovery cuts it at the next start.
        (void)truncate_file(**f, _size);
        return r;
    }
    _size += static_cast<int64_t>(data_bytes.size());
    _end_offset = last_offset + 1;
    return {};
}

result<void> segment::truncate(int64_t size, offset_t end_offset) {
    auto f = data(false);
    if (!f) return f.err();
    if (auto r = truncate_file(**f, size); !r) return r;
    _size = size;
    _end_offset = end_offset;
    return {};
}

result<void> segment::seal() {
    add_final_time_entry();
    if (auto r = save_indexes(); !r) return r;
    // Unlike the other indexes, append times cannot be rebuilt from the data, so they are
    // durable before the next segment exists (only the last segment loses entries).
    if (auto r = sync_append_times(); !r) return r;
    auto f = data();
    if (!f) return f.err();
    if (auto r = sync_data(**f); !r) return r;
    // Reopened read-only on next use; the indexes reload from their files when read.
    _cache.forget(_id);
    _cache.forget(_at_id);
    _writable = false;
    unload_indexes();
    unload_append_times();
    return {};
}

result<int64_t> segment::find_position(offset_t offset) {
    auto e = _oidx->lookup(offset);
    auto f = data();
    if (!f) return f.err();
    // Sealed segments may have gaps (compaction); the batch holding `offset`, or the
    // first after it, is what readers want.
    batch_scanner scan(**f, e.position, _size, e.offset, true);
    while (true) {
        auto s = scan.next(false);
        if (!s) return s.err();
        if (*s == batch_scanner::step::end) return _size;
        if (*s != batch_scanner::step::batch)
            return error{errc::corrupt, fmt::format("{} at byte {}: {}", data_path().string(),
                                                    scan.position(), scan.reason())};
        if (scan.header().last_offset() >= offset) return scan.position();
    }
}

void segment::adopt_append_times(append_time_index idx, size_t same_on_file,
                                 std::optional<int64_t> file_bytes) {
    _atidx = std::make_unique<append_time_index>(std::move(idx));
    if (file_bytes) _at_file_bytes = *file_bytes;
    _at_same = std::min(same_on_file, _atidx->size());
}

result<void> segment::note_append_time(offset_t first, offset_t end, timestamp_ms t) {
    // create() and recovery load them; starting afresh here would cut the file's entries.
    if (!_atidx)
        return error{errc::io_error,
                     fmt::format("{}: append times not loaded", append_time_path().string())};
    const size_t before = _atidx->size();
    _at_same = std::min(_at_same, _atidx->add(first, end, t));
    // Same millisecond: the last entry grew in memory only. Its end reaches the file with
    // the next entry, at seal or at shutdown; after a process crash, recovery in the same
    // boot extends it to the data end (docs/formats/append-time-index.md, "Recovery").
    if (_atidx->size() == before) return {};
    return save_append_times();
}

result<void> segment::save_append_times() {
    if (!_atidx) return {};
    const size_t n = _atidx->size();
    const int64_t want = append_time_index::position(n);
    if (_at_same == n && _at_file_bytes == want) return {};
    auto f = _cache.get(
        _at_id, [this] { return append_time_path(); }, O_RDWR | O_CREAT);
    if (!f) return f.err();
    if (_at_file_bytes < 0) {
        uint8_t h[file_header_size];
        append_time_index::encode_header(h, _base, _created_ms);
        if (auto r = write_exact(**f, h, sizeof h, 0); !r) return r;
        _at_same = 0;
        // Whatever followed the old header is cut below.
        _at_file_bytes = std::numeric_limits<int64_t>::max();
    }
    if (_at_same < n) {
        // On appends: the new entry, after the previous one with its final end.
        uint8_t two[2 * append_time_index::entry_size];
        bytes many;
        uint8_t* buf = two;
        const size_t len = (n - _at_same) * append_time_index::entry_size;
        if (len > sizeof two) {
            many.resize(len);
            buf = many.data();
        }
        _atidx->encode_entries(_at_same, n, buf);
        if (auto r = write_exact(**f, buf, len, append_time_index::position(_at_same)); !r)
            return r;
        _at_same = n;
    }
    if (_at_file_bytes > want) {
        if (auto r = truncate_file(**f, want); !r) return r;
    }
    _at_file_bytes = want;
    return {};
}

result<void> segment::sync_append_times() {
    if (!_atidx) return {};
    if (auto r = save_append_times(); !r) return r;
    auto f = _cache.get(
        _at_id, [this] { return append_time_path(); }, O_RDWR | O_CREAT);
    if (!f) return f.err();
    return sync_data(**f);
}

void segment::unload_append_times() {
    if (!_atidx) return;
    _at_bounds_known = true;
    _at_bounds = _atidx->empty()
                     ? std::nullopt
                     : std::optional(append_time_bounds{_atidx->at(0).time, _atidx->last().time,
                                                        _atidx->last().end});
    _atidx.reset();
    _at_same = 0;
    _at_file_bytes = -1;  // unknown; a reload reads it
}

std::optional<std::optional<append_time_bounds>> segment::known_append_time_bounds() const {
    if (_atidx) {
        if (_atidx->empty()) return std::optional<append_time_bounds>{};
        return std::optional(
            append_time_bounds{_atidx->at(0).time, _atidx->last().time, _atidx->last().end});
    }
    if (_at_bounds_known) return _at_bounds;
    return std::nullopt;
}

size_t segment::memory_bytes() const {
    return sizeof(*this) + _dir.native().capacity() + (_oidx ? _oidx->memory_bytes() : 0) +
           (_tidx ? _tidx->memory_bytes() : 0) + (_atidx ? _atidx->memory_bytes() : 0);
}

}  // namespace sluice::log
