#include "expansion/service.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "catalog/expansion_store.h"
#include "catalog/metadata_store.h"
#include "common/clock.h"
#include "common/logging.h"
#include "expansion/row_builder.h"
#include "expansion/running.h"
#include "expansion/schema.h"
#include "log/log_manager.h"
#include "log/record_cursor.h"
#include "log/store_cursor.h"
#include "sql/partition_source.h"
#include "sql/schema_names.h"
#include "sql/sql_text.h"

namespace sluice::expansion {

namespace {

// A target file that a user's write holds (past the connection's busy timeout) is tried
// again this soon; meanwhile the expander serves the other expansions.
constexpr auto busy_retry = std::chrono::milliseconds(50);

}  // namespace

int64_t steady_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

namespace {

struct target_name {
    std::string schema, table;
};

result<target_name> parse_target(const std::string& target) {
    auto bad = [&](const std::string& why) {
        return error{errc::invalid_argument, fmt::format("target '{}': {}", target, why)};
    };
    target_name t;
    const auto dot = target.find('.');
    t.schema = dot == std::string::npos ? "main" : target.substr(0, dot);
    t.table = dot == std::string::npos ? target : target.substr(dot + 1);
    if (t.table.empty() || t.table.size() > 128 || t.table.find('.') != std::string::npos ||
        t.table.find('\0') != std::string::npos)
        return bad("give it as SCHEMA.TABLE, the table name 1 to 128 characters without '.'");
    const auto low = sql::to_lower(t.table);
    if (low.rfind("sqlite_", 0) == 0 || low.rfind("_sluice", 0) == 0)
        return bad("table names starting with sqlite_ or _sluice are reserved");
    if (t.schema != "main")
        if (auto why = sql::check_schema_name(t.schema); !why.empty()) return bad(why);
    return t;
}

}  // namespace

std::string target_key(std::string_view target) {
    auto key = sql::to_lower(target);
    return key.find('.') == std::string::npos ? "main." + key : key;
}

// Builds the running form of a definition: schema, layout, row builder.
result<std::shared_ptr<running>> prepare(const catalog::expansion_info& info) {
    auto e = std::make_shared<running>();
    e->info = info;
    auto name = parse_target(info.target);
    if (!name) return name.err();
    e->schema_name = name->schema;
    e->table = name->table;
    e->key = target_key(info.target);
    auto s = parse_schema(info.schema);
    if (!s) return s.err();
    e->fields = std::move(*s);
    auto l = layout::make(e->fields, {info.flatten, info.copy_source});
    if (!l) return l.err();
    e->columns = std::move(*l);
    e->rows = std::make_unique<row_builder>(e->fields, *e->columns);
    e->key_source = info.source == "key";
    return e;
}

namespace {

// After a commit: ends a wait for a busy file, with a log line.
void writing_again(running& e) {
    if (e.busy_since == 0) return;
    log_info("expansion", "{}: writing again after waiting {} ms for the lock", e.info.target,
             steady_ms() - e.busy_since);
    e.busy_since = 0;
}

}  // namespace

service::service(service_options o)
    : _o(std::move(o)), _targets(_o.targets) {}

service::~service() {
    stop();
}

result<std::unique_ptr<service>> service::open(service_options o) {
    if (!o.targets) return error{errc::invalid_argument, "expansions: no target store"};
    std::unique_ptr<service> s(new service(std::move(o)));
    for (const auto& info : s->_o.expansions->list_expansions()) s->load(info);
    return s;
}

bool service::load(const catalog::expansion_info& info) {
    auto e = prepare(info);
    if (!e) {
        // Only a hand-edited catalog gets here; keep serving the others.
        log_error("expansion", "{}: cannot load its definition: {}", info.target, e.err().message);
        return false;
    }
    auto& run = **e;
    std::lock_guard work(run.work_mu);
    auto r = catch_up(run);
    std::lock_guard lock(_mu);
    if (!r) {
        run.error = r.err().message;
        run.retry_at = steady_ms() + _o.retry_interval.count();
        log_error("expansion", "{}: {}", info.target, r.err().message);
    }
    _by_target[run.key] = *e;
    _by_topic.emplace(info.topic, *e);
    return true;
}

void service::forget(const running& e) {
    _by_target.erase(e.key);
    for (auto it = _by_topic.begin(); it != _by_topic.end(); ++it)
        if (it->second.get() == &e) {
            _by_topic.erase(it);
            break;
        }
}

result<void> service::catch_up(running& e) {
    if (!e.target && _o.partitions)
        if (auto r = open_copy(e); !r) return r;
    if (!e.target) {
        auto t = _targets->open(e.schema_name, e.table, *e.columns, false);
        if (!t) return t.err();
        e.target = std::move(*t);
    }
    auto progress = e.target->load_progress();
    if (!progress) return progress.err();
    e.progress = std::move(*progress);
    // Rows of events the log no longer has (it lost an unsynced tail the expansion had
    // read: only possible if the target was written ahead of the log's fsync, which the
    // expander never does; checked all the same, since the cost is a lookup).
    if (!topic_exists(e.info.topic))
        return error{errc::not_found, fmt::format("topic '{}' is gone", e.info.topic)};
    for (auto& [p, pp] : e.progress) {
        const auto part = partition(e.info.topic, p);
        if (!part) continue;
        const offset_t end = part.store->log_end_offset();
        if (pp.next <= end && pp.backfill_end <= end) continue;
        const offset_t had = pp.next;
        pp.next = std::min(pp.next, end);
        pp.backfill_end = std::min(pp.backfill_end, end);
        pp.backfill_next = std::min(pp.backfill_next, pp.backfill_end);
        int64_t deleted = 0;
        // The rows and the progress that no longer counts them, in one transaction (the
        // lambda captures copies: a structured binding cannot be captured before C++20's
        // fix in clang 16).
        auto r = e.target->in_transaction([&, id = p, at = pp]() -> result<void> {
            auto d = e.target->delete_from(id, end);
            if (!d) return d.err();
            deleted = *d;
            return e.target->save_progress(id, at);
        });
        if (!r) return r;
        log_warn("expansion",
                 "{}: partition {} ends at {} but the target had rows up to {}; "
                 "deleted {} rows past the end",
                 e.info.target, p, end, had, deleted);
    }
    const auto started = std::chrono::steady_clock::now();
    int64_t before = 0;
    for (const auto& [_, pp] : e.progress) before += pp.next;
    {
        std::lock_guard lock(_mu);
        e.published = e.progress;
    }
    const auto parts = partitions_of(e.info.topic);
    while (expand_live(e, parts)) {
    }
    std::lock_guard lock(_mu);
    if (!e.error.empty()) return {};  // fail() has recorded and logged it
    e.caught_up = true;
    int64_t after = 0;
    for (const auto& [p, pp] : e.progress) {
        after += pp.next;
        e.backfill_left = e.backfill_left || pp.backfilling();
    }
    log_info("expansion", "{}: caught up {} events of topic '{}' in {} ms{}", e.info.target,
             after - before, e.info.topic,
             std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - started)
                 .count(),
             e.backfill_left ? "; its backfill goes on in the background" : "");
    return {};
}

