#include "broker/offset_writer.h"

#include <fmt/format.h>

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
    std::set<std::string> groups;
    for (const auto& w : writes)
        if (w.by_coordinator) groups.insert(w.row.group_id);
    enqueue({std::move(writes), {}, std::move(done), std::move(groups)});
}

void offset_writer::write(group::group_write w, done_fn done) {
    std::set<std::string> groups{w.group_id()};
    std::vector<group::group_write> ws;
    ws.push_back(std::move(w));
    enqueue({{}, std::move(ws), std::move(done), std::move(groups)});
}

void offset_writer::enqueue(job j) {
    {
        std::lock_guard lock(_mu);
        _queue.push_back(std::move(j));
    }
    _cv.notify_one();
}

// The first group of the job whose writes were refused, if any (a transaction
// coordinator's offsets are never refused).
std::optional<std::string> offset_writer::fenced_group(const job& j,
                                                       const std::set<std::string>& fenced) {
    for (const auto& g : j.coordinated)
        if (fenced.count(g)) return g;
    return std::nullopt;
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
        std::set<std::string> fenced;
        auto outcome = [&](auto stored, size_t n, const char* what) -> result<void> {
            if (!stored) {
                log_error("group", "storing {} {}: {}", n, what, stored.err().message);
                return stored.err();
            }
            fenced.insert(stored->begin(), stored->end());
            return {};
        };
        result<void> r = outcome(_store->apply(all), all.size(), "committed offsets");
        result<void> rg = outcome(_groups->apply(groups), groups.size(), "group state changes");
        if (!fenced.empty())
            log_warn("group", "writes of {} groups refused: another broker coordinates them now",
                     fenced.size());
        _loop.post([this, batch = std::move(batch), r, rg, fenced = std::move(fenced)]() mutable {
            if (!fenced.empty() && _on_fenced) _on_fenced(fenced);
            for (auto& j : batch) {
                result<void> out = j.group_writes.empty() ? r : rg;
                if (auto g = fenced_group(j, fenced); out && g)
                    out = error{errc::fenced,
                                fmt::format("group '{}' is coordinated by another broker now", *g)};
                j.done(out);
            }
        });
    }
}

}  // namespace sluice::broker
