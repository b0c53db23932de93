#include "shared/disk_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/endian.h"
#include "common/logging.h"
#include "common/result.h"
#include "log/file_header.h"

namespace sluice::shared {

// File layout (docs/formats/object-cache.md):
//   0  file header (32 bytes, log/file_header.h), kind SLOC, base_offset = range offset
//   32 body_crc u32: CRC-32C of every byte after it
//   36 key_length u32
//   40 data_length u64
//   48 key, then data
namespace {

namespace fs = std::filesystem;

constexpr size_t head_size = log::file_header_size + 16;
// S3 keys are at most 1024 bytes; a longer length is damage, not a key.
constexpr uint32_t max_key_length = 4096;
constexpr std::string_view range_suffix = ".range";
constexpr std::string_view tmp_suffix = ".range.tmp";

uint64_t fnv1a64(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

std::string errno_text(int e) {
    return std::error_code(e, std::generic_category()).message();
}

// "HASH-OFFSET-LENGTH.range" -> its three numbers.
bool parse_name(std::string_view name, uint64_t& hash, uint64_t& offset, uint64_t& length) {
    if (!name.ends_with(range_suffix)) return false;
    name.remove_suffix(range_suffix.size());
    auto next = [&](uint64_t& v, int base, char stop) {
        auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), v, base);
        if (ec != std::errc{} || p == name.data()) return false;
        name.remove_prefix(static_cast<size_t>(p - name.data()));
        if (stop == 0) return name.empty();
        if (name.empty() || name.front() != stop) return false;
        name.remove_prefix(1);
        return true;
    };
    return next(hash, 16, '-') && next(offset, 10, '-') && next(length, 10, 0);
}

bool pread_all(int fd, char* out, size_t n, uint64_t at) {
    while (n > 0) {
        ssize_t r = ::pread(fd, out, n, static_cast<off_t>(at));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        out += r;
        n -= static_cast<size_t>(r);
        at += static_cast<uint64_t>(r);
    }
    return true;
}

struct fd_guard {
    int fd = -1;
    ~fd_guard() {
        if (fd >= 0) ::close(fd);
    }
};

// The head of an entry file: its header checked, its lengths and key read. The caller
// checks they are the ones the name says. Errors: corrupt.
struct entry_head {
    uint64_t offset = 0;
    uint32_t body_crc = 0;
    std::string head;  // the 48 bytes
    std::string key;
    uint64_t data_length = 0;
};

result<entry_head> read_head(int fd, uint64_t file_size) {
    entry_head h;
    h.head.resize(head_size);
    if (file_size < head_size || !pread_all(fd, h.head.data(), head_size, 0))
        return error{errc::corrupt, fmt::format("{} bytes, shorter than a header", file_size)};
    const auto* p = reinterpret_cast<const uint8_t*>(h.head.data());
    auto fh =
        log::decode_file_header({p, log::file_header_size}, log::file_kind::object_cache_entry);
    if (!fh) return error{errc::corrupt, fh.err().message};
    h.offset = static_cast<uint64_t>(fh->base_offset);
    h.body_crc = load_be<uint32_t>(p + 32);
    const auto key_length = load_be<uint32_t>(p + 36);
    h.data_length = load_be<uint64_t>(p + 40);
    if (key_length > max_key_length || file_size != head_size + key_length + h.data_length)
        return error{
            errc::corrupt,
            fmt::format("{} bytes, not the {} of a header, a {}-byte key and {} bytes", file_size,
                        head_size + key_length + h.data_length, key_length, h.data_length)};
    h.key.resize(key_length);
    if (!pread_all(fd, h.key.data(), key_length, head_size))
        return error{errc::corrupt, "the key cannot be read"};
    return h;
}

// The bytes of the entry file at `path` holding [offset, offset + length) of `key`,
// checked against its CRC; marks the file used (mtime). Errors: not_found (gone),
// corrupt (cut short, damaged, or another range's).
result<std::string> read_entry(const fs::path& path, std::string_view key, uint64_t offset,
                               uint64_t length) {
    fd_guard f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) {
        if (errno == ENOENT) return error{errc::not_found, "gone"};
        return error{errc::corrupt, "open: " + errno_text(errno)};
    }
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) return error{errc::corrupt, "stat: " + errno_text(errno)};
    auto h = read_head(f.fd, static_cast<uint64_t>(st.st_size));
    if (!h) return h.err();
    if (h->key != key || h->offset != offset || h->data_length != length)
        return error{errc::corrupt, "holds another range"};
    std::string data(length, '\0');
    if (!pread_all(f.fd, data.data(), length, head_size + key.size()))
        return error{errc::corrupt, "the bytes cannot be read"};
    uint32_t crc = crc32c(h->head.data() + 36, head_size - 36);
    crc = crc32c(h->key.data(), h->key.size(), crc);
    crc = crc32c(data.data(), data.size(), crc);
    if (crc != h->body_crc) return error{errc::corrupt, "CRC mismatch"};
    ::futimens(f.fd, nullptr);  // recently used: the scan at start keeps the newest first
    return data;
}

}  // namespace

