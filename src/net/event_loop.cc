#include "net/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "common/logging.h"

namespace sluice::net {

event_loop::event_loop() {
    _epfd = epoll_create1(EPOLL_CLOEXEC);
    _wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (_epfd < 0 || _wakefd < 0) throw std::runtime_error("cannot create epoll/eventfd");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;  // nullptr marks the wake-up descriptor
    epoll_ctl(_epfd, EPOLL_CTL_ADD, _wakefd, &ev);
}

event_loop::~event_loop() {
    if (_epfd >= 0) close(_epfd);
    if (_wakefd >= 0) close(_wakefd);
}

void event_loop::stop() {
    post([this] { _running = false; });
}

void event_loop::post(std::function<void()> fn) {
    bool wake = false;
    {
        std::lock_guard lk(_mu);
        // A non-empty queue has had its wake-up written and not yet run: one write
        // serves a whole batch (the flusher posts one task per request it completes).
        wake = _posted.empty();
        _posted.push_back(std::move(fn));
    }
    if (!wake) return;
    uint64_t one = 1;
    [[maybe_unused]] auto n = write(_wakefd, &one, sizeof one);
}

void event_loop::defer_flush(std::shared_ptr<io_handler> h) {
    _flushes.push_back(std::move(h));
}

void event_loop::run_flushes() {
    // A flush that asks for another (one handler's flush sending on another) is run too,
    // so that none waits for the next wake-up.
    while (!_flushes.empty()) {
        auto batch = std::exchange(_flushes, {});
        for (auto& h : batch) h->on_flush();
    }
}

event_loop::timer_id event_loop::add_timer(std::chrono::milliseconds delay,
                                           std::function<void()> fn) {
    timer_id id = _next_timer++;
    _timers.push({clock::now() + delay, id});
    _timer_fns.emplace(id, std::move(fn));
    return id;
}

void event_loop::cancel_timer(timer_id id) { _timer_fns.erase(id); }

void event_loop::watch(int fd, uint32_t events, io_handler* h) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = h;
    if (epoll_ctl(_epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        log_error("net", "epoll add fd {}: {}", fd, std::strerror(errno));
}

void event_loop::modify(int fd, uint32_t events, io_handler* h) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = h;
    epoll_ctl(_epfd, EPOLL_CTL_MOD, fd, &ev);
}

void event_loop::unwatch(int fd) { epoll_ctl(_epfd, EPOLL_CTL_DEL, fd, nullptr); }

int event_loop::next_timeout_ms() {
    while (!_timers.empty() && !_timer_fns.contains(_timers.top().id)) _timers.pop();
    if (_timers.empty()) return -1;  // an idle loop sleeps until an event arrives
    auto left = std::chrono::ceil<std::chrono::milliseconds>(_timers.top().due - clock::now());
    return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

void event_loop::run_timers() {
    auto now = clock::now();
    while (!_timers.empty() && _timers.top().due <= now) {
        timer_id id = _timers.top().id;
        _timers.pop();
        auto it = _timer_fns.find(id);
        if (it == _timer_fns.end()) continue;
        auto fn = std::move(it->second);
        _timer_fns.erase(it);
        fn();
    }
}

void event_loop::run_posted() {
    std::vector<std::function<void()>> batch;
    {
        std::lock_guard lk(_mu);
        batch.swap(_posted);
    }
    for (auto& fn : batch) fn();
}

void event_loop::run() {
    _running = true;
    constexpr int max_events = 128;
    epoll_event events[max_events];
    while (_running) {
        int n = epoll_wait(_epfd, events, max_events, next_timeout_ms());
        if (n < 0 && errno != EINTR) {
            log_error("net", "epoll_wait: {}", std::strerror(errno));
            break;
        }
        for (int i = 0; i < n; ++i) {
            if (events[i].data.ptr == nullptr) {
                uint64_t v;
                [[maybe_unused]] auto r = read(_wakefd, &v, sizeof v);
                continue;
            }
            static_cast<io_handler*>(events[i].data.ptr)->on_io(events[i].events);
        }
        run_posted();
        run_timers();
        run_flushes();
    }
}

}  // namespace sluice::net