void service::start() {
    std::lock_guard lock(_mu);
    if (_thread.joinable() || _stop) return;
    _thread = std::thread([this] { run(); });
}

void service::stop() {
    {
        std::lock_guard lock(_mu);
        if (_stop) return;
        _stop = true;
    }
    _cv.notify_all();
    if (_thread.joinable()) _thread.join();
    // Producers still waiting get their answer; the events are in the log, and the next
    // start expands them before anything else.
    decltype(_waiters) waiters;
    {
        std::lock_guard lock(_mu);
        waiters.swap(_waiters);
    }
    for (auto& per_partition : waiters)
        for (auto& waiter : per_partition.second) waiter.second();
}

void service::run() {
    std::unique_lock lk(_mu);
    size_t backfill_turn = 0;
    int64_t next_poll = 0;  // shared mode: when to read every high watermark again
    while (!_stop) {
        if (_definitions_changed) {
            _definitions_changed = false;
            lk.unlock();
            sync_definitions();
            lk.lock();
            continue;
        }
        const int64_t now = steady_ms();
        // Shared mode: commits at other brokers move the high watermarks too; the broker
        // passes on the notifications it gets (on_high_watermark), and this catches those
        // a lost listener connection missed.
        if (_o.partitions && now >= next_poll) {
            next_poll = now + 1000;
            for (auto it = _by_topic.begin(); it != _by_topic.end();
                 it = _by_topic.upper_bound(it->first))
                for (int32_t p : partitions_of(it->first)) _dirty.insert({it->first, p});
        }
        // What to do: the dirty partitions of each healthy expansion of their topic, and
        // whole failed expansions whose retry is due.
        std::vector<std::pair<std::shared_ptr<running>, std::vector<int32_t>>> live;
        auto work_for = [&](const std::shared_ptr<running>& e) -> std::vector<int32_t>& {
            for (auto& [r, parts] : live)
                if (r == e) return parts;
            return live.emplace_back(e, std::vector<int32_t>{}).second;
        };
        int64_t next_retry = now + 1000;
        if (_o.partitions) next_retry = std::min(next_retry, next_poll);
        std::set<topic_partition> deferred;  // for expansions whose file is busy
        for (const auto& tp : _dirty) {
            auto [a, b] = _by_topic.equal_range(tp.topic);
            for (auto it = a; it != b; ++it) {
                const auto& e = it->second;
                if (!e->error.empty()) continue;
                if (e->busy_until > now) {
                    deferred.insert(tp);
                    next_retry = std::min(next_retry, e->busy_until);
                    continue;
                }
                work_for(e).push_back(tp.partition);
            }
        }
        _dirty = std::move(deferred);
        std::vector<std::shared_ptr<running>> backfills;
        for (auto& [_, e] : _by_target) {
            if (!e->error.empty()) {
                if (e->retry_at <= now) {
                    log_info("expansion", "{}: trying again after: {}", e->info.target, e->error);
                    e->error.clear();
                    work_for(e) = partitions_of(e->info.topic);
                } else {
                    next_retry = std::min(next_retry, e->retry_at);
                }
                continue;
            }
            if (e->busy_until > now)
                next_retry = std::min(next_retry, e->busy_until);
            else if (e->backfill_left)
                backfills.push_back(e);
        }
        if (live.empty() && backfills.empty()) {
            _cv.wait_for(lk, std::chrono::milliseconds(std::max<int64_t>(1, next_retry - now)));
            continue;
        }
        lk.unlock();
        for (auto& [e, parts] : live) {
            std::lock_guard work(e->work_mu);
            if (e->dropped) continue;
            if (!e->caught_up) {  // failed at start (or since): catch up first
                if (auto r = catch_up(*e); !r) fail(*e, r.err());
                continue;
            }
            if (expand_live(*e, parts)) {
                std::lock_guard lock(_mu);
                for (int32_t p : parts) _dirty.insert({e->info.topic, p});
            }
        }
        // Backfill a chunk only when live work has caught up.
        lk.lock();
        const bool idle = _dirty.empty();
        lk.unlock();
        if (idle && !backfills.empty()) {
            auto& e = backfills[backfill_turn++ % backfills.size()];
            std::lock_guard work(e->work_mu);
            if (!e->dropped && e->target) {
                const bool left = expand_backfill(*e);
                std::lock_guard lock(_mu);
                e->backfill_left = left && e->error.empty();
                if (!left && e->error.empty())
                    log_info("expansion", "{}: backfill done", e->info.target);
            }
        }
        lk.lock();
    }
}

