#include "log/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "log/log_metrics.h"

namespace sluice::log {
namespace {

// Counts an fsync and its time, whatever its outcome (log_metrics.h).
struct fsync_timer {
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    fsync_timer() = default;
    fsync_timer(const fsync_timer&) = delete;
    fsync_timer& operator=(const fsync_timer&) = delete;
    ~fsync_timer() { count_fsync(started); }
};

}  // namespace

file::~file() {
    if (_fd >= 0) ::close(_fd);
}

error io_error_from_errno(std::string_view what, const fs::path& p, int err) {
    return error{err == ENOENT ? errc::not_found : errc::io_error,
                 fmt::format("{} {}: {}", what, p.string(), std::strerror(err)), err};
}

result<std::shared_ptr<file>> open_file(const fs::path& p, int flags, mode_t mode) {
    int fd;
    do {
        fd = ::open(p.c_str(), flags | O_CLOEXEC, mode);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return io_error_from_errno("open", p, errno);
    return std::make_shared<file>(fd, p);
}

result<size_t> read_at(const file& f, uint8_t* buf, size_t n, int64_t pos) {
    size_t done = 0;
    while (done < n) {
        ssize_t r = ::pread(f.fd(), buf + done, n - done, static_cast<off_t>(pos + done));
        if (r < 0) {
            if (errno == EINTR) continue;
            return io_error_from_errno("read", f.path(), errno);
        }
        if (r == 0) break;
        done += static_cast<size_t>(r);
    }
    return done;
}

result<void> read_exact(const file& f, uint8_t* buf, size_t n, int64_t pos) {
    auto r = read_at(f, buf, n, pos);
    if (!r) return r.err();
    if (*r != n)
        return {errc::corrupt, fmt::format("{}: wanted {} bytes at {}, file ends after {}",
                                           f.path().string(), n, pos, *r)};
    return {};
}

result<void> write_exact(const file& f, const uint8_t* buf, size_t n, int64_t pos) {
    size_t done = 0;
    while (done < n) {
        ssize_t r = ::pwrite(f.fd(), buf + done, n - done, static_cast<off_t>(pos + done));
        if (r < 0) {
            if (errno == EINTR) continue;
            return io_error_from_errno("write", f.path(), errno);
        }
        done += static_cast<size_t>(r);
    }
    return {};
}

result<void> truncate_file(const file& f, int64_t size) {
    while (::ftruncate(f.fd(), static_cast<off_t>(size)) != 0) {
        if (errno != EINTR) return io_error_from_errno("truncate", f.path(), errno);
    }
    return {};
}

result<void> sync_data(const file& f) {
    const fsync_timer timed;
    while (::fdatasync(f.fd()) != 0) {
        if (errno != EINTR) return io_error_from_errno("fdatasync", f.path(), errno);
    }
    return {};
}

result<void> sync_dir(const fs::path& dir) {
    auto f = open_file(dir, O_RDONLY | O_DIRECTORY);
    if (!f) return f.err();
    const fsync_timer timed;
    while (::fsync((*f)->fd()) != 0) {
        if (errno != EINTR) return io_error_from_errno("fsync", dir, errno);
    }
    return {};
}

result<void> write_whole_file(const fs::path& p, bytes_view data) {
    auto f = open_file(p, O_WRONLY | O_CREAT | O_TRUNC);
    if (!f) return f.err();
    return write_exact(**f, data.data(), data.size(), 0);
}

result<bytes> read_whole_file(const fs::path& p) {
    auto f = open_file(p, O_RDONLY);
    if (!f) return f.err();
    // Only a regular file has a size to read: the end of an ext4 directory is LLONG_MAX,
    // and allocating that took the whole broker down (bad_alloc).
    struct stat st {};
    if (::fstat((*f)->fd(), &st) != 0) return io_error_from_errno("stat", p, errno);
    if (!S_ISREG(st.st_mode))
        return io_error_from_errno("read", p, S_ISDIR(st.st_mode) ? EISDIR : EINVAL);
    off_t end = ::lseek((*f)->fd(), 0, SEEK_END);
    if (end < 0) return io_error_from_errno("seek", p, errno);
    bytes out(static_cast<size_t>(end));
    auto r = read_at(**f, out.data(), out.size(), 0);
    if (!r) return r.err();
    out.resize(*r);
    return out;
}

result<timestamp_ms> file_mtime_ms(const fs::path& p) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return io_error_from_errno("stat", p, errno);
    constexpr int64_t ns_per_ms = 1000000;
    return static_cast<timestamp_ms>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / ns_per_ms;
}

}  // namespace sluice::log
