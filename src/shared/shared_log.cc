#include "shared/shared_log.h"

#include <algorithm>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "common/logging.h"
#include "protocol/record_batch.h"
#include "shared/batch_index.h"
#include "shared/pg_refresher.h"
#include "shared/window_metrics.h"

namespace sluice::shared {

namespace {

log::sequence_verdict to_log_verdict(batch_verdict v) {
    switch (v) {
        case batch_verdict::appended:
            return log::sequence_verdict::append;
        case batch_verdict::duplicate:
            return log::sequence_verdict::duplicate;
        case batch_verdict::out_of_order:
            return log::sequence_verdict::out_of_order;
        case batch_verdict::invalid_epoch:
            return log::sequence_verdict::invalid_epoch;
        case batch_verdict::unknown_producer:
            return log::sequence_verdict::unknown_producer;
    }
    return log::sequence_verdict::out_of_order;
}

// The reader thread's connection (shared_log::run_reader), null elsewhere.
thread_local pg_database* reader_connection = nullptr;

void raise_to(std::atomic<offset_t>& a, offset_t v) {
    offset_t cur = a.load(std::memory_order_relaxed);
    while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_acq_rel)) {
    }
}

}  // namespace

namespace {

std::unique_ptr<disk_cache> make_disk_tier(const shared_log_config& c) {
    if (c.disk_cache_dir.empty() || c.disk_cache_bytes == 0) return nullptr;
    disk_cache_config d;
    d.dir = c.disk_cache_dir;
    d.budget_bytes = c.disk_cache_bytes;
    return std::make_unique<disk_cache>(std::move(d));
}

}  // namespace

shared_log::shared_log(object_store& store, shared_log_config config)
    : _store(store),
      _config(std::move(config)),
      _disk(make_disk_tier(_config)),
      _cache(store, _config.cache_bytes, _disk.get()),
      _cache_metrics(metrics::global().add_collector(
          [this](metrics::text_writer& w) { _cache.write_metrics(w); })) {
    declare_window_metrics();
}

result<std::unique_ptr<shared_log>> shared_log::open(object_store& store, const pg_config& db,
                                                     shared_log_config config) {
    std::unique_ptr<shared_log> l(new shared_log(store, std::move(config)));
    auto commits = pg_database::connect(db);
    if (!commits) return commits.err();
    l->_commit_db = std::move(*commits);
    auto reads = pg_database::connect(db);
    if (!reads) return reads.err();
    l->_read_db = std::move(*reads);
    for (size_t i = 0; i < l->_config.reader_threads; ++i) {
        auto c = pg_database::connect(db);
        if (!c) return c.err();
        l->_reader_dbs.push_back(std::move(*c));
    }
    auto listener = pg_listener::connect(db, {commit_channel});
    if (!listener) return listener.err();
    l->_listener = std::move(*listener);
    auto* self = l.get();
    l->_pipeline = std::make_unique<window_pipeline>(
        l->_config.windows_in_flight,
        window_pipeline::stages{[self](window_pipeline::window& w) {
                                    return self->upload_window(static_cast<produce_window&>(w));
                                },
                                [self](window_pipeline::window& w) {
                                    return self->commit_window(static_cast<produce_window&>(w));
                                },
                                [self](window_pipeline::window& w, const error& e) {
                                    self->fail_window(static_cast<produce_window&>(w), e);
                                }});
    l->_window_thread = std::thread([p = l.get()] { p->run_window(); });
    l->_listener_thread = std::thread([p = l.get()] { p->run_listener(); });
    for (auto& c : l->_reader_dbs)
        l->_readers.emplace_back([p = l.get(), c = c.get()] { p->run_reader(c); });
    return l;
}

void shared_log::run_read(std::function<void()> job) {
    {
        std::lock_guard lk(_read_mu);
        if (_readers_stopping) return;
        _read_jobs.push_back(std::move(job));
    }
    _read_cv.notify_one();
}