struct disk_cache::scanned {
    fs::file_time_type mtime;
    std::string key;
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t file_bytes = 0;
};

disk_cache::disk_cache(disk_cache_config config) : _config(std::move(config)) {
    open_dir();
    if (_usable) scan();
    _writer = std::thread([this] { run_writer(); });
}

disk_cache::~disk_cache() {
    {
        std::lock_guard lk(_mu);
        _stopping = true;
    }
    _queue_cv.notify_all();
    _writer.join();
    if (_lock_fd >= 0) ::close(_lock_fd);
}

void disk_cache::open_dir() {
    std::error_code ec;
    fs::create_directories(_config.dir, ec);
    if (ec || !fs::is_directory(_config.dir, ec)) {
        log_warn("shared",
                 "disk cache: cannot make the directory {}: {}; reads the memory cache misses "
                 "go to the object store",
                 _config.dir.string(), ec ? ec.message() : "not a directory");
        return;
    }
    const auto lock_path = _config.dir / ".lock";
    _lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (_lock_fd < 0 || ::flock(_lock_fd, LOCK_EX | LOCK_NB) != 0) {
        log_warn("shared",
                 "disk cache: cannot lock {}: {} (another broker's cache?); reads the memory "
                 "cache misses go to the object store",
                 lock_path.string(), errno_text(errno));
        return;
    }
    _usable = true;
}

void disk_cache::scan() {
    std::vector<scanned> seen;
    std::error_code ec;
    uint64_t dropped = 0;
    auto drop = [&](const fs::path& p) {
        std::error_code ignored;
        if (fs::remove(p, ignored)) ++dropped;
    };
    for (const auto& sub : fs::directory_iterator(_config.dir, ec)) {
        const auto sub_name = sub.path().filename().string();
        if (sub_name.size() != 2 || !std::isxdigit(static_cast<unsigned char>(sub_name[0])) ||
            !std::isxdigit(static_cast<unsigned char>(sub_name[1])) || !sub.is_directory(ec))
            continue;
        for (const auto& f : fs::directory_iterator(sub.path(), ec)) {
            const auto name = f.path().filename().string();
            if (name.ends_with(tmp_suffix)) {
                drop(f.path());  // a write a crash cut off
                continue;
            }
            if (!name.ends_with(range_suffix)) continue;  // not the cache's
            uint64_t hash = 0, offset = 0, length = 0;
            fd_guard fd{::open(f.path().c_str(), O_RDONLY | O_CLOEXEC)};
            struct stat st {};
            if (!parse_name(name, hash, offset, length) || fd.fd < 0 || ::fstat(fd.fd, &st) != 0) {
                drop(f.path());
                continue;
            }
            auto h = read_head(fd.fd, static_cast<uint64_t>(st.st_size));
            if (!h || fnv1a64(h->key) != hash || h->offset != offset || h->data_length != length ||
                fmt::format("{:02x}", hash >> 56) != sub_name) {
                drop(f.path());
                continue;
            }
            seen.push_back({f.last_write_time(ec), std::move(h->key), offset, length,
                            static_cast<uint64_t>(st.st_size)});
        }
    }
    if (ec) log_warn("shared", "disk cache: reading {}: {}", _config.dir.string(), ec.message());
    // Newest first, up to the budget; one entry per (object, offset).
    std::sort(seen.begin(), seen.end(),
              [](const scanned& a, const scanned& b) { return a.mtime > b.mtime; });
    std::lock_guard lk(_mu);
    for (auto& s : seen) {
        if (holds_locked(s.key, s.offset) || _stats.bytes + s.file_bytes > _config.budget_bytes) {
            drop(path_of(s.key, s.offset, s.length));
            continue;
        }
        _lru.emplace_back(s.key, s.offset);
        _objects[s.key].emplace(s.offset,
                                entry{s.length, s.file_bytes, _next_id++, std::prev(_lru.end())});
        _stats.bytes += s.file_bytes;
        ++_stats.entries;
    }
    log_info("shared", "disk cache {}: {} entries, {} bytes kept (budget {}), {} files dropped",
             _config.dir.string(), _stats.entries, _stats.bytes, _config.budget_bytes, dropped);
}

