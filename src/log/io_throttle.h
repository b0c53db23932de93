#pragma once

// A bytes-per-second budget for background I/O (the cleaner), so that it leaves the
// disk to producers and consumers. consume() sleeps the calling thread long enough to
// keep the average since construction at or below the budget. Not thread-safe: one per
// pass.

#include <chrono>
#include <cstdint>
#include <thread>

namespace sluice::log {

class io_throttle {
  public:
    // bytes_per_sec <= 0: no limit.
    explicit io_throttle(int64_t bytes_per_sec)
        : _rate(bytes_per_sec), _start(std::chrono::steady_clock::now()) {}

    void consume(int64_t bytes) {
        _bytes += bytes;
        if (_rate <= 0) return;
        const auto due = _start + std::chrono::microseconds(_bytes * 1'000'000 / _rate);
        const auto now = std::chrono::steady_clock::now();
        if (due > now) {
            _slept += due - now;
            std::this_thread::sleep_until(due);
        }
    }
    std::chrono::steady_clock::duration slept() const { return _slept; }

  private:
    int64_t _rate;
    int64_t _bytes = 0;
    std::chrono::steady_clock::time_point _start;
    std::chrono::steady_clock::duration _slept{};
};

}  // namespace sluice::log
