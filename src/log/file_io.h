#pragma once

// Thin, error-as-value wrappers over POSIX file calls. Short reads at end of file are
// reported, never silently padded; EINTR is retried.

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string_view>

#include "common/result.h"
#include "common/types.h"

namespace sluice::log {

namespace fs = std::filesystem;

// Owns one descriptor; closes it when the last user lets go (see fd_cache).
class file {
  public:
    file(int fd, fs::path path) : _fd(fd), _path(std::move(path)) {}
    ~file();
    file(const file&) = delete;
    file& operator=(const file&) = delete;

    int fd() const { return _fd; }
    const fs::path& path() const { return _path; }

  private:
    int _fd;
    fs::path _path;
};

error io_error_from_errno(std::string_view what, const fs::path& p, int err);

result<std::shared_ptr<file>> open_file(const fs::path& p, int flags, mode_t mode = 0644);
// Reads up to n bytes at pos; fewer only at end of file.
result<size_t> read_at(const file& f, uint8_t* buf, size_t n, int64_t pos);
// Reads exactly n bytes; errc::corrupt when the file ends first.
result<void> read_exact(const file& f, uint8_t* buf, size_t n, int64_t pos);
result<void> write_exact(const file& f, const uint8_t* buf, size_t n, int64_t pos);
result<void> truncate_file(const file& f, int64_t size);
result<void> sync_data(const file& f);
// fsync of a directory, so that files created, renamed or removed in it are durable.
result<void> sync_dir(const fs::path& dir);
// Replaces the file's contents (O_TRUNC, not atomic: readers validate what they load).
result<void> write_whole_file(const fs::path& p, bytes_view data);
// errc::not_found when the file does not exist.
result<bytes> read_whole_file(const fs::path& p);
// Last modification time, ms since the epoch.
result<timestamp_ms> file_mtime_ms(const fs::path& p);

}  // namespace sluice::log