void shared_log::run_reader(pg_database* db) {
    reader_connection = db;
    std::unique_lock lk(_read_mu);
    for (;;) {
        _read_cv.wait(lk, [this] { return _readers_stopping || !_read_jobs.empty(); });
        if (_readers_stopping) return;
        auto job = std::move(_read_jobs.front());
        _read_jobs.pop_front();
        lk.unlock();
        job();
        job = nullptr;  // what it holds goes here, off the lock
        lk.lock();
    }
}

pg_database* shared_log::reader_database() {
    return reader_connection;
}

pg_database& shared_log::read_db() const {
    return reader_connection ? *reader_connection : *_read_db;
}

shared_log::~shared_log() {
    {
        std::lock_guard lk(_mu);
        _stopping = true;
    }
    _window_cv.notify_all();
    {
        std::lock_guard lk(_read_mu);
        _readers_stopping = true;
    }
    _read_cv.notify_all();
    for (auto& t : _readers) t.join();
    if (_window_thread.joinable()) _window_thread.join();
    _pipeline.reset();  // the windows closed are committed and answered
    if (_listener_thread.joinable()) _listener_thread.join();
}

shared_partition& shared_log::partition(const std::string& topic_id, const topic_partition& name) {
    std::lock_guard lk(_mu);
    auto& p = _partitions[{topic_id, name.partition}];
    if (!p) p = std::make_unique<shared_partition>(*this, topic_id, name);
    return *p;
}

result<int64_t> shared_log::change_version(const char* subject) {
    return _read_db->transact<int64_t>(
        isolation_level::read_committed,
        [&](pg_transaction& tx) -> result<int64_t> { return read_change_version(tx, subject); });
}

shared_log::stats shared_log::counters() const {
    std::lock_guard lk(_mu);
    return _stats;
}

void shared_log::enqueue(pending p) {
    bool wake = false;
    {
        std::lock_guard lk(_mu);
        if (_stopping) {
            auto done = std::move(p.done);
            done(error{errc::io_error, "the shared log is closing"});
            return;
        }
        if (_waiting.empty()) {
            _window_opened = std::chrono::steady_clock::now();
            wake = true;
        }
        _waiting_bytes += p.data.size();
        wake = wake || _waiting_bytes >= _config.window_max_bytes;
        p.arrival = _pipeline->stamp();  // under _mu: stamps rise along _waiting
        _waiting.push_back(std::move(p));
    }
    if (wake) _window_cv.notify_one();
}

// Closes windows: each goes to the pipeline, which uploads it and commits the windows
// one at a time in closing order, so a partition's appends are committed in the order
// they arrived. While windows_in_flight are in flight the open one keeps gathering.
void shared_log::run_window() {
    std::unique_lock lk(_mu);
    for (;;) {
        if (_waiting.empty()) {
            if (_stopping) return;
            _window_cv.wait(lk);
            continue;
        }
        const auto due = _window_opened + _config.produce_window;
        if (!_stopping && _waiting_bytes < _config.window_max_bytes &&
            std::chrono::steady_clock::now() < due) {
            _window_cv.wait_until(lk, due);
            continue;
        }
        lk.unlock();
        const auto due_at = std::chrono::steady_clock::now();
        _pipeline->wait_for_room();
        auto w = std::make_unique<produce_window>();
        w->closed = std::chrono::steady_clock::now();
        lk.lock();
        w->taken.swap(_waiting);
        _waiting_bytes = 0;
        lk.unlock();
        for (const auto& p : w->taken) {
            window_pipeline::window::entry e{p.arrival, {}};
            for (const auto& b : p.batches) {
                const window_pipeline::dependency d{p.part, b.header.producer_id};
                if (b.header.producer_id >= 0 &&
                    std::find(e.depends_on.begin(), e.depends_on.end(), d) == e.depends_on.end())
                    e.depends_on.push_back(d);
            }
            w->entries.push_back(std::move(e));
        }
        count_window_closed(w->closed - due_at);
        _pipeline->submit(std::move(w));
        lk.lock();
    }
}