bool service::expand_live(running& e, const std::vector<int32_t>& parts) {
    if (!topic_exists(e.info.topic)) return false;

    // Only the partitions this transaction moves: a topic may have thousands.
    std::vector<std::pair<int32_t, partition_progress>> changed;
    int64_t budget = _o.max_rows_per_commit;
    int64_t rows = 0;
    bool in_txn = false, left = false;
    auto body = [&]() -> result<void> {
        for (int32_t p : parts) {
            const auto part = partition(e.info.topic, p);
            if (!part) continue;
            // A partition added after the expansion was created starts at 0.
            const auto at = e.progress.find(p);
            partition_progress pp = at == e.progress.end() ? partition_progress{} : at->second;
            const offset_t hw = readable_end(part);
            if (pp.next >= hw) continue;
            if (budget <= 0) {
                left = true;
                break;
            }
            if (!in_txn) {
                if (auto r = e.target->begin(); !r) return r;
                in_txn = true;
            }
            offset_t from = pp.next;
            if (const offset_t start = part.store->log_start_offset(); from < start) {
                log_warn("expansion",
                         "{}: events {}..{} of partition {} were deleted before "
                         "they could be expanded",
                         e.info.target, from, start - 1, p);
                from = start;
            }
            const offset_t to = std::min(hw, from + budget);
            auto written = write_rows(e, part, p, from, to);
            if (!written) return written.err();
            rows += written->rows;
            budget -= to - from;
            pp.next = std::max(written->end, pp.next);
            // A read that found nothing yet is tried again on the next wake-up (a commit's
            // notification, or the poll), not at once.
            if (pp.next < hw && written->end > from) left = true;
            if (auto r = e.target->save_progress(p, pp); !r) return r;
            changed.emplace_back(p, pp);
        }
        if (in_txn) return e.target->commit();
        return {};
    };
    if (auto r = body(); !r) {
        if (in_txn) e.target->rollback();
        return retry_or_fail(e, r.err());
    }
    if (!in_txn) return left;
    writing_again(e);
    for (const auto& [p, pp] : changed) e.progress[p] = pp;
    {
        std::lock_guard lock(_mu);
        e.rows_written += rows;
        for (const auto& [p, pp] : changed) e.published[p] = pp;
    }
    publish(e);
    return left;
}

