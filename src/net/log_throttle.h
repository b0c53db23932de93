#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

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

}  // namespace sluice::net