void shared_log::build_object(produce_window& w) {
    auto& taken = w.taken;
    // Each partition's batches together, partitions in the order they first arrived.
    std::vector<shared_partition*> order;
    std::map<shared_partition*, std::vector<size_t>> by_part;
    for (size_t i = 0; i < taken.size(); ++i) {
        auto& v = by_part[taken[i].part];
        if (v.empty()) order.push_back(taken[i].part);
        v.push_back(i);
    }
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    const int64_t unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
    w.commit =
        object_commit{fmt::format("{}/{}/{}-{}-{:08x}", _config.object_prefix, _config.broker_id,
                                  unix_ms, w.seq, static_cast<uint32_t>(rng())),
                      0,
                      _config.broker_id,
                      {}};
    auto& commit = w.commit;
    auto& object = w.object;
    for (auto* part : order) {
        const uint64_t from = object.size();
        for (size_t i : by_part[part]) {
            for (const auto& b : taken[i].batches) {
                const size_t size = b.header.size_bytes();
                // LogAppendTime topics: stamped by this broker as the window is written
                // (the commit may raise it: batch_append::log_append_time).
                if (taken[i].log_append_time)
                    protocol::set_log_append_time(
                        reinterpret_cast<uint8_t*>(taken[i].data.data()) + b.position, size,
                        unix_ms);
                commit.batches.push_back(
                    {part->_topic_id, part->_name.partition, b.header.last_offset_delta + 1,
                     object.size(), static_cast<uint32_t>(size),
                     std::max(b.max_record_timestamp, b.header.max_timestamp), b.header.producer_id,
                     b.header.producer_epoch, b.header.base_sequence,
                     b.header.is_transactional() && !b.header.is_control(),
                     b.header.is_control() ? taken[i].marker : int8_t{-1}});
                commit.batches.back().append_time_ms = unix_ms;
                w.batch_entry.push_back(i);
                if (taken[i].log_append_time) {
                    commit.batches.back().max_timestamp_ms = unix_ms;
                    commit.batches.back().log_append_time = true;
                }
                object.append(taken[i].data, b.position, size);
            }
        }
        w.spans.push_back({part, {from, object.size() - from}});
    }
    commit.size = object.size();
}

result<void> shared_log::upload_window(produce_window& w) {
    const auto start = std::chrono::steady_clock::now();
    build_object(w);
    const auto built = std::chrono::steady_clock::now();
    count_window_phase(window_phase::build, built - start);
    auto r = _store.put(w.commit.object_key, w.object);
    w.uploaded = std::chrono::steady_clock::now();
    count_window_phase(window_phase::put, w.uploaded - built);
    return r;
}

namespace {

size_t cancelled_count(const window_pipeline::window& w) {
    return static_cast<size_t>(std::count_if(w.cancelled.begin(), w.cancelled.end(),
                                              [](const auto& c) { return c.has_value(); }));
}

}  // namespace

void shared_log::fail_window(produce_window& w, const error& e) {
    {
        std::lock_guard lk(_mu);
        ++_stats.failed_windows;
    }
    for (size_t i = 0; i < w.taken.size(); ++i)
        w.taken[i].done(w.cancelled[i] ? *w.cancelled[i] : e);
    count_window_answered(false, w.closed, cancelled_count(w));
}