bool service::expand_backfill(running& e) {
    if (!topic_exists(e.info.topic)) return false;
    for (auto& entry : e.progress) {
        const int32_t p = entry.first;
        auto& current = entry.second;
        if (!current.backfilling()) continue;
        const auto part = partition(e.info.topic, p);
        if (!part) continue;
        partition_progress pp = current;
        pp.backfill_next = std::max(pp.backfill_next, part.store->log_start_offset());
        // In smaller steps than live expansion (the store says how small).
        const offset_t to =
            std::min(pp.backfill_end, pp.backfill_next + e.target->backfill_rows_per_commit());
        int64_t rows = 0;
        auto r = e.target->in_transaction([&]() -> result<void> {
            auto written = write_rows(e, part, p, pp.backfill_next, to);
            if (!written) return written.err();
            rows = written->rows;
            pp.backfill_next = std::max(written->end, pp.backfill_next);
            return e.target->save_progress(p, pp);
        });
        if (!r) return retry_or_fail(e, r.err());
        writing_again(e);
        current = pp;
        std::lock_guard lock(_mu);
        e.rows_written += rows;
        e.published[p] = pp;
        return true;
    }
    return false;
}

bool service::retry_or_fail(running& e, const error& err) {
    e.cursor.close();
    if (err.code == errc::timed_out) {
        // A user's write holds the file: this expansion waits, still healthy, while the
        // expander goes on with the others.
        const int64_t now = steady_ms();
        if (e.busy_since == 0) {
            e.busy_since = now;
            log_warn("expansion", "{}: {}; waiting for the lock", e.info.target, err.message);
        }
        e.busy_until = now + busy_retry.count();
        return true;
    }
    fail(e, err);
    return false;
}

void service::fail(running& e, const error& err) {
    {
        std::lock_guard lock(_mu);
        e.error = err.message;
        e.retry_at = steady_ms() + _o.retry_interval.count();
    }
    log_error("expansion", "{}: {}; producers no longer wait for it; trying again in {} ms",
              e.info.target, err.message, _o.retry_interval.count());
    publish(e);
}

offset_t service::position(const topic_partition& tp) const {
    offset_t pos = std::numeric_limits<offset_t>::max();
    auto [a, b] = _by_topic.equal_range(tp.topic);
    for (auto it = a; it != b; ++it) {
        const auto& e = *it->second;
        if (!e.error.empty()) continue;
        auto p = e.published.find(tp.partition);
        pos = std::min(pos, p == e.published.end() ? 0 : p->second.next);
    }
    return pos;
}

void service::publish(const running& e) {
    std::vector<std::function<void()>> ready;
    {
        std::lock_guard lock(_mu);
        // The waiters of e's topic: _waiters is ordered by topic, then partition.
        for (auto it = _waiters.lower_bound({e.info.topic, 0});
             it != _waiters.end() && it->first.topic == e.info.topic;) {
            const offset_t pos = position(it->first);
            auto& m = it->second;
            while (!m.empty() && m.begin()->first < pos) {
                ready.push_back(std::move(m.begin()->second));
                m.erase(m.begin());
            }
            it = m.empty() ? _waiters.erase(it) : std::next(it);
        }
    }
    for (auto& fn : ready) fn();
}

void service::when_expanded(const topic_partition& tp, offset_t last, std::function<void()> fn) {
    {
        std::lock_guard lock(_mu);
        if (!_stop && last >= position(tp)) {
            _waiters[tp].emplace(last, std::move(fn));
            return;
        }
    }
    fn();
}

bool service::expands(const std::string& topic) const {
    std::lock_guard lock(_mu);
    return _by_topic.count(topic) != 0;
}

