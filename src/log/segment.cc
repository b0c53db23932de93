#include "log/segment.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

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
    for (const char* ext : {data_ext, index_ext, time_index_ext}) {
        const fs::path p = dir / segment_file_name(base, ext);
        if (::unlink(p.c_str()) != 0 && errno != ENOENT)
            return io_error_from_errno("unlink", p, errno);
    }
    return {};
}

result<std::optional<time_index::entry>> read_last_time_entry(const fs::path& path, offset_t base) {
    auto f = open_file(path, O_RDONLY);
    if (!f) return f.err();
    struct stat st {};
    if (::fstat((*f)->fd(), &st) != 0) return io_error_from_errno("stat", path, errno);
    uint8_t h[file_header_size];
    if (auto r = read_exact(**f, h, sizeof h, 0); !r) return r.err();
    auto hdr = decode_file_header(bytes_view(h, sizeof h), file_kind::time_index);
    if (hdr && hdr->base_offset != base)
        hdr = error{errc::corrupt, fmt::format("header names base offset {}", hdr->base_offset)};
    if (!hdr) return error{hdr.code(), fmt::format("{}: {}", path.string(), hdr.err().message)};
    const int64_t body = st.st_size - static_cast<int64_t>(file_header_size);
    if (body % static_cast<int64_t>(time_index::entry_size) != 0)
        return error{errc::corrupt,
                     fmt::format("{}: body of {} bytes is torn", path.string(), body)};
    if (body == 0) return std::optional<time_index::entry>{};
    uint8_t e[time_index::entry_size];
    if (auto r = read_exact(**f, e, sizeof e, st.st_size - static_cast<int64_t>(sizeof e)); !r)
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
      _cache(cache),
      _writable(writable) {}

segment::~segment() {
    _cache.forget(_id);
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

result<std::unique_ptr<segment>> segment::create(const fs::path& dir, offset_t base,
                                                 timestamp_ms now, fd_cache& cache) {
    auto seg = std::make_unique<segment>(dir, base, 0, true, cache);
    auto f = cache.get(seg->_id, seg->data_path(), O_RDWR | O_CREAT | O_EXCL);
    if (!f) return f.err();
    seg->_created_ms = now;
    uint8_t h[file_header_size];
    encode_file_header(h, {file_kind::data, current_format_version, base, now});
    if (auto r = write_exact(**f, h, sizeof h, 0); !r) return r.err();
    seg->_size = file_header_size;
    seg->_header_checked = true;
    seg->reset_indexes();
    return seg;
}

result<std::shared_ptr<file>> segment::data(bool check_header) {
    bool fresh = false;
    auto f = _cache.get(_id, data_path(), _writable ? O_RDWR : O_RDONLY, &fresh);
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
    auto f = data();
    if (!f) return f.err();
    if (auto r = sync_data(**f); !r) return r;
    // Reopened read-only on next use; the indexes reload from their files when read.
    _cache.forget(_id);
    _writable = false;
    unload_indexes();
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

size_t segment::memory_bytes() const {
    return sizeof(*this) + _dir.native().capacity() + (_oidx ? _oidx->memory_bytes() : 0) +
           (_tidx ? _tidx->memory_bytes() : 0);
}

}  // namespace sluice::log
