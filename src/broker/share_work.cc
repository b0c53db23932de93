#include "broker/share_work.h"

#include "net/event_loop.h"
#include "shared/shared_log.h"

namespace sluice::broker {

void share_work_queue::run(const std::string& group, const std::string& member,
                           std::function<void()> job, std::function<void()> done) {
    if (!_log) {
        job();
        if (done) done();
        return;
    }
    const key k{group, member};
    auto& q = _sessions[k];
    q.push_back({std::move(job), std::move(done)});
    if (q.size() == 1) start(k);
}

void share_work_queue::start(const key& k) {
    auto job = std::move(_sessions.at(k).front().job);
    _log->run_read([this, &loop = _loop, k, job = std::move(job)]() mutable {
        job();
        job = nullptr;  // what it holds goes here, before the loop goes on
        loop.post([this, k] { finish(k); });
    });
}

void share_work_queue::finish(const key& k) {
    auto it = _sessions.find(k);
    if (it == _sessions.end()) return;
    auto done = std::move(it->second.front().done);
    it->second.pop_front();
    if (it->second.empty())
        _sessions.erase(it);
    else
        start(k);
    if (done) done();
}

}  // namespace sluice::broker
