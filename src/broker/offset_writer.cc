#include "broker/offset_writer.h"

#include "common/logging.h"

namespace sluice::broker {

offset_writer::offset_writer(std::unique_ptr<catalog::offset_store> store, net::event_loop& loop)
    : _store(std::move(store)), _loop(loop), _thread([this] { run(); }) {}

offset_writer::~offset_writer() {
    {
        std::lock_guard lock(_mu);
        _stop = true;
    }
    _cv.notify_one();
    _thread.join();
}

void offset_writer::submit(std::vector<catalog::offset_write> writes, done_fn done) {
    {
        std::lock_guard lock(_mu);
        _queue.push_back({std::move(writes), std::move(done)});
    }
    _cv.notify_one();
}

void offset_writer::run() {
    for (;;) {
        std::deque<job> batch;
        {
            std::unique_lock lock(_mu);
            _cv.wait(lock, [this] { return _stop || !_queue.empty(); });
            if (_queue.empty()) return;  // stopping, and nothing left
            batch.swap(_queue);
        }
        std::vector<catalog::offset_write> all;
        for (auto& j : batch)
            all.insert(all.end(), std::make_move_iterator(j.writes.begin()),
                       std::make_move_iterator(j.writes.end()));
        result<void> r = _store->apply(all);
        if (!r) log_error("group", "storing {} committed offsets: {}", all.size(), r.err().message);
        _loop.post([batch = std::move(batch), r]() mutable {
            for (auto& j : batch) j.done(r);
        });
    }
}

}  // namespace sluice::broker
