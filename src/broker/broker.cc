#include "broker/broker.h"

#include <unistd.h>

#include <algorithm>

#include "broker/broker_metrics.h"
#include "broker/session.h"

#include "common/clock.h"
#include "common/logging.h"

namespace sluice::broker {
namespace {
// How often the TLS files are checked for changes (they reload without a restart).
constexpr std::chrono::seconds tls_check_interval{5};
}  // namespace

broker::broker(const broker_config& cfg, net::event_loop& loop, catalog::catalog& cat,
               log::log_manager& logs)
    : broker(cfg, loop, cat, logs, local_metadata_stores(cat, cfg.data_dir / "catalog.db")) {}

broker::broker(broker_config cfg, net::event_loop& loop, catalog::catalog& cat,
               log::log_manager& logs, metadata_stores stores)
    : _cfg(std::move(cfg)),
      _loop(loop),
      _catalog(cat),
      _stores(std::move(stores)),
      _logs(logs),
      _dynamic(_cfg),
      _topics(*_stores.topics, logs, _cfg.topic_defaults),
      _groups(_cfg.groups),
      _consumer_groups(_cfg.groups, _topic_view),
      _share_groups(_cfg.share_groups, _topic_view),
      _fetch_sessions(_cfg.fetch_session_cache_slots, _cfg.fetch_session_min_eviction_ms),
      _access(*_stores.security, _cfg.authorization, _cfg.authenticate),
      _acls(*_stores.security),
      _request_budget(std::make_shared<net::byte_budget>(_cfg.queued_max_request_bytes)),
      _in_flight(std::make_shared<net::in_flight_bound>(
          _cfg.max_in_flight_bytes, [](const net::in_flight_bound& b) { count_in_flight(b); })) {
    _cluster_id = _catalog.cluster_id();
    _groups.on_earlier_deadline([this] { schedule_groups(); });
    _consumer_groups.on_earlier_deadline([this] { schedule_groups(); });
    // Online migration between the protocols (group.consumer.migration.policy).
    _consumer_groups.set_classic(&_groups);
    _consumer_groups.set_group_configs(&_group_configs);
    _share_groups.set_group_configs(&_group_configs);
    _share_groups.set_runner([this](const std::string& group, const std::string& member,
                                    std::function<void()> job, std::function<void()> done) {
        _share_work.run(group, member, std::move(job), std::move(done));
    });
    _share_groups.set_other_group([this](const std::string& id) {
        return _consumer_groups.is_consumer_group(id) || _groups.describe(id).has_value();
    });
    _logs.set_high_watermark_listener([this](const std::vector<topic_partition>& tps) {
        if (auto* h = _expansions.load()) h->on_high_watermark(tps);
        _loop.post([this, tps] { notify_data(tps); });
    });
}

broker::~broker() {
    _cluster_poll.reset();
    if (_shared.log) _shared.log->set_commit_listener(nullptr);
    _groups.set_state_writer(nullptr);  // _offsets goes first
    _consumer_groups.set_state_writer(nullptr);
    _share_groups.set_store(nullptr);
    _logs.set_high_watermark_listener(nullptr);
}

result<void> broker::load() {
    if (_loaded) return {};
    _topics.load();
    if (auto r = load_dynamic_configs(); !r) return r;
    if (auto r = load_group_configs(); !r) return r;
    if (auto r = load_offsets(); !r) return r;
    if (auto r = load_transactions(); !r) return r;
    if (auto r = load_share_groups(); !r) return r;
    _loaded = true;
    return {};
}

result<std::vector<listener_config>> broker::start() {
    if (auto r = load(); !r) return r.err();
    // Shared mode keeps no segments: nothing to retain, compact or reload here.
    if (!shared()) start_log_maintenance();
    return bind_listeners();
}

void broker::start_log_maintenance() {
    _retention = std::make_unique<periodic_thread>(
        std::chrono::milliseconds(_cfg.log_retention_check_interval_ms),
        [this] { count_retention(_logs.enforce_retention(now_ms())); });
    // Its own thread, so that a long compaction pass never delays retention.
    _cleaner = std::make_unique<periodic_thread>(
        std::chrono::milliseconds(_cfg.log_cleaner_backoff_ms),
        [this] { count_compaction(_logs.enforce_compaction(now_ms())); });
    // As often as a failed load may be retried (log_manager options); an empty list costs
    // one lock.
    _reloader = std::make_unique<periodic_thread>(std::chrono::seconds(2),
                                                  [this] { _logs.retry_failed_loads(); });
}

result<std::vector<listener_config>> broker::bind_listeners() {
    std::vector<listener_config> bound;
    for (const auto& lc : _cfg.listeners) {
        size_t index = _listeners.size();
        auto& ls = _listeners.emplace_back();
        ls.cfg = lc;
        ls.socket = std::make_unique<net::listener>(_loop, [this, index](int fd, std::string peer) {
            on_accept(index, fd, std::move(peer));
        });
        auto addr = ls.socket->open(lc.address);
        if (!addr) return error{addr.code(), lc.to_string() + ": " + addr.err().message};
        ls.cfg.address = *addr;
        if (ls.cfg.advertise.empty()) {
            net::host_port self = *addr;
            if (self.host.empty() || self.host == "0.0.0.0" || self.host == "::")
                self.host = "127.0.0.1";
            ls.cfg.advertise.push_back(self);
        }
        _broker_count = std::max(_broker_count, ls.cfg.advertise.size());
        bound.push_back(ls.cfg);
    }
    // Every listener announces the same broker ids; one with fewer addresses repeats them.
    for (auto& ls : _listeners) {
        for (size_t i = 0; i < _broker_count; ++i)
            ls.brokers.push_back(
                {static_cast<int32_t>(i), ls.cfg.advertise[i % ls.cfg.advertise.size()]});
        // Shared mode: this broker alone under its id until join_cluster lists the others.
        if (shared()) ls.brokers = {{_shared.node_id, ls.cfg.advertise.front()}};
    }
    if (_cfg.tls) _loop.add_timer(tls_check_interval, [this] { check_tls_files(); });
    return bound;
}

std::vector<net::tls_context*> broker::tls_contexts() const {
    std::vector<net::tls_context*> out;
    for (const auto& c : {_cfg.tls, _cfg.ssl_listener_tls, _cfg.http_tls})
        if (c && std::find(out.begin(), out.end(), c.get()) == out.end()) out.push_back(c.get());
    return out;
}

void broker::reload_tls() {
    for (auto* ctx : tls_contexts()) {
        if (auto r = ctx->reload(); !r) {
            log_error("security", "TLS reload failed, the previous certificate stays in use: {}",
                      r.err().message);
            return;
        }
    }
    if (_cfg.tls) log_info("security", "TLS certificate and key reloaded");
}

void broker::check_tls_files() {
    if (_shutting_down) return;
    for (auto* ctx : tls_contexts()) {
        auto r = ctx->reload_if_changed();
        if (!r) {
            log_error("security",
                      "TLS files changed but cannot be loaded; the previous ones stay in "
                      "use: {}",
                      r.err().message);
            break;
        }
        if (*r) log_info("security", "TLS files changed on disk: certificate and key reloaded");
    }
    _loop.add_timer(tls_check_interval, [this] { check_tls_files(); });
}

result<void> broker::load_offsets() {
    auto store = _stores.open_offsets();
    if (!store) return store.err();
    auto rows = (*store)->load();
    if (!rows) return rows.err();
    std::map<std::string, std::vector<group::offset_entry>> by_group;
    for (auto& r : *rows) {
        group::committed_offset v{r.offset, r.leader_epoch, std::move(r.metadata), r.commit_ms,
                                  r.expire_ms};
        by_group[r.group_id].push_back({{std::move(r.topic), r.partition}, std::move(v)});
    }
    for (const auto& [g, entries] : by_group) _groups.restore(g, entries);
    log_info("group", "loaded {} committed offsets of {} groups", rows->size(), by_group.size());
    // Group state after the offsets: an Empty group's age comes from both.
    auto gstore = _stores.open_groups();
    if (!gstore) return gstore.err();
    auto stored = (*gstore)->load();
    if (!stored) return stored.err();
    size_t members = 0;
    for (const auto& g : *stored) {
        _groups.restore_group(g);
        members += g.members.size();
    }
    log_info("group", "restored {} groups with {} members", stored->size(), members);
    auto consumer = (*gstore)->load_consumer();
    if (!consumer) return consumer.err();
    for (const auto& g : *consumer) _consumer_groups.restore(g);
    log_info("group", "restored {} consumer groups", consumer->size());
    _offsets = std::make_unique<offset_writer>(std::move(*store), std::move(*gstore), _loop);
    _groups.set_state_writer(_offsets.get());
    _offsets->on_fenced([this](const std::set<std::string>& g) { on_groups_fenced(g); });
    _consumer_groups.set_state_writer(_offsets.get());
    _loop.add_timer(std::chrono::milliseconds(_cfg.offsets_retention_check_interval_ms),
                    [this] { sweep_expired_offsets(); });
    return {};
}

result<void> broker::load_transactions() {
    auto store = _stores.open_transactions();
    if (!store) return store.err();
    _txn_store = std::move(*store);
    _txn_participants = std::make_unique<txn_participants>(*this);
    txn::services svc;
    svc.store = _txn_store.get();
    svc.parts = _txn_participants.get();
    svc.allocate_producer_id = [this] { return _stores.producer_ids->allocate_producer_id(); };
    svc.wall_ms = [] { return now_ms(); };
    if (shared()) {
        svc.shared_store = true;
        svc.owns = [this](const std::string& id) { return coordinates_txn(id); };
    }
    _txns = std::make_unique<txn::coordinator>(
        txn::settings{_cfg.transaction_max_timeout_ms, _cfg.transactional_id_expiration_ms},
        std::move(svc));
    if (auto r = _txns->recover(); !r) return r;
    _loop.add_timer(std::chrono::milliseconds(_cfg.transaction_abort_check_interval_ms),
                    [this] { expire_transactions(); });
    return {};
}

result<void> broker::load_share_groups() {
    auto store = _stores.open_share();
    if (!store) return store.err();
    size_t n = 0;
    // Shared mode keeps none in memory: each request reads the database.
    if (!(*store)->shared()) {
        auto stored = (*store)->load("");
        if (!stored) return stored.err();
        n = stored->size();
        for (auto& s : *stored) _share_groups.restore(std::move(s));
    }
    _share_store = std::move(*store);
    _share_groups.set_store(_share_store);
    log_info("group",
             "restored {} share-partitions of share groups (share.auto.offset.reset {}, "
             "share.isolation.level {})",
             n, _share_groups.settings().auto_offset_reset,
             _share_groups.settings().read_committed ? "read_committed" : "read_uncommitted");
    return {};
}

void broker::expire_transactions() {
    if (_shutting_down) return;
    _txns->refresh_all();  // shared mode: what the other brokers changed
    _txns->expire();
    _txns->remove_expired_ids();
    _loop.add_timer(std::chrono::milliseconds(_cfg.transaction_abort_check_interval_ms),
                    [this] { expire_transactions(); });
}

void broker::sweep_expired_offsets() {
    if (_shutting_down) return;
    if (size_t n = _groups.drop_idle_groups())
        log_info("group", "forgot {} empty groups without committed offsets", n);
    auto expired = _groups.expired_offsets();
    // A consumer group with members keeps its offsets, as Kafka keeps a non-empty group's.
    std::erase_if(expired, [this](const auto& e) { return _consumer_groups.has_members(e.first); });
    if (!expired.empty()) {
        std::vector<catalog::offset_write> writes;
        writes.reserve(expired.size());
        for (const auto& [g, e] : expired) {
            catalog::stored_offset row;
            row.group_id = g;
            row.topic = e.tp.topic;
            row.partition = e.tp.partition;
            row.commit_ms = e.value.commit_ms;
            writes.push_back({catalog::offset_write::kind::erase_if_unchanged, std::move(row)});
        }
        store_offsets(
            std::move(writes), [this, expired = std::move(expired)](const result<void>& r) {
                if (!r) return;
                _groups.erase_expired(expired);
                _groups.drop_idle_groups();
                log_info("group", "{} committed offsets expired (offsets.retention.minutes)",
                         expired.size());
            });
    }
    _loop.add_timer(std::chrono::milliseconds(_cfg.offsets_retention_check_interval_ms),
                    [this] { sweep_expired_offsets(); });
}

void broker::store_offsets(std::vector<catalog::offset_write> writes,
                           std::function<void(result<void>)> fn) {
    _offsets->submit(std::move(writes), std::move(fn));
}

void broker::schedule_groups() {
    auto next = _groups.next_deadline();
    if (auto c = _consumer_groups.next_deadline(); c && (!next || *c < *next)) next = c;
    if (!next || (_group_timer != 0 && _group_timer_at <= *next)) return;
    if (_group_timer != 0) _loop.cancel_timer(_group_timer);
    int64_t now = group::steady_now_ms();
    _group_timer_at = *next;
    _group_timer =
        _loop.add_timer(std::chrono::milliseconds(std::max<int64_t>(0, *next - now)), [this] {
            _group_timer = 0;
            _groups.poll();
            _consumer_groups.poll();
            schedule_groups();
        });
}

void broker::on_accept(size_t listener, int fd, std::string peer) {
    if (_shutting_down) {
        ::close(fd);
        return;
    }
    if (auto why = _connection_quotas.admit(peer_address(peer))) {
        if (uint64_t more = 0; _refusal_log.allow(more))
            log_info("net", "{}: connection refused: {} ({} more refused since the last line)",
                     peer, *why, more);
        ::close(fd);
        return;
    }
    net::connection::callbacks cb;
    cb.on_frame = [this](const std::shared_ptr<net::connection>& c, std::span<uint8_t> frame) {
        auto it = _sessions.find(c->id());
        if (it != _sessions.end()) it->second->on_frame(frame);
    };
    cb.on_close = [this](const std::shared_ptr<net::connection>& c) {
        if (auto it = _sessions.find(c->id()); it != _sessions.end()) {
            count_connection(it->second->listener_cfg(), -1);
            _connection_quotas.release(peer_address(c->peer()));
        }
        _sessions.erase(c->id());
        check_drained();
    };
    const auto& lc = _listeners[listener].cfg;
    auto conn =
        std::make_shared<net::connection>(_loop, fd, std::move(peer), _cfg.max_request_bytes,
                                          std::move(cb), listener_tls(lc), _request_budget);
    conn->set_budget_stall_timeout(std::chrono::milliseconds(_cfg.request_stall_timeout_ms));
    conn->set_idle_timeout(std::chrono::milliseconds(_cfg.connections_max_idle_ms));
    auto sess = std::make_shared<session>(*this, conn, listener);
    _sessions.emplace(conn->id(), sess);
    count_connection(lc, +1);
    log_debug("net", "connection {} from {}", conn->id(), conn->peer());
    conn->start();
}

void broker::wait_for_data(const std::vector<topic_partition>& tps,
                           std::chrono::milliseconds timeout, std::function<bool(bool)> on_event) {
    uint64_t id = _next_waiter++;
    waiter w;
    w.tps = tps;
    w.fn = std::move(on_event);
    w.timer = _loop.add_timer(timeout, [this, id] { finish_waiter(id, true); });
    for (auto& tp : tps) _waiters_by_tp[tp].insert(id);
    _waiters.emplace(id, std::move(w));
}

void broker::finish_waiter(uint64_t id, bool timed_out) {
    auto it = _waiters.find(id);
    if (it == _waiters.end()) return;
    if (!timed_out && !it->second.fn(false)) return;
    auto w = std::move(it->second);
    _waiters.erase(it);
    _loop.cancel_timer(w.timer);
    for (auto& tp : w.tps) {
        auto s = _waiters_by_tp.find(tp);
        if (s == _waiters_by_tp.end()) continue;
        s->second.erase(id);
        if (s->second.empty()) _waiters_by_tp.erase(s);
    }
    if (timed_out) w.fn(true);
}

uint64_t broker::data_version(const std::vector<topic_partition>& tps) const {
    uint64_t v = 0;
    for (const auto& tp : tps)
        if (auto it = _notified.find(tp); it != _notified.end()) v += it->second;
    return v;
}

void broker::notify_data(const std::vector<topic_partition>& tps) {
    std::set<uint64_t> ids;
    for (auto& tp : tps) {
        if (shared()) ++_notified[tp];
        auto it = _waiters_by_tp.find(tp);
        if (it != _waiters_by_tp.end()) ids.insert(it->second.begin(), it->second.end());
    }
    for (uint64_t id : ids) finish_waiter(id, false);
}

void broker::when_durable(log::partition_log* plog, offset_t last_offset,
                          std::function<void(result<void>)> fn) {
    _logs.when_durable(plog, last_offset, [this, fn = std::move(fn)](result<void> r) mutable {
        _loop.post([fn = std::move(fn), r = std::move(r)]() mutable { fn(std::move(r)); });
    });
}

void broker::when_expanded(const topic_partition& tp, offset_t last_offset,
                           std::function<void()> fn) {
    auto* h = _expansions.load();
    if (!h) return fn();
    h->when_expanded(tp, last_offset,
                     [this, fn = std::move(fn)]() mutable { _loop.post(std::move(fn)); });
}

void broker::shutdown(std::function<void()> done) {
    if (_shutting_down) return;
    _shutting_down = true;
    _on_drained = std::move(done);
    for (auto& ls : _listeners) ls.socket->close();
    log_info("broker", "shutting down: {} connections, {} parked requests", _sessions.size(),
             _waiters.size());
    _retention.reset();       // joins the thread; a pass in progress finishes first
    _logs.stop_compaction();  // a throttled pass stops now instead of finishing
    _cleaner.reset();
    _reloader.reset();
    _cluster_poll.reset();
    // Parked joins and syncs answer NOT_COORDINATOR: their clients look again later.
    _groups.shutdown();
    // Parked fetches answer now with what they have.
    std::vector<uint64_t> ids;
    for (auto& [id, _] : _waiters) ids.push_back(id);
    for (auto id : ids) finish_waiter(id, true);
    // In-flight requests get a bounded time to finish (an acks=-1 produce waits for
    // its fsync); then every connection closes.
    _loop.add_timer(std::chrono::seconds(10), [this] {
        for (auto& [_, s] : std::unordered_map(_sessions)) s->close("broker shutting down");
    });
    check_drained();
}

void broker::check_drained() {
    if (!_shutting_down || !_on_drained) return;
    for (auto& [_, s] : _sessions)
        if (!s->idle()) return;
    for (auto& [_, s] : std::unordered_map(_sessions)) s->close("broker shutting down");
    auto done = std::move(_on_drained);
    _on_drained = nullptr;
    _loop.post(std::move(done));
}

}  // namespace sluice::broker
