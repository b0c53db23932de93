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
    const bool changed = ids != _live_ids;
    if (changed) log_info("shared", "live brokers: {}", fmt::join(ids, ", "));
    // A broker left: those of its groups that fall to this one are read from the
    // database before they are served.
    const bool left = std::any_of(_settled_ids.begin(), _settled_ids.end(), [&](int32_t id) {
        return !std::binary_search(ids.begin(), ids.end(), id);
    });
    _live_ids = std::move(ids);
    for (auto& ls : _listeners) ls.brokers = listed;
    _broker_count = _live_ids.size();
    if (_groups_loading) {
        // Moved again before the groups were read: every group placed here is read.
        if (changed) expect_groups({}, 0, std::chrono::milliseconds(0));
    } else if (left) {
        expect_groups(_settled_ids, 0, std::chrono::milliseconds(0));
    } else {
        _settled_ids = _live_ids;
    }
    drop_moved_groups();
}

void broker::join_cluster(shared::broker_registry& registry) {
    _shared.registry = &registry;
    if (auto live = registry.live(); live)
        apply_live_brokers(*live);
    else
        apply_live_brokers({});
    _shared.log->set_incarnation(registry.incarnation());
    // The others coordinate the groups placed here now until they see this broker (at
    // their next poll): what load() read of them may be stale, so they are read again
    // after one poll interval.
    std::vector<int32_t> others;
    for (int32_t id : _live_ids)
        if (id != registry.address().broker_id) others.push_back(id);
    if (!others.empty()) {
        expect_groups(std::move(others), 2, _shared.poll_interval);
    } else if (_stores.group_fence) {
        // Alone: no other broker serves them, so the groups placed here are taken now,
        // before this broker serves (their coordinator epochs, then their state again).
        take_groups_now();
    }
    shared::broker_registry::lease_events events;
    // The database out of reach for a whole lease: the others count this broker out, so it
    // stops serving as a member (member() is false; produce, fetch and ListOffsets answer
    // NOT_LEADER_OR_FOLLOWER) and renewing goes on.
    // Its groups were placed on the others meanwhile: forgotten here (group requests
    // answer COORDINATOR_NOT_AVAILABLE while the lease is lost).
    events.lost = [this](const error&) { _loop.post([this] { drop_moved_groups(true); }); };
    events.regained = [this](int64_t incarnation) {
        _shared.log->set_incarnation(incarnation);
        _rejoined.store(true, std::memory_order_release);
        // The others coordinated its groups meanwhile and stop once they see it again:
        // every group placed here is read from the database after one poll interval.
        _loop.post([this] {
            drop_moved_groups(true);
            expect_groups({}, 2, _shared.poll_interval);
        });
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

}  // namespace sluice::broker
