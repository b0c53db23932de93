#include "log/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/endian.h"
#include "common/logging.h"
#include "log/file_header.h"
#include "log/log_metrics.h"

namespace sluice::log {

namespace {

// Entry layout (docs/formats/journal.md), big-endian:
//   0 crc u32 (CRC-32C of bytes 4.. to the end of the entry) | 4 size u32 (bytes after it)
//   8 seq u64 | 16 topic id [16] | 32 partition i32 | 36 base offset i64
//   44 append time i64 | 52 name length u16 | 54 name | data
constexpr size_t entry_fixed = 54;
constexpr const char* suffix = ".journal";
constexpr const char* free_suffix = ".free";
constexpr size_t max_free = 2;

fs::path file_name(const fs::path& dir, uint64_t first_seq) {
    return dir / fmt::format("{:020d}{}", first_seq, suffix);
}

// The first sequence number a file's name states; nullopt for other names.
std::optional<uint64_t> parse_name(const std::string& name, const char* ending = suffix) {
    const size_t n = std::strlen(ending);
    if (name.size() != 20 + n || name.compare(20, n, ending) != 0) return std::nullopt;
    uint64_t v = 0;
    for (size_t i = 0; i < 20; ++i) {
        if (name[i] < '0' || name[i] > '9') return std::nullopt;
        v = v * 10 + static_cast<uint64_t>(name[i] - '0');
    }
    return v;
}

// The files under `dir` named <20 digits><ending>, in sequence order; none when the
// directory does not exist.
result<std::vector<fs::path>> files_named(const fs::path& dir, const char* ending) {
    std::vector<std::pair<uint64_t, fs::path>> found;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
        if (ec == std::errc::no_such_file_or_directory) return std::vector<fs::path>{};
        return io_error_from_errno("list", dir, ec.value());
    }
    for (; it != fs::directory_iterator(); it.increment(ec)) {
        if (auto seq = parse_name(it->path().filename().string(), ending))
            found.emplace_back(*seq, it->path());
    }
    if (ec) return io_error_from_errno("list", dir, ec.value());
    std::sort(found.begin(), found.end());
    std::vector<fs::path> out;
    out.reserve(found.size());
    for (auto& [seq, p] : found) out.push_back(std::move(p));
    return out;
}

}  // namespace

journal::journal(options opts, uint64_t next_seq) : _opts(std::move(opts)), _next_seq(next_seq) {
    // Free files a start that kept the journal left (remove_all takes them otherwise).
    if (auto free = files_named(_opts.dir, free_suffix)) _free = std::move(*free);
}

journal::~journal() = default;

uint64_t journal::next_seq() const {
    std::lock_guard lk(_mu);
    return _next_seq;
}

void journal::set_broken(const error& e) {
    if (_broken) return;
    log_error("storage", "journal: {}; small appends now fsync their own partitions", e.message);
    _broken = e;
}

result<void> journal::start_file(timestamp_ms now) {
    if (!_dir_created) {
        std::error_code ec;
        if (fs::create_directory(_opts.dir, ec)) _dir_dirty = true;
        if (ec) return io_error_from_errno("mkdir", _opts.dir, ec.value());
        _dir_created = true;
    }
    auto path = file_name(_opts.dir, _next_seq);
    // A free file keeps its old entries past the new ones; their sequence numbers are all
    // below this file's first, so a scan stops at them.
    if (!_free.empty()) {
        if (::rename(_free.back().c_str(), path.c_str()) != 0)
            return io_error_from_errno("rename", _free.back(), errno);
        _free.pop_back();
    }
    auto f = open_file(path, O_WRONLY | O_CREAT);
    if (!f) return f.err();
    std::array<uint8_t, file_header_size> h{};
    encode_file_header(h.data(), {file_kind::journal, current_format_version,
                                  static_cast<int64_t>(_next_seq), now});
    if (auto r = write_exact(**f, h.data(), h.size(), 0); !r) return r;
    if (_active) _sealed.push_back(std::move(_active));
    _active = std::make_unique<open_file_state>();
    _active->f = std::move(*f);
    _active->path = std::move(path);
    _active->size = file_header_size;
    _active->written = file_header_size;
    _dir_dirty = true;
    _active_dirty = true;
    return {};
}