result<void> shared_log::commit_window(produce_window& w) {
    auto& taken = w.taken;
    // The batches of the entries not cancelled (window_pipeline.h), in the object's order;
    // the others stay in the object unreferenced.
    object_commit commit{w.commit.object_key, w.commit.size, w.commit.broker_id, {}};
    std::vector<size_t> entry_of;
    for (size_t k = 0; k < w.commit.batches.size(); ++k) {
        if (w.cancelled[w.batch_entry[k]]) continue;
        commit.batches.push_back(w.commit.batches[k]);
        entry_of.push_back(w.batch_entry[k]);
    }
    std::vector<log::append_info> infos(taken.size());
    const auto start = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point committed_at;
    if (!commit.batches.empty()) {
        commit.broker_incarnation = _incarnation.load(std::memory_order_acquire);
        commit_timings took;
        auto outcomes = commit_object(*_commit_db, commit, &took);
        if (!outcomes) return outcomes.err();
        committed_at = std::chrono::steady_clock::now();
        count_window_phase(window_phase::commit_wait, start - w.uploaded);
        count_window_phase(window_phase::lock, took.lock);
        count_window_phase(window_phase::statements, took.statements);
        count_window_phase(window_phase::commit, took.commit);
        for (const auto& [part, span] : w.spans) {
            _cache.put(commit.object_key, span.first,
                       std::make_shared<const std::string>(w.object, span.first, span.second));
        }
        // Outcomes follow commit.batches: by partition, then by arrival.
        for (size_t k = 0; k < entry_of.size(); ++k) {
            const auto& o = (*outcomes)[k];
            auto& info = infos[entry_of[k]];
            if (o.verdict != batch_verdict::appended &&
                info.verdict == log::sequence_verdict::append) {
                info.verdict = to_log_verdict(o.verdict);
                info.reason = o.reason;
            }
            if (o.base_offset >= 0) {
                if (info.base_offset < 0) info.base_offset = o.base_offset;
                if (info.log_append_time < 0) info.log_append_time = o.log_append_time;
                info.last_offset = o.last_offset;
            }
            if (o.verdict == batch_verdict::appended)
                raise_to(taken[entry_of[k]].part->_hw, o.last_offset + 1);
        }
        {
            std::lock_guard lk(_mu);
            ++_stats.objects;
            _stats.batches += commit.batches.size();
            _stats.bytes += w.object.size();
        }
        {
            std::lock_guard lk(_data_mu);
            ++_data_gen;
        }
        _data_cv.notify_all();
    }
    // Nothing committed (every append cancelled): the object stays unreferenced, for the
    // cleanup, as after a failed commit (a DELETE here would hold the commits behind it
    // while the store is slow).
    for (size_t i = 0; i < taken.size(); ++i) {
        if (w.cancelled[i]) {
            taken[i].done(*w.cancelled[i]);
            continue;
        }
        infos[i].log_start_offset = taken[i].part->_start.load(std::memory_order_acquire);
        taken[i].done(std::move(infos[i]));
    }
    if (!commit.batches.empty())
        count_window_phase(window_phase::answer, std::chrono::steady_clock::now() - committed_at);
    count_window_answered(true, w.closed, cancelled_count(w));
    return {};
}

void shared_log::run_listener() {
    for (;;) {
        {
            std::lock_guard lk(_mu);
            if (_stopping) return;
        }
        auto w = _listener->wait(std::chrono::milliseconds(200));
        if (!w) {
            log_warn("shared", "LISTEN {}: {}", commit_channel, w.err().message);
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            note_commit("");
            continue;
        }
        if (w->reconnected) note_commit("");
        for (const auto& n : w->notifications) note_commit(n.payload);
    }
}

void shared_log::set_commit_listener(commit_listener fn) {
    std::lock_guard lk(_listener_mu);
    _on_commit = std::move(fn);
}

void shared_log::note_commit(const std::string& payload) {
    bool refresh = payload.empty();
    std::vector<std::pair<std::string, int32_t>> moved;
    size_t at = 0;
    while (at < payload.size()) {
        size_t end = payload.find('\n', at);
        if (end == std::string::npos) end = payload.size();
        std::string_view line(payload.data() + at, end - at);
        at = end + 1;
        size_t a = line.find(':');
        size_t b = line.rfind(':');
        if (a == std::string_view::npos || a == b) continue;
        std::string topic(line.substr(0, a));
        int32_t part = std::stoi(std::string(line.substr(a + 1, b - a - 1)));
        offset_t hw = std::stoll(std::string(line.substr(b + 1)));
        moved.emplace_back(topic, part);
        std::lock_guard lk(_mu);
        if (auto it = _partitions.find({topic, part}); it != _partitions.end())
            raise_to(it->second->_hw, hw);
    }
    {
        std::lock_guard lk(_data_mu);
        ++_data_gen;
        if (refresh) ++_refresh_gen;
    }
    _data_cv.notify_all();
    std::lock_guard lk(_listener_mu);
    if (_on_commit) _on_commit(moved, refresh);
}

}  // namespace sluice::shared
