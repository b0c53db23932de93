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
                    _hit_bytes += length;
                    out.append(data, offset - it->first, length);
                    return {};
                }
            }
        }
        ++_misses;
    }
    // Outside the lock: two readers missing the same range both fetch it (rare, harmless).
    if (_disk) {
        if (auto found = _disk->find(key, offset, length)) {
            out.append(*found->data, offset - found->offset, length);
            std::lock_guard lk(_mu);
            insert_locked(k, found->offset, std::move(found->data));
            return {};
        }
    }
    auto got = _store.get(key, byte_range{offset, length});
    if (!got) return got.err();
    if (got->size() != length) {
        return error{errc::corrupt, "object " + k + " holds " + std::to_string(got->size()) +
                                        " bytes at " + std::to_string(offset) + ", not " +
                                        std::to_string(length)};
    }
    out.append(*got);
    auto data = std::make_shared<const std::string>(std::move(*got));
    if (_disk) _disk->add(k, offset, data);
    std::lock_guard lk(_mu);
    insert_locked(k, offset, std::move(data));
    return {};
}

void object_cache::put(std::string_view key, uint64_t offset,
                       std::shared_ptr<const std::string> data) {
    if (_disk) _disk->add(key, offset, data);
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
    return {_hits, _misses, _hit_bytes, _bytes, _count};
}

void object_cache::write_metrics(metrics::text_writer& w) const {
    using metrics::label;
    using metrics::metric_type;
    const auto m = counters();
    disk_cache::stats d;
    if (_disk) d = _disk->counters();
    // One series per tier; the disk's only when there is a disk tier.
    auto tiers = [&](std::string_view name, std::string_view help, metric_type type,
                     uint64_t memory, uint64_t disk) {
        w.family(name, help, type);
        label lm[] = {{"tier", "memory"}};
        w.sample(name, lm, memory);
        if (!_disk) return;
        label ld[] = {{"tier", "disk"}};
        w.sample(name, ld, disk);
    };
    tiers("sluice_object_cache_hits_total",
          "Shared mode: reads of object ranges the cache tier held", metric_type::counter, m.hits,
          d.hits);
    tiers("sluice_object_cache_misses_total",
          "Shared mode: reads of object ranges the cache tier did not hold (the disk tier's "
          "misses are the reads sent to the object store)",
          metric_type::counter, m.misses, d.misses);
    tiers("sluice_object_cache_hit_bytes_total",
          "Shared mode: bytes the cache tier served (the disk tier: bytes of the entries read)",
          metric_type::counter, m.hit_bytes, d.hit_bytes);
    tiers("sluice_object_cache_bytes",
          "Shared mode: bytes the cache tier holds (the disk tier: of its files)",
          metric_type::gauge, m.bytes, d.bytes);
    tiers("sluice_object_cache_entries", "Shared mode: object ranges the cache tier holds",
          metric_type::gauge, m.entries, d.entries);
    if (!_disk) return;
    w.family("sluice_object_cache_disk_writes_total",
             "Shared mode: object ranges offered to the disk tier, by outcome: ok (written), "
             "failed (a full disk, the directory unusable: logged once), dropped (too many "
             "bytes waited to be written)",
             metric_type::counter);
    const std::pair<std::string_view, uint64_t> writes[] = {
        {"ok", d.writes}, {"failed", d.write_failures}, {"dropped", d.writes_dropped}};
    for (const auto& [outcome, n] : writes) {
        label l[] = {{"outcome", outcome}};
        w.sample("sluice_object_cache_disk_writes_total", l, n);
    }
    w.family("sluice_object_cache_disk_corrupt_total",
             "Shared mode: disk-tier entries dropped at a read because they were cut short or "
             "damaged (CRC mismatch); the range was read from the object store",
             metric_type::counter);
    w.sample("sluice_object_cache_disk_corrupt_total", {}, d.corrupt);
}

}  // namespace sluice::shared