result<void> journal::append(const topic_id& id, const std::string& topic, int32_t partition,
                             offset_t base_offset, timestamp_ms append_time, bytes_view data) {
    if (topic.size() > 0xffff) return {errc::invalid_argument, "topic name too long"};
    std::lock_guard lk(_mu);
    if (_broken) return *_broken;
    const size_t size = entry_fixed + topic.size() + data.size();
    if (!_active || (_active->size > static_cast<int64_t>(file_header_size) &&
                     _active->size + static_cast<int64_t>(size) > _opts.file_bytes)) {
        if (auto r = start_file(append_time); !r) {
            set_broken(r.err());
            return r;
        }
    }
    std::array<uint8_t, entry_fixed> h{};
    store_be<uint32_t>(h.data() + 4, static_cast<uint32_t>(size - 8));
    store_be<uint64_t>(h.data() + 8, _next_seq);
    std::memcpy(h.data() + 16, id.data(), id.size());
    store_be<int32_t>(h.data() + 32, partition);
    store_be<int64_t>(h.data() + 36, base_offset);
    store_be<int64_t>(h.data() + 44, append_time);
    store_be<uint16_t>(h.data() + 52, static_cast<uint16_t>(topic.size()));
    uint32_t crc = crc32c(h.data() + 4, entry_fixed - 4);
    crc = crc32c(topic.data(), topic.size(), crc);
    crc = crc32c(data.data(), data.size(), crc);
    store_be<uint32_t>(h.data(), crc);
    // Buffered: sync() writes what the entries since the last pass add up to with one
    // pwrite, instead of one system call per append on the event loop's thread.
    auto& buf = _active->pending;
    buf.insert(buf.end(), h.begin(), h.end());
    buf.insert(buf.end(), topic.begin(), topic.end());
    buf.insert(buf.end(), data.begin(), data.end());
    _active->size += static_cast<int64_t>(size);
    _active_dirty = true;
    ++_next_seq;
    _active->partitions.insert(topic_partition{topic, partition});
    return {};
}

result<std::vector<journal::sealed_file>> journal::sync() {
    std::vector<std::unique_ptr<open_file_state>> sealed;
    // The active file's entries since the last sync; appends go on into the spare buffer.
    std::shared_ptr<file> active;
    bytes active_bytes;
    int64_t active_pos = 0;
    bool dir = false;
    {
        std::lock_guard lk(_mu);
        if (_broken) return *_broken;
        sealed = std::exchange(_sealed, {});
        if (_active && _active_dirty) {
            active = _active->f;
            active_pos = _active->written;
            active_bytes = std::exchange(_active->pending, std::move(_spare));
            _active->written += static_cast<int64_t>(active_bytes.size());
        }
        dir = _dir_dirty;
        _active_dirty = false;
        _dir_dirty = false;
    }
    // Only this thread writes entries, so the writes land in order without the lock.
    result<void> r;
    for (auto& s : sealed) {
        if (r && !s->pending.empty())
            r = write_exact(*s->f, s->pending.data(), s->pending.size(), s->written);
        if (r) r = sync_data(*s->f);
        s->f.reset();  // closes it
    }
    if (r && active && !active_bytes.empty())
        r = write_exact(*active, active_bytes.data(), active_bytes.size(), active_pos);
    if (r && active) r = sync_data(*active);
    if (r && active) count_journal_sync(active_bytes.size());
    // The directory entries of new files, and the directory's own in logs/.
    if (r && dir) r = sync_dir(_opts.dir);
    if (r && dir) r = sync_dir(_opts.dir.parent_path());
    std::lock_guard lk(_mu);
    if (!r) {
        set_broken(r.err());
        return r.err();
    }
    active_bytes.clear();  // keeps its capacity for the next swap
    if (active_bytes.capacity() > _spare.capacity()) _spare = std::move(active_bytes);
    std::vector<sealed_file> out;
    out.reserve(sealed.size());
    for (auto& s : sealed)
        out.push_back({std::move(s->path), {s->partitions.begin(), s->partitions.end()}});
    return out;
}

