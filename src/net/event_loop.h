#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <vector>

namespace sluice::net {

// Receives readiness events for one file descriptor.
class io_handler {
public:
    virtual ~io_handler() = default;
    virtual void on_io(uint32_t events) = 0;
    // Called once per defer_flush, at the end of the loop iteration that asked for it.
    virtual void on_flush() {}
};

// A single-threaded epoll reactor with timers and a thread-safe task queue. Everything
// registered with it runs on the thread that calls run().
class event_loop {
public:
    using clock = std::chrono::steady_clock;
    using timer_id = uint64_t;

    event_loop();
    ~event_loop();
    event_loop(const event_loop&) = delete;
    event_loop& operator=(const event_loop&) = delete;

    void run();
    // Thread-safe; run() returns after the current iteration.
    void stop();
    // Thread-safe: runs fn on the loop thread.
    void post(std::function<void()> fn);

    // Loop thread only: h->on_flush() runs after the events, posted tasks and timers of
    // this iteration, before the loop waits again. Writes queued during one iteration
    // thus leave in one system call: the responses a flush pass completes for one
    // connection, for instance.
    void defer_flush(std::shared_ptr<io_handler> h);

    timer_id add_timer(std::chrono::milliseconds delay, std::function<void()> fn);
    void cancel_timer(timer_id id);

    void watch(int fd, uint32_t events, io_handler* h);
    void modify(int fd, uint32_t events, io_handler* h);
    void unwatch(int fd);

private:
    struct timer {
        clock::time_point due{};
        timer_id id = 0;
        bool operator>(const timer& o) const { return due > o.due; }
    };

    int next_timeout_ms();
    void run_timers();
    void run_posted();
    void run_flushes();

    int _epfd = -1;
    int _wakefd = -1;
    bool _running = false;
    std::mutex _mu;
    std::vector<std::function<void()>> _posted;  // guarded by _mu
    std::vector<std::shared_ptr<io_handler>> _flushes;
    std::priority_queue<timer, std::vector<timer>, std::greater<>> _timers;
    std::unordered_map<timer_id, std::function<void()>> _timer_fns;
    timer_id _next_timer = 1;
};

}  // namespace sluice::net
