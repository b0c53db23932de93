#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sluice::net {

// Lets an event that may repeat at any rate (a spent budget, a failing accept) be
// logged at most once per interval; the line that is logged says how many were not.
// Thread-safe.
class log_throttle {
  public:
    using clock = std::chrono::steady_clock;
    explicit log_throttle(std::chrono::milliseconds interval) : _interval(interval) {}

    // Whether to log this occurrence; `suppressed` receives how many occurrences since
    // the last logged one were not.
    bool allow(uint64_t& suppressed) {
        std::lock_guard lk(_mu);
        const auto now = clock::now();
        if (_logged_once && now - _last < _interval) {
            ++_suppressed;
            return false;
        }
        _logged_once = true;
        _last = now;
        suppressed = _suppressed;
        _suppressed = 0;
        return true;
    }

  private:
    std::mutex _mu;
    std::chrono::milliseconds _interval;
    clock::time_point _last{};
    bool _logged_once = false;
    uint64_t _suppressed = 0;
};

// log_throttle per key (a topic, a client): at most one line per key and interval. The
// keys remembered are bounded, since a client can send any number of distinct names:
// when `max_keys` are remembered, those not logged within the interval are forgotten,
// and while every remembered key is recent, the keys not remembered share one line per
// interval. Thread-safe.
class keyed_log_throttle {
  public:
    using clock = std::chrono::steady_clock;
    keyed_log_throttle(std::chrono::milliseconds interval, size_t max_keys)
        : _interval(interval), _max_keys(max_keys), _overflow(interval) {}

    bool allow(std::string_view key) { return allow(key, clock::now()); }
    // With the time given (tests).
    bool allow(std::string_view key, clock::time_point now) {
        std::lock_guard lk(_mu);
        if (auto it = _last.find(std::string(key)); it != _last.end()) {
            if (now - it->second < _interval) return false;
            it->second = now;
            return true;
        }
        if (_last.size() >= _max_keys && now >= _next_purge) purge(now);
        if (_last.size() >= _max_keys) {
            uint64_t ignored = 0;
            return _overflow.allow(ignored);
        }
        _last.emplace(key, now);
        return true;
    }
    size_t remembered() const {
        std::lock_guard lk(_mu);
        return _last.size();
    }

  private:
    // Forgets the keys past their interval; the next purge is due when the oldest key
    // left passes its own, so a full table of recent keys is not scanned on every call.
    void purge(clock::time_point now) {
        clock::time_point oldest = now;
        for (auto it = _last.begin(); it != _last.end();) {
            if (now - it->second >= _interval) {
                it = _last.erase(it);
            } else {
                oldest = std::min(oldest, it->second);
                ++it;
            }
        }
        _next_purge = oldest + _interval;
    }

    mutable std::mutex _mu;
    std::chrono::milliseconds _interval;
    size_t _max_keys;
    std::unordered_map<std::string, clock::time_point> _last;
    clock::time_point _next_purge{};
    log_throttle _overflow;
};

}  // namespace sluice::net