void journal::recycle(const fs::path& sealed) {
    std::lock_guard lk(_mu);
    if (_free.size() < max_free) {
        auto seq = parse_name(sealed.filename().string());
        fs::path to = sealed;
        to.replace_extension(free_suffix);
        if (seq && ::rename(sealed.c_str(), to.c_str()) == 0) {
            _free.push_back(std::move(to));
            return;
        }
    }
    if (::unlink(sealed.c_str()) != 0)
        log_warn("storage", "journal: {}", io_error_from_errno("unlink", sealed, errno).message);
}

result<std::vector<fs::path>> journal::list(const fs::path& dir) {
    return files_named(dir, suffix);
}

result<journal::scan_result> journal::scan(const fs::path& dir,
                                           const std::function<bool(const journal_entry&)>& fn) {
    auto files = list(dir);
    if (!files) return files.err();
    scan_result out;
    std::optional<uint64_t> expect;
    bool more = true;
    // A file of a format this build does not know: its entries may be acknowledged
    // records, so the scan fails rather than dropping them.
    std::optional<error> fatal;
    // One file; false from fn ends the whole scan through `more`.
    auto read_file = [&](const fs::path& path, const bytes& b) -> std::string {
        const std::string name = path.filename().string();
        auto h = decode_file_header(b, file_kind::journal);
        if (!h && h.code() == errc::unsupported)
            fatal = error{h.code(), name + ": " + h.err().message};
        if (!h) return fmt::format("{}: {}", name, h.err().message);
        const auto first = static_cast<uint64_t>(h->base_offset);
        if (expect && first != *expect)
            return fmt::format("{} starts at sequence {}, expected {}", name, first, *expect);
        expect = first;
        for (size_t pos = file_header_size; pos < b.size();) {
            const uint8_t* p = b.data() + pos;
            if (b.size() - pos < entry_fixed)
                return fmt::format("{} at byte {}: torn entry header", name, pos);
            const size_t size = load_be<uint32_t>(p + 4) + size_t{8};
            const size_t name_len = load_be<uint16_t>(p + 52);
            if (size < entry_fixed + name_len || size > b.size() - pos)
                return fmt::format("{} at byte {}: torn entry", name, pos);
            if (load_be<uint32_t>(p) != crc32c(p + 4, size - 4))
                return fmt::format("{} at byte {}: CRC mismatch", name, pos);
            journal_entry e;
            e.seq = load_be<uint64_t>(p + 8);
            if (e.seq != *expect)
                return fmt::format("{} at byte {}: sequence {}, expected {}", name, pos, e.seq,
                                   *expect);
            std::memcpy(e.id.data(), p + 16, e.id.size());
            e.partition = load_be<int32_t>(p + 32);
            e.base_offset = load_be<int64_t>(p + 36);
            e.append_time = load_be<int64_t>(p + 44);
            e.topic = std::string_view(reinterpret_cast<const char*>(p + entry_fixed), name_len);
            e.data = bytes_view(p + entry_fixed + name_len, size - entry_fixed - name_len);
            ++out.entries;
            out.last_seq = e.seq;
            out.found_any = true;
            ++*expect;
            pos += size;
            if (!fn(e)) {
                more = false;
                return {};
            }
        }
        return {};
    };
    for (const auto& path : *files) {
        auto data = read_whole_file(path);
        if (!data) return data.err();
        ++out.files;
        // A torn or damaged entry ends its file; the next file is still read when it
        // continues the sequence (a later run's, see docs/formats/journal.md).
        std::string why = read_file(path, *data);
        if (fatal) return *fatal;
        if (!why.empty()) {
            if (!out.stop.empty()) out.stop += "; ";
            out.stop += why;
        }
        if (!more) break;
    }
    return out;
}

result<void> journal::remove_all(const fs::path& dir) {
    auto files = list(dir);
    if (!files) return files.err();
    auto free = files_named(dir, free_suffix);
    if (!free) return free.err();
    files->insert(files->end(), free->begin(), free->end());
    if (files->empty()) return {};
    for (const auto& p : *files) {
        if (::unlink(p.c_str()) != 0 && errno != ENOENT)
            return io_error_from_errno("unlink", p, errno);
    }
    return sync_dir(dir);
}

}  // namespace sluice::log
