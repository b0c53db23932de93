#pragma once

// The on-disk tier of shared mode's read-through cache (docs/shared-mode.md, "Reads";
// format: docs/formats/object-cache.md): byte ranges of objects, one file each, under a
// directory of the broker's (`--shared-disk-cache-dir`, `<data_dir>/object-cache` by
// default), up to a budget, least recently used out first. object_cache asks it after a
// memory miss and fills it after each store GET and each put.
//
// Objects never change, so an entry never goes stale. Each file carries a CRC-32C of
// its key and bytes, checked at every read: a file cut short or damaged (kill -9 during
// a write, a bad disk) is dropped and the range read from the store instead, never
// served. Files are written under a temporary name and renamed; nothing is fsynced
// (the checksum catches what a power loss leaves). A broker that starts again finds its
// entries (newest by mtime first, up to the budget) and serves them without a GET.
//
// Writes happen on a thread of the cache's own, so neither the produce window nor a
// fetch waits for the disk; a write that fails (full disk, the directory gone) is
// logged once, counted and skipped: the store still has the bytes.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

namespace sluice::shared {

struct disk_cache_config {
    std::filesystem::path dir;
    uint64_t budget_bytes = uint64_t{1} << 30;  // of files, headers included
    // Bytes queued for the writer; past this, new ranges are not written (a disk slower
    // than the produce or fetch rate must not hold memory without bound).
    size_t max_pending_bytes = 64u << 20;
};

class disk_cache {
  public:
    // Takes the directory (made when missing; locked, so that two brokers never share
    // one) and scans it: the entries found are kept up to the budget, the rest and any
    // leftover temporary file deleted. Never fails: without a usable directory the cache
    // holds nothing and says so in the log, and every write counts as failed.
    explicit disk_cache(disk_cache_config config);
    // Finishes the queued writes, then stops.
    ~disk_cache();
    disk_cache(const disk_cache&) = delete;
    disk_cache& operator=(const disk_cache&) = delete;

    // An entry holding [offset, offset + length) of the object: its first byte's offset
    // and all its bytes, checked. nullopt: none (a damaged entry is deleted first).
    struct found {
        uint64_t offset = 0;
        std::shared_ptr<const std::string> data;
    };
    std::optional<found> find(std::string_view key, uint64_t offset, uint64_t length);
    // Queues bytes of an object that start at `offset` for writing (nothing when an entry
    // starts there already, or they exceed the budget or the queue's room).
    void add(std::string_view key, uint64_t offset, std::shared_ptr<const std::string> data);
    // Waits until the writes queued before the call are done (tests, benchmarks).
    void flush();

    struct stats {
        uint64_t hits = 0;
        uint64_t hit_bytes = 0;  // bytes of the entries read
        uint64_t misses = 0;
        uint64_t bytes = 0;  // of the entries' files
        uint64_t entries = 0;
        uint64_t writes = 0;
        uint64_t write_failures = 0;
        uint64_t writes_dropped = 0;  // the queue was full
        uint64_t corrupt = 0;         // entries dropped at a read: damaged or cut short
    };
    stats counters() const;
    const std::filesystem::path& dir() const { return _config.dir; }

  private:
    using lru_item = std::pair<std::string, uint64_t>;  // object key, offset
    struct entry {
        uint64_t length = 0;      // of the range
        uint64_t file_bytes = 0;  // of its file
        uint64_t id = 0;          // tells a re-made entry from the one a reader saw
        std::list<lru_item>::iterator lru;
    };
    struct job {
        std::string key;
        uint64_t offset = 0;
        std::shared_ptr<const std::string> data;
    };
    struct scanned;

    void open_dir();
    void scan();
    void run_writer();
    void write(const job& j);
    void note_write_failure(const std::string& what);
    // Under _mu.
    bool holds_locked(const std::string& key, uint64_t offset) const;
    void insert_locked(const std::string& key, uint64_t offset, uint64_t length,
                       uint64_t file_bytes);
    void erase_locked(const std::string& key, uint64_t offset);  // and its file
    void evict_locked();
    std::filesystem::path path_of(std::string_view key, uint64_t offset, uint64_t length) const;

    const disk_cache_config _config;
    int _lock_fd = -1;
    bool _usable = false;  // the directory is there and ours

    mutable std::mutex _mu;
    std::list<lru_item> _lru;  // most recent first
    std::unordered_map<std::string, std::map<uint64_t, entry>> _objects;
    uint64_t _next_id = 1;
    stats _stats;
    bool _failing = false;  // the last write failed (logged once until one succeeds)

    std::condition_variable _queue_cv;  // a job queued, or stopping
    std::condition_variable _idle_cv;   // the queue drained
    std::deque<job> _queue;             // guarded by _mu
    size_t _queued_bytes = 0;
    bool _writing = false;  // the writer holds a job taken off the queue
    bool _stopping = false;
    std::thread _writer;
};

}  // namespace sluice::shared
