#pragma once

// A bytes-per-second budget for background I/O (the cleaner), so that it leaves the
// disk to producers and consumers. consume() sleeps the calling thread long enough to
// keep the average since construction at or below the budget, waking early when
// `cancel` (if given) becomes non-zero, so that shutdown and topic deletion never wait
// for a throttled pass. Not thread-safe: one per pass.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace sluice::log {

class io_throttle {
  public:
    // bytes_per_sec <= 0: no limit.
    explicit io_throttle(int64_t bytes_per_sec, const std::atomic<int>* cancel = nullptr)
        : _rate(bytes_per_sec), _cancel(cancel), _start(std::chrono::steady_clock::now()) {}

    void consume(int64_t bytes) {
        _bytes += bytes;
        if (_rate <= 0) return;
        const auto due = _start + std::chrono::microseconds(_bytes * 1'000'000 / _rate);
        // Sleeps in slices short enough that a cancel is seen within 50 ms.
        constexpr auto slice = std::chrono::milliseconds(50);
        for (auto now = std::chrono::steady_clock::now(); due > now && !cancelled();
             now = std::chrono::steady_clock::now()) {
            const auto until = std::min(due, now + slice);
            _slept += until - now;
            std::this_thread::sleep_until(until);
        }
    }
    bool cancelled() const { return _cancel && _cancel->load(std::memory_order_relaxed) > 0; }
    std::chrono::steady_clock::duration slept() const { return _slept; }

  private:
    int64_t _rate;
    const std::atomic<int>* _cancel;
    int64_t _bytes = 0;
    std::chrono::steady_clock::time_point _start;
    std::chrono::steady_clock::duration _slept{};
};

}  // namespace sluice::log
