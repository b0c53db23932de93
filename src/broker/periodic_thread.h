#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace sluice::broker {

// Runs fn on its own thread every `every` until destroyed (background work that does file
// I/O and must not run on the event loop, such as log retention).
class periodic_thread {
  public:
    periodic_thread(std::chrono::milliseconds every, std::function<void()> fn)
        : _every(every), _fn(std::move(fn)), _thread([this] { run(); }) {}
    ~periodic_thread() {
        {
            std::lock_guard lock(_mu);
            _stop = true;
        }
        _cv.notify_one();
        _thread.join();
    }
    periodic_thread(const periodic_thread&) = delete;
    periodic_thread& operator=(const periodic_thread&) = delete;

  private:
    void run() {
        std::unique_lock lock(_mu);
        while (!_cv.wait_for(lock, _every, [this] { return _stop; })) {
            lock.unlock();
            _fn();
            lock.lock();
        }
    }

    std::chrono::milliseconds _every;
    std::function<void()> _fn;
    std::mutex _mu;
    std::condition_variable _cv;
    bool _stop = false;   // guarded by _mu
    std::thread _thread;  // last: starts after the members it uses
};

}  // namespace sluice::broker
