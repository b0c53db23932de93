#include "shared/object_cache.h"

#include <utility>

namespace sluice::shared {

result<void> object_cache::read(std::string_view key, uint64_t offset, uint64_t length,
                                std::string& out) {
    const std::string k(key);
    {
        std::lock_guard lk(_mu);
        if (auto obj = _objects.find(k); obj != _objects.end()) {
            auto it = obj->second.upper_bound(offset);
            if (it != obj->second.begin()) {
                --it;
                const auto& data = *it->second.data;
                if (offset + length <= it->first + data.size()) {
                    _lru.splice(_lru.begin(), _lru, it->second.lru);
                    ++_hits;
                    out.append(data, offset - it->first, length);
                    return {};
                }
            }
        }
        ++_misses;
    }
    // Outside the lock: two readers missing the same range both fetch it (rare, harmless).
    auto got = _store.get(key, byte_range{offset, length});
    if (!got) return got.err();
    if (got->size() != length) {
        return error{errc::corrupt, "object " + k + " holds " + std::to_string(got->size()) +
                                        " bytes at " + std::to_string(offset) + ", not " +
                                        std::to_string(length)};
    }
    out.append(*got);
    auto data = std::make_shared<const std::string>(std::move(*got));
    std::lock_guard lk(_mu);
    insert_locked(k, offset, std::move(data));
    return {};
}

void object_cache::put(std::string_view key, uint64_t offset,
                       std::shared_ptr<const std::string> data) {
    std::lock_guard lk(_mu);
    insert_locked(std::string(key), offset, std::move(data));
}

void object_cache::insert_locked(const std::string& key, uint64_t offset,
                                 std::shared_ptr<const std::string> data) {
    if (data->size() > _budget) return;
    auto& ranges = _objects[key];
    if (ranges.contains(offset)) return;
    _lru.emplace_front(key, offset);
    _bytes += data->size();
    ++_count;
    ranges.emplace(offset, entry{std::move(data), _lru.begin()});
    while (_bytes > _budget && !_lru.empty()) {
        auto& [okey, ooff] = _lru.back();
        auto obj = _objects.find(okey);
        auto it = obj->second.find(ooff);
        _bytes -= it->second.data->size();
        --_count;
        obj->second.erase(it);
        if (obj->second.empty()) _objects.erase(obj);
        _lru.pop_back();
    }
}

object_cache::stats object_cache::counters() const {
    std::lock_guard lk(_mu);
    return {_hits, _misses, _bytes, _count};
}

}  // namespace sluice::shared
