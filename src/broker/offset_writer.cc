#include "broker/offset_writer.h"

#include "common/logging.h"

namespace sluice::broker {

offset_writer::offset_writer(std::unique_ptr<catalog::offset_store> store,
                             std::unique_ptr<group::state_store> groups, net::event_loop& loop)
    : _store(std::move(store)), _groups(std::move(groups)), _loop(loop), _thread([this] { run(); }) {}

offset_writer::~offset_writer() {
    {
        std::lock_guard lock(_mu);
        _stop = true;
    }
    _cv.notify_one();
    _thread.join();
}

void offset_writer::submit(std::vector<catalog::offset_write> writes, done_fn done) {
    enqueue({std::move(writes), {}, std::move(done)});
}

void offset_writer::write(group::group_write w, done_fn done) {
    std::vector<group::group_write> ws;
    ws.push_back(std::move(w));
    enqueue({{}, std::move(ws), std::move(done)});
}

void offset_writer::enqueue(job j) {
    {
        std::lock_guard lock(_mu);
        _queue.push_back(std::move(j));
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
        std::vector<group::group_write> groups;
        for (auto& j : batch) {
            all.insert(all.end(), std::make_move_iterator(j.writes.begin()),
                       std::make_move_iterator(j.writes.end()));
            groups.insert(groups.end(), std::make_move_iterator(j.group_writes.begin()),
                          std::make_move_iterator(j.group_writes.end()));
        }
        // The two stores are independent: an offset commit never waits for group state
        // nor the other way round, so each job learns its own store's outcome.
        result<void> r = _store->apply(all);
        if (!r) log_error("group", "storing {} committed offsets: {}", all.size(), r.err().message);
        result<void> rg = _groups->apply(groups);
        if (!rg)
            log_error("group", "storing {} group state changes: {}", groups.size(),
                      rg.err().message);
        _loop.post([batch = std::move(batch), r, rg]() mutable {
            for (auto& j : batch) j.done(j.group_writes.empty() ? r : rg);
        });
    }
}

}  // namespace sluice::broker