std::optional<disk_cache::found> disk_cache::find(std::string_view key, uint64_t offset,
                                                  uint64_t length) {
    const std::string k(key);
    uint64_t at = 0, len = 0, id = 0;
    {
        std::lock_guard lk(_mu);
        auto obj = _objects.find(k);
        bool hit = false;
        if (obj != _objects.end()) {
            auto it = obj->second.upper_bound(offset);
            if (it != obj->second.begin()) {
                --it;
                if (offset + length <= it->first + it->second.length) {
                    at = it->first;
                    len = it->second.length;
                    id = it->second.id;
                    hit = true;
                }
            }
        }
        if (!hit) {
            ++_stats.misses;
            return std::nullopt;
        }
    }
    const auto path = path_of(k, at, len);
    auto got = read_entry(path, k, at, len);
    std::lock_guard lk(_mu);
    // The entry the read was for, unless eviction or another reader dropped it meanwhile.
    entry* same = nullptr;
    if (auto obj = _objects.find(k); obj != _objects.end())
        if (auto it = obj->second.find(at); it != obj->second.end() && it->second.id == id)
            same = &it->second;
    if (!got) {
        if (got.code() == errc::corrupt) {
            ++_stats.corrupt;
            log_warn("shared", "disk cache: dropped {}: {}; reading the range from the store",
                     path.string(), got.err().message);
        }
        if (same) erase_locked(k, at);
        ++_stats.misses;
        return std::nullopt;
    }
    if (same) _lru.splice(_lru.begin(), _lru, same->lru);
    ++_stats.hits;
    _stats.hit_bytes += len;
    return found{at, std::make_shared<const std::string>(std::move(*got))};
}

void disk_cache::add(std::string_view key, uint64_t offset,
                     std::shared_ptr<const std::string> data) {
    std::lock_guard lk(_mu);
    if (!_usable) {
        ++_stats.write_failures;
        return;
    }
    const std::string k(key);
    if (head_size + k.size() + data->size() > _config.budget_bytes || holds_locked(k, offset))
        return;
    if (_queued_bytes + data->size() > _config.max_pending_bytes) {
        ++_stats.writes_dropped;
        return;
    }
    _queued_bytes += data->size();
    _queue.push_back({k, offset, std::move(data)});
    _queue_cv.notify_one();
}

void disk_cache::flush() {
    std::unique_lock lk(_mu);
    _idle_cv.wait(lk, [&] { return _queue.empty() && !_writing; });
}

void disk_cache::run_writer() {
    std::unique_lock lk(_mu);
    for (;;) {
        _queue_cv.wait(lk, [&] { return _stopping || !_queue.empty(); });
        if (_queue.empty()) return;  // stopping, with every queued write done
        job j = std::move(_queue.front());
        _queue.pop_front();
        _queued_bytes -= j.data->size();
        if (!holds_locked(j.key, j.offset)) {
            _writing = true;
            lk.unlock();
            write(j);
            lk.lock();
            _writing = false;
        }
        if (_queue.empty()) _idle_cv.notify_all();
    }
}

