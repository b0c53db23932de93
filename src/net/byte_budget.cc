#include "net/byte_budget.h"

#include <algorithm>
#include <utility>

namespace sluice::net {

bool byte_budget::try_acquire(size_t n) {
    if (!_waiters.empty() || n > _capacity - _used) return false;
    _used += n;
    return true;
}

bool byte_budget::try_acquire_small(size_t n) {
    if (n > _capacity - _used) return false;
    _used += n;
    return true;
}

bool byte_budget::try_hold_waiting(size_t n) {
    if (n > _capacity - _held_waiting) return false;
    _held_waiting += n;
    return true;
}

void byte_budget::release_waiting(size_t n) {
    _held_waiting -= std::min(n, _held_waiting);
}

byte_budget::waiter_id byte_budget::wait(size_t n, std::function<void()> granted) {
    const waiter_id id = _next_id++;
    _waiters.push_back({id, n, std::move(granted)});
    return id;
}

bool byte_budget::cancel(waiter_id id) {
    auto it = std::find_if(_waiters.begin(), _waiters.end(),
                           [id](const waiter& w) { return w.id == id; });
    if (it == _waiters.end()) return false;
    const bool was_head = it == _waiters.begin();
    _waiters.erase(it);
    // The head may have held back smaller waiters behind it.
    if (was_head) grant_waiters();
    return true;
}

void byte_budget::release(size_t n) {
    _used -= std::min(n, _used);
    grant_waiters();
}

void byte_budget::grant_waiters() {
    if (_granting) return;
    _granting = true;
    while (!_waiters.empty() && _waiters.front().bytes <= _capacity - _used) {
        auto w = std::move(_waiters.front());
        _waiters.pop_front();
        _used += w.bytes;
        // It may release or wait again; the loop then sees the new state.
        if (w.granted) w.granted();
    }
    _granting = false;
}

}  // namespace sluice::net
