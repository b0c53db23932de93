#include "broker/fetch_session.h"

#include <cstring>

#include "common/logging.h"

namespace sluice::broker {

size_t fetch_partition_key_hash::operator()(const fetch_partition_key& k) const {
    uint64_t id_bits = 0;
    std::memcpy(&id_bits, k.topic_id.data(), sizeof id_bits);
    size_t h = std::hash<std::string>{}(k.topic) ^ std::hash<uint64_t>{}(id_bits);
    return h * 31 + std::hash<int32_t>{}(k.partition);
}

cached_partition* fetch_session::find(const fetch_partition_key& k) {
    auto it = _index.find(k);
    return it == _index.end() ? nullptr : &*it->second;
}

std::pair<cached_partition*, bool> fetch_session::upsert(
    const fetch_partition_key& k, const protocol::fetch_request::partition& p) {
    if (auto* c = find(k)) {
        c->request = p;
        return {c, false};
    }
    _partitions.push_back(cached_partition{k, p});
    _index.emplace(k, std::prev(_partitions.end()));
    return {&_partitions.back(), true};
}

bool fetch_session::forget(const fetch_partition_key& k) {
    auto it = _index.find(k);
    if (it == _index.end()) return false;
    _partitions.erase(it->second);
    _index.erase(it);
    return true;
}

void fetch_session::move_to_back(cached_partition* p) {
    auto it = _index.find(p->key);
    if (it != _index.end()) _partitions.splice(_partitions.end(), _partitions, it->second);
}

fetch_session_cache::fetch_session_cache(size_t max_slots, int64_t min_eviction_ms) :
    _max_slots(max_slots), _min_eviction_ms(min_eviction_ms), _rng(std::random_device{}()) {}

int32_t fetch_session_cache::new_id() {
    // Positive and unique on this broker, and random so that an id from before a
    // restart is unlikely to name another client's session.
    std::uniform_int_distribution<int32_t> dist(1, INT32_MAX - 1);
    int32_t id = 0;
    do id = dist(_rng);
    while (_sessions.contains(id));
    return id;
}

std::shared_ptr<fetch_session> fetch_session_cache::create(int64_t now_ms, bool by_id,
                                                           std::vector<cached_partition> parts) {
    if (_max_slots == 0) return nullptr;
    if (_sessions.size() >= _max_slots && !try_evict(parts.size(), now_ms)) {
        log_debug("fetch", "no fetch session for {} partitions: the cache is full", parts.size());
        return nullptr;
    }
    auto s = std::make_shared<fetch_session>(new_id(), by_id, now_ms);
    for (auto& p : parts) *s->upsert(p.key, p.request).first = std::move(p);
    _sessions.emplace(s->id(), s);
    touch(*s, now_ms);
    return s;
}

std::shared_ptr<fetch_session> fetch_session_cache::get(int32_t id) const {
    auto it = _sessions.find(id);
    return it == _sessions.end() ? nullptr : it->second;
}

bool fetch_session_cache::remove(int32_t id) {
    auto it = _sessions.find(id);
    if (it == _sessions.end()) return false;
    remove(*it->second);
    return true;
}

void fetch_session_cache::remove(fetch_session& s) {
    _by_last_use.erase({s._last_used_ms, s._id});
    if (s._evictable) _evictable.erase({s._cached_size, s._id});
    _total_partitions -= s._cached_size;
    const int32_t id = s._id;
    _sessions.erase(id);  // last: it may hold the last reference to s
}

void fetch_session_cache::touch(fetch_session& s, int64_t now_ms) {
    _by_last_use.erase({s._last_used_ms, s._id});
    s._last_used_ms = now_ms;
    _by_last_use.emplace(now_ms, s._id);
    if (s._evictable) _evictable.erase({s._cached_size, s._id});
    _total_partitions = _total_partitions - s._cached_size + s.size();
    s._cached_size = s.size();
    // A session only becomes a candidate for eviction by size once it is older than
    // the minimum eviction time, so that a new session cannot push out one just made.
    s._evictable = now_ms - s._created_ms > _min_eviction_ms;
    if (s._evictable) _evictable.emplace(s._cached_size, s._id);
}

bool fetch_session_cache::try_evict(size_t new_size, int64_t now_ms) {
    if (_by_last_use.empty()) return false;
    auto [last_used, lru_id] = *_by_last_use.begin();
    if (now_ms - last_used > _min_eviction_ms) {
        log_debug("fetch", "evicting fetch session {}: unused for {} ms", lru_id,
                  now_ms - last_used);
        remove(*_sessions.at(lru_id));
        ++_evictions;
        return true;
    }
    if (_evictable.empty()) return false;
    auto [size, id] = *_evictable.begin();
    // Kafka orders (size, id) and the new session has id 0: it wins only with more
    // partitions.
    if (new_size <= size) return false;
    log_debug("fetch", "evicting fetch session {} of {} partitions for one of {}", id, size,
              new_size);
    remove(*_sessions.at(id));
    ++_evictions;
    return true;
}

}  // namespace sluice::broker
