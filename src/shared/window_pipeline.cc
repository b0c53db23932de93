#include "shared/window_pipeline.h"

#include <algorithm>

#include <fmt/format.h>

namespace sluice::shared {

window_pipeline::window_pipeline(size_t max_in_flight, stages s)
    : _max_in_flight(std::max<size_t>(max_in_flight, 1)), _stages(std::move(s)) {
    for (size_t i = 0; i < _max_in_flight; ++i) _uploaders.emplace_back([this] { run_uploader(); });
    _committer = std::thread([this] { run_committer(); });
}

window_pipeline::~window_pipeline() {
    {
        std::lock_guard lk(_mu);
        _stopping = true;
    }
    _cv.notify_all();
    for (auto& t : _uploaders) t.join();
    _committer.join();
}

uint64_t window_pipeline::stamp() {
    std::lock_guard lk(_mu);
    return ++_arrivals;
}

void window_pipeline::wait_for_room() {
    std::unique_lock lk(_mu);
    _cv.wait(lk, [this] { return _slots.size() < _max_in_flight; });
}

void window_pipeline::submit(std::unique_ptr<window> w) {
    {
        std::lock_guard lk(_mu);
        w->seq = _next_seq++;
        w->cancelled.assign(w->entries.size(), std::nullopt);
        _slots.push_back({std::move(w)});
    }
    _cv.notify_all();
}

size_t window_pipeline::in_flight() const {
    std::lock_guard lk(_mu);
    return _slots.size();
}

void window_pipeline::run_uploader() {
    std::unique_lock lk(_mu);
    for (;;) {
        auto it = _slots.end();
        _cv.wait(lk, [&] {
            it = std::find_if(_slots.begin(), _slots.end(),
                              [](const slot& s) { return s.st == slot::state::queued; });
            return it != _slots.end() || _stopping;
        });
        if (it == _slots.end()) return;  // stopping, nothing left to upload
        it->st = slot::state::uploading;
        window* w = it->w.get();  // stays put: only the committer pops, after the upload
        lk.unlock();
        auto r = _stages.upload(*w);
        lk.lock();
        // The deque may have grown meanwhile: find the slot again.
        auto at = std::find_if(_slots.begin(), _slots.end(),
                               [&](const slot& s) { return s.w.get() == w; });
        at->st = slot::state::uploaded;
        if (!r) at->failure = r.err();
        _cv.notify_all();
    }
}

void window_pipeline::run_committer() {
    std::unique_lock lk(_mu);
    for (;;) {
        _cv.wait(lk, [&] {
            return (!_slots.empty() && _slots.front().st == slot::state::uploaded) ||
                   (_stopping && _slots.empty());
        });
        if (_slots.empty()) return;
        window& w = *_slots.front().w;
        std::optional<error> failure = _slots.front().failure;
        lk.unlock();
        cancel_dependents(w);
        if (!failure) {
            if (auto r = _stages.commit(w); !r) failure = r.err();
        }
        if (failure) {
            // Noted before the answers go: a producer's retry, sent after its answer,
            // arrives later than the failure and is not cancelled.
            note_failure(w, *failure);
            _stages.fail(w, *failure);
        }
        lk.lock();
        _slots.pop_front();
        _cv.notify_all();
    }
}

void window_pipeline::cancel_dependents(window& w) {
    if (_failed_before.empty()) return;
    // Windows commit in arrival order: failures noted before this window's first arrival
    // cancel nothing here or later.
    const uint64_t first = w.entries.empty() ? 0 : w.entries.front().arrival;
    std::erase_if(_failed_before, [&](const auto& f) { return f.second.before <= first; });
    for (size_t i = 0; i < w.entries.size(); ++i) {
        for (const auto& d : w.entries[i].depends_on) {
            auto it = _failed_before.find(d);
            if (it == _failed_before.end() || w.entries[i].arrival >= it->second.before) continue;
            w.cancelled[i] = error{
                errc::io_error,
                fmt::format("not written: produce window {} before it, with batches of the same "
                            "producer and partition, failed ({})",
                            it->second.window, it->second.message)};
            break;
        }
    }
}

void window_pipeline::note_failure(const window& w, const error& e) {
    uint64_t now;
    {
        std::lock_guard lk(_mu);
        now = _arrivals + 1;  // every entry stamped so far arrived before it
    }
    for (size_t i = 0; i < w.entries.size(); ++i) {
        if (w.cancelled[i]) continue;  // its dependents were cancelled with it already
        for (const auto& d : w.entries[i].depends_on) {
            auto& at = _failed_before[d];
            if (now > at.before) at = {now, w.seq, e.message};
        }
    }
}

}  // namespace sluice::shared