void disk_cache::write(const job& j) {
    const auto& data = *j.data;
    const auto path = path_of(j.key, j.offset, data.size());
    const auto tmp = fs::path(path.string() + ".tmp");
    uint8_t head[head_size];
    log::file_header fh;
    fh.kind = log::file_kind::object_cache_entry;
    fh.base_offset = static_cast<int64_t>(j.offset);
    fh.created_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    log::encode_file_header(head, fh);
    store_be<uint32_t>(head + 36, static_cast<uint32_t>(j.key.size()));
    store_be<uint64_t>(head + 40, data.size());
    uint32_t crc = crc32c(head + 36, head_size - 36);
    crc = crc32c(j.key.data(), j.key.size(), crc);
    crc = crc32c(data.data(), data.size(), crc);
    store_be<uint32_t>(head + 32, crc);

    auto fail = [&](const char* step, int e) {
        ::unlink(tmp.c_str());
        note_write_failure(fmt::format("{} {}: {}", step, tmp.string(), errno_text(e)));
    };
    if (::mkdir(path.parent_path().c_str(), 0755) != 0 && errno != EEXIST)
        return fail("mkdir for", errno);
    fd_guard f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (f.fd < 0) return fail("open", errno);
    iovec iov[3] = {{head, head_size},
                    {const_cast<char*>(j.key.data()), j.key.size()},
                    {const_cast<char*>(data.data()), data.size()}};
    size_t left = head_size + j.key.size() + data.size();
    iovec* v = iov;
    int n = 3;
    while (left > 0) {
        ssize_t w = ::writev(f.fd, v, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return fail("write", w < 0 ? errno : EIO);
        left -= static_cast<size_t>(w);
        auto done = static_cast<size_t>(w);
        while (n > 0 && done >= v->iov_len) {
            done -= v->iov_len;
            ++v;
            --n;
        }
        if (n > 0) {
            v->iov_base = static_cast<char*>(v->iov_base) + done;
            v->iov_len -= done;
        }
    }
    const int fd = f.fd;
    f.fd = -1;
    if (::close(fd) != 0) return fail("close", errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename", errno);

    std::lock_guard lk(_mu);
    if (_failing) {
        log_info("shared", "disk cache: writes to {} succeed again", _config.dir.string());
        _failing = false;
    }
    ++_stats.writes;
    insert_locked(j.key, j.offset, data.size(), head_size + j.key.size() + data.size());
    evict_locked();
}

void disk_cache::note_write_failure(const std::string& what) {
    std::lock_guard lk(_mu);
    ++_stats.write_failures;
    if (_failing) return;
    _failing = true;
    log_warn("shared",
             "disk cache: {}; ranges are read from the object store, and not kept on disk "
             "until a write succeeds again",
             what);
}

bool disk_cache::holds_locked(const std::string& key, uint64_t offset) const {
    auto obj = _objects.find(key);
    return obj != _objects.end() && obj->second.contains(offset);
}

void disk_cache::insert_locked(const std::string& key, uint64_t offset, uint64_t length,
                               uint64_t file_bytes) {
    auto& ranges = _objects[key];
    if (ranges.contains(offset)) return;
    _lru.emplace_front(key, offset);
    ranges.emplace(offset, entry{length, file_bytes, _next_id++, _lru.begin()});
    _stats.bytes += file_bytes;
    ++_stats.entries;
}

void disk_cache::erase_locked(const std::string& key, uint64_t offset) {
    auto obj = _objects.find(key);
    if (obj == _objects.end()) return;
    auto it = obj->second.find(offset);
    if (it == obj->second.end()) return;
    // Under the lock, so that no write of the same name can come between.
    ::unlink(path_of(key, offset, it->second.length).c_str());
    _stats.bytes -= it->second.file_bytes;
    --_stats.entries;
    _lru.erase(it->second.lru);
    obj->second.erase(it);
    if (obj->second.empty()) _objects.erase(obj);
}

void disk_cache::evict_locked() {
    while (_stats.bytes > _config.budget_bytes && !_lru.empty()) {
        const auto [key, offset] = _lru.back();
        erase_locked(key, offset);
    }
}

fs::path disk_cache::path_of(std::string_view key, uint64_t offset, uint64_t length) const {
    const uint64_t h = fnv1a64(key);
    return _config.dir / fmt::format("{:02x}", h >> 56) /
           fmt::format("{:016x}-{}-{}{}", h, offset, length, range_suffix);
}

disk_cache::stats disk_cache::counters() const {
    std::lock_guard lk(_mu);
    return _stats;
}

}  // namespace sluice::shared