void service::on_high_watermark(const std::vector<topic_partition>& tps) {
    bool any = false;
    {
        std::lock_guard lock(_mu);
        for (const auto& tp : tps)
            if (_by_topic.count(tp.topic)) {
                _dirty.insert(tp);
                any = true;
            }
    }
    if (any) _cv.notify_one();
}

result<status> service::create(const create_request& r) {
    if (r.source != "value" && r.source != "key")
        return error{errc::invalid_argument,
                     fmt::format("source must be value or key, not '{}'", r.source)};
    auto name = parse_target(r.target);
    if (!name) return name.err();
    auto fields = parse_schema(r.schema);
    if (!fields) return fields.err();
    catalog::expansion_info info;
    info.target = name->schema + "." + name->table;
    info.topic = r.topic;
    info.source = r.source;
    info.flatten = r.flatten;
    info.copy_source = r.copy_source;
    info.schema = to_json(*fields);
    info.created_ms = now_ms();
    auto prepared = prepare(info);
    if (!prepared) return prepared.err();
    auto& e = **prepared;

    std::lock_guard create(_create_mu);
    auto topic_info = _o.topics->find_topic(r.topic);
    if (!topic_info || !topic_exists(r.topic))
        return error{errc::not_found, fmt::format("topic '{}' does not exist", r.topic)};
    {
        std::lock_guard lock(_mu);
        if (auto it = _by_target.find(e.key); it != _by_target.end())
            return error{errc::already_exists,
                         fmt::format("{} is already the target of an expansion of topic '{}'",
                                     it->second->info.target, it->second->info.topic)};
    }
    auto target = _targets->open(name->schema, name->table, *e.columns, true);
    if (!target) return target.err();
    // Live expansion starts at each partition's high watermark now; a backfill covers
    // what lies below it.
    for (int32_t p = 0; p < topic_info->partitions; ++p) {
        const auto part = partition(r.topic, p);
        if (!part) continue;
        partition_progress pp;
        pp.next = readable_end(part);
        pp.backfill_start = pp.backfill_next =
            r.backfill ? part.store->log_start_offset() : pp.next;
        pp.backfill_end = pp.next;
        e.progress[p] = pp;
        // Shared mode: the other brokers' copies start there too.
        if (_o.partitions) info.starts[p] = {pp.next, pp.backfill_start};
    }
    if (auto s = (*target)->reset_progress(e.progress); !s) return s.err();
    e.info = info;
    if (auto s = _o.expansions->create_expansion(info); !s) {
        (void)(*target)->remove(false);
        return s.err();
    }
    e.target = std::move(*target);
    e.caught_up = true;
    bool backfill = false;
    for (const auto& [_, pp] : e.progress) backfill = backfill || pp.backfilling();
    {
        std::lock_guard lock(_mu);
        e.published = e.progress;
        e.backfill_left = backfill;
        _by_target[e.key] = *prepared;
        _by_topic.emplace(info.topic, *prepared);
        // Events appended since the high watermarks were read.
        for (const auto& [p, _] : e.progress) _dirty.insert({info.topic, p});
    }
    _cv.notify_one();
    log_info("expansion", "{}: expanding topic '{}' ({} of each event{}{}){}", info.target,
             info.topic, info.source, info.flatten ? ", flattened" : "",
             info.copy_source ? ", with the source" : "", backfill ? ", backfilling" : "");
    status s;
    progress_map published;
    {
        std::lock_guard lock(_mu);
        s = describe(e);
        published = e.published;
    }
    add_lag(s, published);
    count_target_rows(s);
    return s;
}

result<void> service::drop(const std::string& target, bool drop_table) {
    std::lock_guard create(_create_mu);
    std::shared_ptr<running> e;
    {
        std::lock_guard lock(_mu);
        auto it = _by_target.find(target_key(target));
        if (it == _by_target.end())
            return error{errc::not_found, fmt::format("no expansion has target {}", target)};
        e = it->second;
    }
    std::lock_guard work(e->work_mu);  // the expander is done with it
    if (auto r = _o.expansions->delete_expansion(e->info.target); !r) return r;
    e->dropped = true;
    {
        std::lock_guard lock(_mu);
        forget(*e);
    }
    publish(*e);  // producers waiting for it alone go on
    if (!e->target) {
        auto t = _targets->open(e->schema_name, e->table, *e->columns, false);
        if (t) e->target = std::move(*t);
    }
    if (e->target) {
        if (auto r = e->target->remove(drop_table); !r)
            log_warn("expansion", "{}: dropped, but cleaning its table up failed: {}",
                     e->info.target, r.err().message);
        e->target.reset();
    }
    log_info("expansion", "{}: dropped{}", e->info.target,
             drop_table ? ", with its table" : "; its table stays");
    return {};
}

