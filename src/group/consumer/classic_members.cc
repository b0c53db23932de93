// Classic-protocol members of a consumer group, and online migration between the two
// protocols (KIP-848; Kafka's GroupMetadataManager: convertToConsumerGroup,
// classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
// classicGroupHeartbeatToConsumerGroup, convertToClassicGroup).
//
// A consumer-protocol member joining a classic group that has members converts it: each
// classic member keeps its id, its partitions and the generation as its member epoch,
// and the target assignment is recomputed with the newcomer. Classic members then move
// towards their target by joining again whenever their heartbeat says
// REBALANCE_IN_PROGRESS; the broker assigns them (no leader). When the last
// consumer-protocol member leaves, the remaining classic members go back to the classic
// coordinator, which rebalances them.

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "common/logging.h"
#include "group/consumer/coordinator.h"
#include "group/consumer/group_data.h"
#include "group/consumer_protocol.h"

namespace sluice::group::consumer {
namespace {

constexpr const char* consumer_protocol_type = "consumer";

std::string random_member_id(const std::string& client_id) {
    static std::mt19937_64 gen{std::random_device{}()};
    return fmt::format("{}-{:016x}{:016x}", client_id, gen(), gen());
}

join_result join_error(error_code e, const std::string& member_id) {
    join_result r;
    r.error = e;
    r.member_id = member_id;
    return r;
}

// The protocol every classic member (but `except`) supports, in `first`'s order.
std::optional<std::string> common_protocol(
    const std::map<std::string, coordinator::member_data>& members, const std::string& except,
    const std::vector<protocol_entry>& first) {
    for (const auto& p : first) {
        bool everyone = true;
        for (const auto& [id, m] : members) {
            if (id == except || !m.classic) continue;
            const auto& ps = m.classic->protocols;
            if (std::none_of(ps.begin(), ps.end(), [&](const auto& q) { return q.name == p.name; }))
                everyone = false;
        }
        if (everyone) return p.name;
    }
    return std::nullopt;
}

}  // namespace

coordinator::group_data* coordinator::upgrade(const stored_group& classic, std::string& why) {
    why = fmt::format("Group {} is not a consumer group.", classic.group_id);
    if (!_cfg.migration_upgrade()) return nullptr;  // group.consumer.migration.policy
    if (classic.protocol_type != consumer_protocol_type) return nullptr;
    if (classic.members.size() > static_cast<size_t>(_cfg.max_group_size)) return nullptr;
    auto g = std::make_unique<group_data>();
    g->id = classic.group_id;
    g->group_epoch = g->assignment_epoch = classic.generation;
    g->assignor = _cfg.consumer_assignors.empty() ? std::string(uniform_assignor)
                                                  : _cfg.consumer_assignors.front();
    for (const auto& sm : classic.members) {
        const protocol_entry* chosen = nullptr;
        for (const auto& p : sm.protocols)
            if (!chosen || (classic.protocol_name && p.name == *classic.protocol_name)) chosen = &p;
        auto sub = chosen ? parse_subscription(chosen->metadata) : std::nullopt;
        auto assigned = parse_assignment(sm.assignment);
        if (!sub || !assigned) {
            why = fmt::format(
                "Cannot upgrade the classic group {} to consumer group because the "
                "embedded consumer protocol is malformed.",
                classic.group_id);
            return nullptr;
        }
        member_data& m = g->members[sm.member_id];
        m.id = sm.member_id;
        m.instance_id = sm.instance_id;
        m.rack_id = sub->rack_id;
        m.client_id = sm.client_id;
        m.client_host = sm.client_host;
        m.rebalance_timeout_ms = sm.rebalance_timeout_ms;
        m.subscribed_topics = sub->topics;
        std::sort(m.subscribed_topics.begin(), m.subscribed_topics.end());
        m.subscribed_topics.erase(
            std::unique(m.subscribed_topics.begin(), m.subscribed_topics.end()),
            m.subscribed_topics.end());
        m.classic =
            member_data::classic_metadata{sm.session_timeout_ms, sm.protocols, sub->version};
        m.current.member_epoch = m.current.previous_epoch = classic.generation;
        m.current.assigned = *assigned;
        g->target[m.id] = *assigned;
        if (m.instance_id) g->static_members[*m.instance_id] = m.id;
    }
    _classic->release_members(classic.group_id);
    auto& slot = _groups[classic.group_id];
    slot = std::move(g);
    group_data& placed = *slot;
    placed.subscribed = subscribed_sizes(placed);
    for (auto& [id, m] : placed.members) refresh_session(placed, m);
    log_info("group",
             "group '{}' generation {}: converted to a consumer group with {} classic "
             "members (online upgrade)",
             placed.id, classic.generation, placed.members.size());
    return &placed;
}

bool coordinator::maybe_downgrade(group_data& g, const std::string& leaving) {
    if (!_classic || !_cfg.migration_downgrade() || g.members.size() <= 1) return false;
    for (const auto& [id, m] : g.members)
        if (id != leaving && !m.classic) return false;
    auto first = std::find_if(g.members.begin(), g.members.end(),
                              [&](const auto& e) { return e.first != leaving; });
    auto protocol = common_protocol(g.members, "", first->second.classic->protocols);
    stored_group s;
    s.group_id = g.id;
    s.state = group_state::preparing_rebalance;  // every member joins again
    s.protocol_type = consumer_protocol_type;
    s.protocol_name = protocol;
    s.generation = g.group_epoch;
    s.leader = first->first;
    s.state_ms = _clock.wall_ms();
    for (auto& [id, m] : g.members) {
        disarm(timer_kind::session, g, id, m.session_deadline);
        disarm(timer_kind::revocation, g, id, m.revocation_deadline);
        if (id == leaving) continue;
        auto& sm = s.members.emplace_back();
        sm.member_id = id;
        sm.instance_id = m.instance_id;
        sm.client_id = m.client_id;
        sm.client_host = m.client_host;
        sm.session_timeout_ms = m.classic->session_timeout_ms;
        sm.rebalance_timeout_ms = m.rebalance_timeout_ms;
        sm.protocols = m.classic->protocols;
        sm.assignment = serialize_assignment(m.current.assigned, m.classic->subscription_version);
    }
    log_info("group",
             "consumer group '{}' epoch {}: member {} was the last using the consumer "
             "protocol; back to a classic group (online downgrade)",
             g.id, g.group_epoch, leaving);
    std::string id = g.id;
    if (_writer) {
        group_write w{group_write::kind::erase_consumer, {}, {}};
        w.consumer.group_id = id;
        _writer->write(std::move(w), [id](const result<void>& r) {
            if (!r)
                log_error("group", "consumer group '{}': erasing its stored state: {}", id,
                          r.err().message);
        });
    }
    _groups.erase(id);
    _classic->adopt(s);
    return true;
}

coordinator::member_data* coordinator::classic_member(group_data& g, const member_ref& ref,
                                                      error_code& err) {
    err = error_code::none;
    std::string id = ref.member_id;
    if (ref.instance_id) {
        auto s = g.static_members.find(*ref.instance_id);
        if (s == g.static_members.end()) {
            err = error_code::unknown_member_id;
            return nullptr;
        }
        if (s->second != ref.member_id) {
            err = error_code::fenced_instance_id;
            return nullptr;
        }
    }
    auto it = g.members.find(id);
    // A member that does not use the classic protocol is not known to it.
    if (it == g.members.end() || !it->second.classic) {
        err = error_code::unknown_member_id;
        return nullptr;
    }
    return &it->second;
}

void coordinator::classic_join(join_request req, join_callback cb) {
    group_data* gp = find(req.group_id);
    if (!gp) return cb(join_error(error_code::unknown_member_id, req.member_id));
    group_data& g = *gp;
    if (req.session_timeout_ms < _cfg.min_session_timeout_ms ||
        req.session_timeout_ms > _cfg.max_session_timeout_ms)
        return cb(join_error(error_code::invalid_session_timeout, req.member_id));
    const bool unknown = req.member_id.empty();
    std::string member_id = unknown ? random_member_id(req.client_id) : req.member_id;
    if (!g.members.count(member_id) && g.members.size() >= static_cast<size_t>(_cfg.max_group_size))
        return cb(join_error(error_code::group_max_size_reached, member_id));
    // Kafka's throwIfClassicProtocolIsNotSupported.
    if (req.protocol_type != consumer_protocol_type || req.protocols.empty() ||
        !common_protocol(g.members, member_id, req.protocols))
        return cb(join_error(error_code::inconsistent_group_protocol, req.member_id));
    if (unknown && req.require_known_member_id && !req.instance_id)
        return cb(join_error(error_code::member_id_required, member_id));
    auto sub = parse_subscription(req.protocols.front().metadata);
    if (!sub) return cb(join_error(error_code::inconsistent_group_protocol, req.member_id));

    bool created = false;
    if (req.instance_id) {
        auto s = g.static_members.find(*req.instance_id);
        if (s != g.static_members.end() && s->second != member_id) {
            if (!unknown) return cb(join_error(error_code::fenced_instance_id, member_id));
            // The static member comes back under a new id, keeping its place.
            auto old = g.members.extract(s->second);
            if (!old.empty()) {
                disarm(timer_kind::session, g, old.mapped().id, old.mapped().session_deadline);
                disarm(timer_kind::revocation, g, old.mapped().id,
                       old.mapped().revocation_deadline);
                auto t = g.target.extract(old.key());
                old.key() = member_id;
                old.mapped().id = member_id;
                g.members.insert(std::move(old));
                if (!t.empty()) {
                    t.key() = member_id;
                    g.target.insert(std::move(t));
                }
            }
        }
    }
    auto [it, inserted] = g.members.try_emplace(member_id);
    member_data& m = it->second;
    if (inserted) {
        m.id = member_id;
        created = true;
        log_info("group", "consumer group '{}': classic member {} joins", g.id, member_id);
    }
    m.instance_id = req.instance_id;
    if (m.instance_id) g.static_members[*m.instance_id] = m.id;
    const member_assignment before = m.current;
    bool changed = created;
    if (sub->rack_id && m.rack_id != sub->rack_id) m.rack_id = sub->rack_id, changed = true;
    if (req.rebalance_timeout_ms > 0 && req.rebalance_timeout_ms != m.rebalance_timeout_ms)
        m.rebalance_timeout_ms = req.rebalance_timeout_ms, changed = true;
    m.server_assignor.reset();
    m.client_id = req.client_id;
    m.client_host = req.client_host;
    m.classic = member_data::classic_metadata{req.session_timeout_ms, req.protocols, sub->version};
    auto topics = sub->topics;
    std::sort(topics.begin(), topics.end());
    topics.erase(std::unique(topics.begin(), topics.end()), topics.end());
    bool bump = created;
    if (topics != m.subscribed_topics || m.subscribed_regex) {
        m.subscribed_topics = std::move(topics);
        m.subscribed_regex.reset();
        bump = true;
    }
    topic_sizes sizes = subscribed_sizes(g);
    if (sizes != g.subscribed) bump = true;
    if (bump) {
        g.group_epoch++;
        g.subscribed = std::move(sizes);
        compute_target(g);
        changed = true;
    }
    refresh_session(g, m);
    reconcile_member(g, m, sub->owned);
    if (!(m.current == before)) changed = true;
    finish_classic_join(g, m, changed, std::move(cb));
}

void coordinator::finish_classic_join(group_data& g, member_data& m, bool changed,
                                      join_callback cb) {
    join_result r;
    r.member_id = m.id;
    r.generation = m.current.member_epoch;
    r.protocol_type = consumer_protocol_type;
    r.protocol_name = m.classic->protocols.front().name;
    // No leader: the broker assigns (the member sends an empty SyncGroup).
    if (!changed) return cb(r);
    g.state_ms = _clock.wall_ms();
    store(g, [cb = std::move(cb), r](const result<void>& stored) {
        if (!stored) return cb(join_error(write_failure_code(stored.err()), r.member_id));
        cb(r);
    });
}

void coordinator::classic_sync(const sync_request& req, const sync_callback& cb) {
    sync_result r;
    group_data* g = find(req.group_id);
    error_code e = error_code::unknown_member_id;
    member_data* m =
        g ? classic_member(*g, {req.member_id, req.instance_id, req.generation}, e) : nullptr;
    if (!m) {
        r.error = e;
        return cb(r);
    }
    if (req.generation != m->current.member_epoch) {
        r.error = error_code::illegal_generation;
    } else if ((req.protocol_type && *req.protocol_type != consumer_protocol_type) ||
               (req.protocol_name && *req.protocol_name != m->classic->protocols.front().name)) {
        r.error = error_code::inconsistent_group_protocol;
    } else if (g->group_epoch > m->current.member_epoch &&
               m->current.state != member_state::unrevoked_partitions) {
        // A newer epoch came meanwhile: join again to catch up.
        r.error = error_code::rebalance_in_progress;
    } else {
        refresh_session(*g, *m);
        r.protocol_type = req.protocol_type;
        r.protocol_name = req.protocol_name;
        r.assignment = serialize_assignment(m->current.assigned, m->classic->subscription_version);
    }
    cb(r);
}

error_code coordinator::classic_heartbeat(const std::string& group_id, const member_ref& ref) {
    group_data* g = find(group_id);
    if (!g) return error_code::unknown_member_id;
    error_code e;
    member_data* m = classic_member(*g, ref, e);
    if (!m) return e;
    if (ref.generation != m->current.member_epoch) return error_code::illegal_generation;
    refresh_session(*g, *m);
    // It joins again when the group moved on, when it has partitions to give up, or when
    // what it waits for has been released (Kafka's three conditions).
    auto waiting = [&] {
        const partition_map& target = g->target[m->id];
        for (const auto& [t, ps] : minus(target, m->current.assigned))
            for (int32_t p : ps)
                if (g->owned_by_other(m->id, t, p)) return true;
        return false;
    };
    if (m->current.member_epoch < g->group_epoch ||
        m->current.state == member_state::unrevoked_partitions ||
        (m->current.state == member_state::unreleased_partitions && !waiting()))
        return error_code::rebalance_in_progress;
    return error_code::none;
}

error_code coordinator::classic_leave(const std::string& group_id, const member_ref& ref) {
    group_data* g = find(group_id);
    if (!g) return error_code::unknown_member_id;
    std::string id = ref.member_id;
    if (ref.instance_id) {
        // LeaveGroup v3+ may name a static member by instance id alone.
        auto s = g->static_members.find(*ref.instance_id);
        if (s == g->static_members.end()) return error_code::unknown_member_id;
        if (!id.empty() && id != s->second) return error_code::fenced_instance_id;
        id = s->second;
    }
    if (!g->members.count(id)) return error_code::unknown_member_id;
    if (maybe_downgrade(*g, id)) return error_code::none;
    remove_member(*g, id, "left the group (LeaveGroup)");
    g->state_ms = _clock.wall_ms();
    store(*g, nullptr);
    return error_code::none;
}

}  // namespace sluice::group::consumer
