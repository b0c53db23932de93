#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "log/file_io.h"

namespace sluice::log {

// A bounded LRU of open segment data files, shared by every partition of a broker, so
// that 200,000 partitions do not need 200,000 descriptors. Files are handed out as
// shared_ptr: evicting an entry only drops the cache's reference, and the descriptor
// closes when the last in-flight reader or fsync lets go. The bound is therefore on
// idle descriptors; in-use ones may briefly exceed it. Thread-safe.
class fd_cache {
  public:
    explicit fd_cache(size_t max_open) : _max_open(max_open < 1 ? 1 : max_open) {}

    // A unique key for one file for the life of the cache.
    uint64_t new_id();
    // The cached file for `id`, or opens `path()` with `flags` (then `fresh` is set). The
    // path is only built on a miss: appends ask for their files thousands of times a
    // second, and composing the path was 5% of the event loop's time.
    result<std::shared_ptr<file>> get(uint64_t id, const std::function<fs::path()>& path, int flags,
                                      bool* fresh = nullptr);
    // Drops the entry (file deleted, reopened with other flags, or segment gone).
    void forget(uint64_t id);
    void clear();

    size_t cached() const;
    uint64_t opens() const;  // files opened so far (tests, metrics)
    size_t max_open() const { return _max_open; }

  private:
    using lru_list = std::list<std::pair<uint64_t, std::shared_ptr<file>>>;

    const size_t _max_open;
    mutable std::mutex _mu;
    lru_list _lru;  // front = most recently used
    std::unordered_map<uint64_t, lru_list::iterator> _by_id;
    uint64_t _next_id = 1;
    uint64_t _opens = 0;
};

}  // namespace sluice::log
