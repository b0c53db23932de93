#include "log/fd_cache.h"

namespace sluice::log {

uint64_t fd_cache::new_id() {
    std::lock_guard lk(_mu);
    return _next_id++;
}

result<std::shared_ptr<file>> fd_cache::get(uint64_t id, const std::function<fs::path()>& path,
                                            int flags, bool* fresh) {
    std::lock_guard lk(_mu);
    if (auto it = _by_id.find(id); it != _by_id.end()) {
        _lru.splice(_lru.begin(), _lru, it->second);
        if (fresh) *fresh = false;
        return it->second->second;
    }
    auto f = open_file(path(), flags);
    if (!f) return f.err();
    ++_opens;
    while (_lru.size() >= _max_open) {
        _by_id.erase(_lru.back().first);
        _lru.pop_back();
    }
    _lru.emplace_front(id, *f);
    _by_id[id] = _lru.begin();
    if (fresh) *fresh = true;
    return *f;
}

void fd_cache::forget(uint64_t id) {
    std::lock_guard lk(_mu);
    if (auto it = _by_id.find(id); it != _by_id.end()) {
        _lru.erase(it->second);
        _by_id.erase(it);
    }
}

void fd_cache::clear() {
    std::lock_guard lk(_mu);
    _by_id.clear();
    _lru.clear();
}

size_t fd_cache::cached() const {
    std::lock_guard lk(_mu);
    return _lru.size();
}

uint64_t fd_cache::opens() const {
    std::lock_guard lk(_mu);
    return _opens;
}

}  // namespace sluice::log
