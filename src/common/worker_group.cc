#include "common/worker_group.h"

namespace sluice {

worker_group::worker_group(size_t threads) {
    _threads.reserve(threads);
    for (size_t i = 0; i < threads; ++i) _threads.emplace_back([this] { work(); });
}

worker_group::~worker_group() {
    {
        std::lock_guard lk(_mu);
        _stop = true;
    }
    _start.notify_all();
    for (auto& t : _threads) t.join();
}

void worker_group::take_items() {
    for (size_t i = _next.fetch_add(1); i < _n; i = _next.fetch_add(1)) (*_fn)(i);
}

void worker_group::work() {
    uint64_t seen = 0;
    std::unique_lock lk(_mu);
    for (;;) {
        _start.wait(lk, [&] { return _stop || _generation != seen; });
        if (_stop) return;
        seen = _generation;
        lk.unlock();
        take_items();
        lk.lock();
        // The caller waits for every worker, so none can still be inside this run's
        // items (or read its _fn) once the next run starts.
        if (++_finished == _threads.size()) _done.notify_one();
    }
}

void worker_group::run(size_t n, const std::function<void(size_t)>& fn) {
    if (n == 0) return;
    if (n == 1 || _threads.empty()) {
        for (size_t i = 0; i < n; ++i) fn(i);
        return;
    }
    {
        std::lock_guard lk(_mu);
        _fn = &fn;
        _n = n;
        _next.store(0);
        _finished = 0;
        ++_generation;
    }
    _start.notify_all();
    take_items();
    std::unique_lock lk(_mu);
    _done.wait(lk, [&] { return _finished == _threads.size(); });
    _fn = nullptr;
}

}  // namespace sluice
