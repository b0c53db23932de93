// The broker in shared mode (shared_mode.h, docs/shared-mode.md): partitions from the
// shared log, the live brokers and the topics read again periodically, placement.

#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/ranges.h>

#include "broker/broker.h"
#include "common/logging.h"
#include "shared/placement.h"

namespace sluice::broker {

void log_shared_unsupported(const std::string& client, std::string_view what) {
    log_warn("shared", "{}: shared mode does not support {} yet", client, what);
}

void broker::set_shared(shared_mode s) {
    _shared = s;
    _share_work.set_log(s.log);
    _cluster_id = _shared.topics->cluster_id();
    // Commits of any broker wake the fetches parked here (long polls).
    _shared.log->set_commit_listener(
        [this](const std::vector<std::pair<std::string, int32_t>>& moved, bool all) {
            _loop.post([this, moved, all] {
                std::vector<topic_partition> tps;
                if (all) {
                    for (const auto& [tp, _] : _waiters_by_tp) tps.push_back(tp);
                } else {
                    for (const auto& [id, p] : moved) {
                        auto uuid = shared::topic_id_from_hex(id);
                        const topic_state* t = uuid ? _topics.find(*uuid) : nullptr;
                        if (t) tps.push_back({t->info.name, p});
                    }
                }
                if (tps.empty()) return;
                // Expansions read what any broker committed (a reconnected listener's
                // `all` is caught by their own poll of the high watermarks).
                if (auto* h = _expansions.load(); h && !all) h->on_high_watermark(tps);
                notify_data(tps);
            });
        });
}

bool broker::member() const {
    return !shared() || !_shared.registry || _shared.registry->member();
}

log::partition_store* broker::partition(const topic_state& t, int32_t p) {
    if (!shared()) return _logs.get(t.info.name, p);
    if (p < 0 || p >= t.info.partitions) return nullptr;
    return &_shared.log->partition(shared::topic_id_hex(t.info.id), {t.info.name, p});
}

int32_t broker::leader_for(const topic_state& t, int32_t p) const {
    if (!shared() || _live_ids.empty()) return leader_for(p);
    auto key = shared::partition_key(shared::topic_id_hex(t.info.id), p);
    return shared::place(key, _live_ids).value_or(_live_ids.front());
}

const advertised_broker& broker::coordinator_for(size_t listener, const std::string& key,
                                                 bool transaction) const {
    const auto& list = _listeners[listener].brokers;
    if (!shared() || _live_ids.empty()) return list[std::hash<std::string>{}(key) % list.size()];
    auto id = shared::place(transaction ? shared::transaction_key(key) : shared::group_key(key),
                            _live_ids);
    for (const auto& b : list)
        if (id && b.node_id == *id) return b;
    return list.front();
}

bool broker::coordinates_txn(const std::string& transactional_id) const {
    if (!shared()) return true;
    if (!_shared.registry) return false;  // not serving yet
    auto id = shared::place(shared::transaction_key(transactional_id), _live_ids);
    return id && *id == _shared.registry->address().broker_id;
}

void broker::announce_txn_offsets() {
    if (auto r = _shared.log->bump_change_version("txn_offsets"); !r)
        log_warn("shared", "announcing transactional offsets: {}", r.err().message);
}

void broker::apply_live_brokers(const std::vector<shared::live_broker>& live) {
    std::vector<int32_t> ids;
    std::vector<advertised_broker> listed;
    for (const auto& l : live) {
        ids.push_back(l.address.broker_id);
        listed.push_back({l.address.broker_id, {l.address.host, l.address.kafka_port}});
    }
    // This broker stays listed while it serves, even before its lease shows (or after a
    // renewal was missed): clients bootstrapped here must find it.
    const auto& self = _shared.registry->address();
    if (std::find(ids.begin(), ids.end(), self.broker_id) == ids.end()) {
        ids.push_back(self.broker_id);
        listed.push_back({self.broker_id, {self.host, self.kafka_port}});
    }
    std::sort(ids.begin(), ids.end());
    std::sort(listed.begin(), listed.end(),
              [](const auto& a, const auto& b) { return a.node_id < b.node_id; });
    if (ids != _live_ids) log_info("shared", "live brokers: {}", fmt::join(ids, ", "));
    _live_ids = std::move(ids);
    for (auto& ls : _listeners) ls.brokers = listed;
    _broker_count = _live_ids.size();
}

void broker::join_cluster(shared::broker_registry& registry) {
    _shared.registry = &registry;
    if (auto live = registry.live(); live)
        apply_live_brokers(*live);
    else
        apply_live_brokers({});
    _shared.log->set_incarnation(registry.incarnation());
    shared::broker_registry::lease_events events;
    // The database out of reach for a whole lease: the others count this broker out, so it
    // stops serving as a member (member() is false; produce, fetch and ListOffsets answer
    // NOT_LEADER_OR_FOLLOWER) and renewing goes on.
    events.lost = [](const error&) {};
    events.regained = [this](int64_t incarnation) {
        _shared.log->set_incarnation(incarnation);
        // Its groups may have moved away and back meanwhile: read the committed offsets
        // again (newer commits only are taken).
        _rejoined.store(true, std::memory_order_release);
    };
    events.fenced = [](const error& e) {
        log_error("shared", "this broker's id was taken by another process; exiting: {}",
                  e.message);
        // Serving on could answer for partitions and groups that moved.
        std::_Exit(3);
    };
    registry.start_renewing(std::move(events));
    _cluster_poll =
        std::make_unique<periodic_thread>(_shared.poll_interval, [this] { poll_cluster(); });
}

// The committed offsets in the database, by group: read when a broker leaves, since its
// groups now fall to others, which hold them as they were when they started. `store` is
// opened at the first use and kept (poll thread only).
std::map<std::string, std::vector<group::offset_entry>> load_committed(
    const metadata_stores& stores, std::unique_ptr<catalog::offset_store>& store) {
    std::map<std::string, std::vector<group::offset_entry>> by_group;
    if (!store) {
        auto opened = stores.open_offsets();
        if (!opened) {
            log_warn("shared", "cannot read committed offsets: {}", opened.err().message);
            return by_group;
        }
        store = std::move(*opened);
    }
    auto rows = store->load();
    if (!rows) {
        log_warn("shared", "cannot read committed offsets: {}", rows.err().message);
        return by_group;
    }
    for (auto& r : *rows) {
        group::committed_offset v{r.offset, r.leader_epoch, std::move(r.metadata), r.commit_ms,
                                  r.expire_ms};
        by_group[r.group_id].push_back({{std::move(r.topic), r.partition}, std::move(v)});
    }
    return by_group;
}

void broker::poll_cluster() {
    auto live = _shared.registry->live();
    if (!live) log_warn("shared", "cannot read the live brokers: {}", live.err().message);
    std::optional<std::map<std::string, std::vector<group::offset_entry>>> offsets;
    if (live) {
        std::vector<int32_t> ids;
        for (const auto& l : *live) ids.push_back(l.address.broker_id);
        std::sort(ids.begin(), ids.end());
        const bool left = std::any_of(_polled_ids.begin(), _polled_ids.end(), [&](int32_t id) {
            return !std::binary_search(ids.begin(), ids.end(), id);
        });
        // A transaction's offsets committed by another broker's coordinator, too.
        auto txn_offsets = _shared.log->change_version("txn_offsets");
        const bool moved = txn_offsets && *txn_offsets != _txn_offsets_seen;
        if (left || moved || _rejoined.exchange(false, std::memory_order_acq_rel))
            offsets = load_committed(_stores, _reload_store);
        if (moved) _txn_offsets_seen = *txn_offsets;
        _polled_ids = std::move(ids);
    }
    auto changed = _shared.topics->refresh();
    if (!changed) log_warn("shared", "cannot read the topics: {}", changed.err().message);
    const bool topics_changed = changed && *changed;
    _loop.post([this, live = live ? std::optional(std::move(*live)) : std::nullopt, topics_changed,
                offsets = std::move(offsets)] {
        if (_shutting_down) return;
        if (live) apply_live_brokers(*live);
        if (topics_changed) _topics.sync();
        if (!offsets) return;
        const int32_t self = _shared.registry->address().broker_id;
        size_t n = 0;
        for (const auto& [g, entries] : *offsets) {
            if (shared::place(shared::group_key(g), _live_ids) != self) continue;
            // A commit made here since the read is newer than what was read.
            std::vector<group::offset_entry> newer;
            for (const auto& e : entries) {
                auto held = _groups.committed(g, e.tp);
                if (!held || held->commit_ms < e.value.commit_ms) newer.push_back(e);
            }
            _groups.restore(g, newer);
            n += newer.empty() ? 0 : 1;
        }
        if (n) log_info("shared", "took the committed offsets of {} groups placed here", n);
    });
}

}  // namespace sluice::broker
