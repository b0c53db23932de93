#include "net/in_flight_bound.h"

#include <algorithm>
#include <utility>

namespace sluice::net {

in_flight_bound::account::account(std::shared_ptr<in_flight_bound> bound,
                                  std::function<void()> room)
    : _bound(std::move(bound)), _room(std::move(room)) {}

in_flight_bound::account::~account() {
    if (_place != 0) _bound->_line.erase(_place);
    _place = 0;
    release(_held);
}

void in_flight_bound::account::add(size_t n) {
    if (n == 0) return;
    auto& b = *_bound;
    if (_held == 0) ++b._holders;
    _held += n;
    b._used += n;
    b._peak = std::max(b._peak, b._used);
    if (b._changed) b._changed(b);
}

void in_flight_bound::account::release(size_t n) {
    n = std::min(n, _held);
    if (n == 0) return;
    auto& b = *_bound;
    _held -= n;
    b._used -= n;
    if (b._changed) b._changed(b);
    if (_held == 0) {
        --b._holders;
        // Invariant: the accounts in line hold something (one holding nothing may read),
        // so that wake() can stop at the capacity.
        if (_place != 0) {
            b._line.erase(_place);
            _place = 0;
            if (_room) _room();
        }
    }
    b.wake();
}

bool in_flight_bound::account::may_read() {
    auto& b = *_bound;
    if (b.allows(*this)) {
        if (_place != 0) b._line.erase(_place);  // asked again before its turn came
        _place = 0;
        return true;
    }
    if (_place == 0) {
        _place = b._next_place++;
        b._line.emplace(_place, this);
        ++b._stops;
    }
    return false;
}

bool in_flight_bound::allows(const account& a) const {
    if (a._held == 0) return true;
    if (_used >= _capacity) return false;
    if (_used < _capacity / 2) return true;
    return a._held < fair_share();
}

void in_flight_bound::wake() {
    if (_waking) {
        _wake_again = true;
        return;
    }
    _waking = true;
    do {
        _wake_again = false;
        // By key, not by iterator: a `room` may put accounts in line or destroy them. At
        // the capacity none in line may read (each holds something).
        uint64_t after = 0;
        for (auto it = _line.upper_bound(after); it != _line.end() && _used < _capacity;
             it = _line.upper_bound(after)) {
            after = it->first;
            account* a = it->second;
            if (!allows(*a)) continue;
            _line.erase(it);
            a->_place = 0;
            if (a->_room) a->_room();
        }
    } while (_wake_again);
    _waking = false;
}

}  // namespace sluice::net