status service::describe(const running& e) const {
    status s;
    s.info = e.info;
    s.error = e.error;
    s.rows_written = e.rows_written;
    s.state = !e.error.empty() ? "failed" : e.backfill_left ? "backfilling" : "running";
    s.columns = e.columns->columns();
    for (const auto& [_, pp] : e.published) {
        s.backfill_total += pp.backfill_end - pp.backfill_start;
        s.backfill_done += pp.backfill_next - pp.backfill_start;
    }
    return s;
}

void service::add_lag(status& s, const progress_map& published) const {
    // Outside _mu: in shared mode a high watermark is a query.
    for (int32_t p : partitions_of(s.info.topic)) {
        const auto part = partition(s.info.topic, p);
        if (!part) continue;
        auto it = published.find(p);
        const offset_t next = it == published.end() ? 0 : it->second.next;
        s.lag += std::max<int64_t>(0, part.store->high_watermark() - next);
    }
}

void service::count_target_rows(status& s) const {
    // Outside _mu: counting reads the whole table (its smallest index), and the
    // expanders need the lock meanwhile.
    const auto name = parse_target(s.info.target);
    if (!name) return;
    auto rows = _targets->count_rows(name->schema, name->table);
    if (rows)
        s.rows = *rows;
    else
        log_warn("expansion", "{}: {}", s.info.target, rows.err().message);
}

std::vector<status> service::list() const {
    std::vector<status> out;
    std::vector<progress_map> published;
    {
        std::lock_guard lock(_mu);
        for (const auto& [_, e] : _by_target) {
            out.push_back(describe(*e));
            published.push_back(e->published);
        }
    }
    for (size_t i = 0; i < out.size(); ++i) {
        add_lag(out[i], published[i]);
        count_target_rows(out[i]);
    }
    return out;
}

std::optional<status> service::find(const std::string& target) const {
    std::optional<status> s;
    progress_map published;
    {
        std::lock_guard lock(_mu);
        auto it = _by_target.find(target_key(target));
        if (it == _by_target.end()) return std::nullopt;
        s = describe(*it->second);
        published = it->second->published;
    }
    add_lag(*s, published);
    count_target_rows(*s);
    return s;
}

std::string service::protected_table(std::string_view schema, std::string_view table) const {
    const auto t = sql::to_lower(table);
    if (t == progress_table || t == meta_table)
        return fmt::format("{}.{} belongs to the broker: it records how far expansions have gone",
                           schema, table);
    if (t.starts_with(delta_prefix))
        return fmt::format("{}.\"{}\" belongs to the broker: it holds rows of the target {} "
                           "committed while that table was being checkpointed",
                           schema, table, t.substr(delta_prefix.size()));
    std::lock_guard lock(_mu);
    auto it = _by_target.find(sql::to_lower(schema) + "." + t);
    if (it == _by_target.end()) return {};
    return fmt::format(
        "{}.{} is the target of an expansion of topic '{}', which only the broker "
        "writes; drop the expansion first (sluice expansion drop {})",
        schema, table, it->second->info.topic, it->second->info.target);
}

std::string service::source_topic(std::string_view schema, std::string_view table) const {
    // A delta's rows are its target's (main."_sluice_delta:<schema>.<table>").
    auto t = sql::to_lower(table);
    const auto key = t.starts_with(delta_prefix) && sql::to_lower(schema) == "main"
                         ? t.substr(delta_prefix.size())
                         : sql::to_lower(schema) + "." + t;
    std::lock_guard lock(_mu);
    auto it = _by_target.find(key);
    return it == _by_target.end() ? std::string() : it->second->info.topic;
}

std::string service::protected_schema(std::string_view schema) const {
    const auto s = sql::to_lower(schema);
    std::lock_guard lock(_mu);
    std::string targets;
    for (const auto& [key, e] : _by_target)
        if (key.compare(0, s.size() + 1, s + ".") == 0)
            targets += (targets.empty() ? "" : ", ") + e->info.target;
    if (targets.empty()) return {};
    return fmt::format("schema {} holds the targets of expansions ({}); drop them first", schema,
                       targets);
}

}  // namespace sluice::expansion
