#pragma once

// The read-through cache of shared mode's reads (docs/shared-mode.md): byte ranges of
// objects, kept in memory up to a budget, least recently used out first, in front of an
// optional disk tier (disk_cache.h): a memory miss asks the disk, then the store; what
// the store returns fills both. Objects are written once and never change, so an entry
// never goes stale. The producing broker puts what it uploaded, so reads of the hot tail
// on that broker do not reach the store, even after it restarts (the disk tier).

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/result.h"
#include "metrics/text_writer.h"
#include "shared/disk_cache.h"
#include "shared/object_store.h"

namespace sluice::shared {

class object_cache {
  public:
    // `disk` (nullptr: none) must outlive the cache.
    object_cache(object_store& store, size_t budget_bytes, disk_cache* disk = nullptr)
        : _store(store), _budget(budget_bytes), _disk(disk) {}

    // Appends [offset, offset + length) of the object to `out`: from a range in memory
    // holding it, else from one on disk (then kept in memory too), else one range GET of
    // exactly that (then kept in both). Errors: the store's.
    result<void> read(std::string_view key, uint64_t offset, uint64_t length, std::string& out);
    // Keeps bytes of an object that start at `offset` (in memory, and queued for disk).
    void put(std::string_view key, uint64_t offset, std::shared_ptr<const std::string> data);

    struct stats {
        uint64_t hits = 0;
        uint64_t misses = 0;
        uint64_t hit_bytes = 0;  // bytes served from memory
        size_t bytes = 0;
        size_t entries = 0;
    };
    stats counters() const;  // of the memory tier
    disk_cache* disk() const { return _disk; }

    // The sluice_object_cache_* families of GET /metrics (docs/operations.md), both tiers.
    void write_metrics(metrics::text_writer& w) const;

  private:
    using lru_item = std::pair<std::string, uint64_t>;  // object key, offset
    struct entry {
        std::shared_ptr<const std::string> data;
        std::list<lru_item>::iterator lru;
    };
    void insert_locked(const std::string& key, uint64_t offset,
                       std::shared_ptr<const std::string> data);

    object_store& _store;
    const size_t _budget;
    disk_cache* const _disk;
    mutable std::mutex _mu;
    std::list<lru_item> _lru;  // most recent first
    // Per object, its cached ranges by offset.
    std::unordered_map<std::string, std::map<uint64_t, entry>> _objects;
    size_t _bytes = 0;
    size_t _count = 0;
    uint64_t _hits = 0;
    uint64_t _misses = 0;
    uint64_t _hit_bytes = 0;
};

}  // namespace sluice::shared
