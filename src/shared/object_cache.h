#pragma once

// The read-through cache of shared mode's reads (docs/shared-mode.md): byte ranges of
// objects, kept in memory up to a budget, least recently used out first. Objects are
// written once and never change, so an entry never goes stale. The producing broker
// puts what it uploaded, so reads of the hot tail on that broker do not reach the store.

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
#include "shared/object_store.h"

namespace sluice::shared {

class object_cache {
  public:
    object_cache(object_store& store, size_t budget_bytes) : _store(store), _budget(budget_bytes) {}

    // Appends [offset, offset + length) of the object to `out`: from a cached range
    // holding it, else one range GET of exactly that (then kept). Errors: the store's.
    result<void> read(std::string_view key, uint64_t offset, uint64_t length, std::string& out);
    // Keeps bytes of an object that start at `offset`.
    void put(std::string_view key, uint64_t offset, std::shared_ptr<const std::string> data);

    struct stats {
        uint64_t hits = 0;
        uint64_t misses = 0;
        size_t bytes = 0;
        size_t entries = 0;
    };
    stats counters() const;

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
    mutable std::mutex _mu;
    std::list<lru_item> _lru;  // most recent first
    // Per object, its cached ranges by offset.
    std::unordered_map<std::string, std::map<uint64_t, entry>> _objects;
    size_t _bytes = 0;
    size_t _count = 0;
    uint64_t _hits = 0;
    uint64_t _misses = 0;
};

}  // namespace sluice::shared
