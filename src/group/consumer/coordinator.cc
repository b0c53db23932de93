// ConsumerGroupHeartbeat: joining, heartbeats, leaving, the target assignment and each
// member's reconciliation (KIP-848, following Kafka's GroupMetadataManager).

#include "group/consumer/coordinator.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "common/logging.h"
#include "group/consumer/group_data.h"
#include "group/group_configs.h"

namespace sluice::group::consumer {
namespace {

heartbeat_result failure(error_code e, std::string message, const heartbeat_request& req) {
    heartbeat_result r;
    r.error = e;
    r.message = std::move(message);
    r.member_id = req.member_id;
    r.member_epoch = req.member_epoch;
    return r;
}

// Kafka parses subscribed_topic_regex with RE2/J; std::regex's ECMAScript grammar accepts
// the same common syntax (classes, alternation, repetition, anchors), refuses RE2's
// (?P<name>) groups and (?i) flags, reads \pL as "pL", and has backreferences RE2 lacks
// (docs/compatibility.md).
std::optional<std::regex> compile(const std::string& pattern) {
    try {
        return std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
        return std::nullopt;
    }
}

}  // namespace

coordinator::coordinator(config cfg, const topic_view& topics, clock_source clock)
    : _cfg(std::move(cfg)), _topics(topics), _clock(std::move(clock)) {}

coordinator::~coordinator() = default;

coordinator::group_data* coordinator::find(const std::string& id) const {
    auto it = _groups.find(id);
    return it == _groups.end() ? nullptr : it->second.get();
}

// Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
std::optional<heartbeat_result> coordinator::validate(heartbeat_request& req) const {
    auto invalid = [&](const std::string& m) {
        return failure(error_code::invalid_request, m, req);
    };
    if (req.group_id.empty()) return invalid("GroupId can't be empty.");
    if (req.instance_id && req.instance_id->empty()) return invalid("InstanceId can't be empty.");
    if (req.rack_id && req.rack_id->empty()) return invalid("RackId can't be empty.");
    if (req.member_id.empty() && (req.version >= 1 || req.member_epoch != 0))
        return invalid("MemberId can't be empty.");
    if (req.member_epoch == 0) {
        if (req.rebalance_timeout_ms == -1)
            return invalid("RebalanceTimeoutMs must be provided in first request.");
        if (!req.owned || !req.owned->empty())
            return invalid("TopicPartitions must be empty when (re-)joining.");
        if (!req.subscribed_topic_names && !req.subscribed_topic_regex)
            return invalid(
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.");
    } else if (req.member_epoch == static_leave_epoch) {
        if (!req.instance_id)
            return invalid("InstanceId can't be null when leaving with epoch -2.");
    } else if (req.member_epoch < static_leave_epoch) {
        return invalid(fmt::format("MemberEpoch {} is invalid.", req.member_epoch));
    }
    if (req.server_assignor && !req.server_assignor->empty() &&
        std::find(_cfg.consumer_assignors.begin(), _cfg.consumer_assignors.end(),
                  *req.server_assignor) == _cfg.consumer_assignors.end())
        return failure(error_code::unsupported_assignor,
                       fmt::format("ServerAssignor {} is not supported. Supported assignors: {}.",
                                   *req.server_assignor, fmt::join(_cfg.consumer_assignors, ", ")),
                       req);
    if (req.subscribed_topic_regex && !req.subscribed_topic_regex->empty() &&
        !compile(*req.subscribed_topic_regex))
        return failure(error_code::invalid_regular_expression,
                       fmt::format("SubscribedTopicRegex `{}` is not a valid regular expression.",
                                   *req.subscribed_topic_regex),
                       req);
    return std::nullopt;
}

void coordinator::heartbeat(heartbeat_request req, heartbeat_callback cb) {
    if (auto bad = validate(req)) return cb(*bad);
    if (req.member_epoch == leave_epoch || req.member_epoch == static_leave_epoch) {
        group_data* g = find(req.group_id);
        if (!g)
            return cb(failure(error_code::group_id_not_found,
                              fmt::format("Group {} not found.", req.group_id), req));
        return leave(*g, req, cb);
    }
    group_data* existing = find(req.group_id);
    if (!existing) {
        if (req.member_epoch != 0)
            return cb(failure(error_code::group_id_not_found,
                              fmt::format("Consumer group {} not found.", req.group_id), req));
        if (auto classic = _classic ? _classic->members_of(req.group_id) : std::nullopt) {
            // Online upgrade (KIP-848): the classic members carry on in a consumer group.
            std::string why;
            existing = upgrade(*classic, why);
            if (!existing) return cb(failure(error_code::group_id_not_found, why, req));
        }
    }
    if (!existing) {
        auto& slot = _groups[req.group_id];
        slot = std::make_unique<group_data>();
        slot->id = req.group_id;
        slot->assignor = _cfg.consumer_assignors.empty() ? std::string(uniform_assignor)
                                                         : _cfg.consumer_assignors.front();
        existing = slot.get();
    }
    group_data& g = *existing;
    bool created = false;
    heartbeat_result err;
    member_data* mp = member_for(g, req, created, err);
    if (!mp) return cb(err);
    member_data& m = *mp;
    const member_assignment before = m.current;
    bool changed = created || req.member_epoch == 0;  // every join is written
    if (m.rack_id != req.rack_id && req.rack_id) m.rack_id = req.rack_id, changed = true;
    if (m.client_id != req.client_id || m.client_host != req.client_host) {
        m.client_id = req.client_id;
        m.client_host = req.client_host;
        changed = true;
    }
    if (req.rebalance_timeout_ms > 0 && req.rebalance_timeout_ms != m.rebalance_timeout_ms) {
        m.rebalance_timeout_ms = req.rebalance_timeout_ms;
        changed = true;
    }
    bool bump = created;
    if (update_subscription(m, req)) bump = changed = true;
    topic_sizes sizes = subscribed_sizes(g);
    if (sizes != g.subscribed) bump = true;
    if (bump) {
        g.group_epoch++;
        g.subscribed = std::move(sizes);
        compute_target(g);
        changed = true;
    }
    refresh_session(g, m);
    reconcile_member(g, m, req.owned);
    if (!(m.current == before)) changed = true;

    heartbeat_result r;
    r.member_id = m.id;
    r.member_epoch = m.current.member_epoch;
    r.heartbeat_interval_ms = _group_configs
                                  ? _group_configs->consumer_heartbeat_interval_ms(g.id, _cfg)
                                  : _cfg.consumer_heartbeat_interval_ms;
    // The assignment travels on a full request (a join, or one carrying the rebalance
    // timeout, the subscription and what it owns) or when it changed, as Kafka sends it.
    const bool full = req.member_epoch == 0 ||
                      (req.rebalance_timeout_ms != -1 && req.subscribed_topic_names && req.owned);
    if (created || full || !(m.current.assigned == before.assigned))
        r.assignment = m.current.assigned;
    if (!changed) return cb(r);
    g.state_ms = _clock.wall_ms();
    store(g, [cb = std::move(cb), r](const result<void>& stored) mutable {
        if (!stored) {
            heartbeat_result e;
            e.error = write_failure_code(stored.err());
            e.message = "the group state could not be stored: " + stored.err().message;
            e.member_id = r.member_id;
            return cb(e);
        }
        cb(r);
    });
}

coordinator::member_data* coordinator::member_for(group_data& g, heartbeat_request& req,
                                                  bool& created, heartbeat_result& err) {
    if (req.member_epoch != 0) {
        auto it = g.members.find(req.member_id);
        if (it == g.members.end()) {
            err = failure(
                error_code::unknown_member_id,
                fmt::format("Member {} is not a member of group {}.", req.member_id, g.id), req);
            return nullptr;
        }
        member_data& m = it->second;
        int32_t cur = m.current.member_epoch;
        bool previous_ok = req.member_epoch == m.current.previous_epoch &&
                           (!req.owned || minus(*req.owned, m.current.assigned).empty());
        if (req.member_epoch != cur && !previous_ok) {
            err = failure(error_code::fenced_member_epoch,
                          fmt::format("The consumer group member has a member epoch ({}) that "
                                      "does not match the one the coordinator has ({}).",
                                      req.member_epoch, cur),
                          req);
            return nullptr;
        }
        return &m;
    }
    if (req.member_id.empty()) {  // v0: the coordinator names the member
        req.member_id = fmt::format("{}-{}-{}", req.client_id, g.id, _clock.steady_ms());
        while (g.members.count(req.member_id)) req.member_id += "-";
    }
    if (req.instance_id) {
        auto s = g.static_members.find(*req.instance_id);
        if (s != g.static_members.end() && s->second != req.member_id) {
            auto old = g.members.find(s->second);
            if (old != g.members.end() && old->second.current.member_epoch != static_leave_epoch) {
                err = failure(error_code::unreleased_instance_id,
                              fmt::format("Static member {} with instance id {} is still "
                                          "active.",
                                          s->second, *req.instance_id),
                              req);
                return nullptr;
            }
            if (old != g.members.end()) {
                // The static member comes back under a new id: it takes over the old
                // member's epoch and partitions, without a rebalance (KIP-848).
                member_data m = std::move(old->second);
                disarm(timer_kind::session, g, m.id, m.session_deadline);
                disarm(timer_kind::revocation, g, m.id, m.revocation_deadline);
                std::string old_id = m.id;
                g.members.erase(old);
                auto t = g.target.extract(old_id);
                m.id = req.member_id;
                m.current.member_epoch = m.current.previous_epoch > 0 ? m.current.previous_epoch
                                                                      : m.current.member_epoch;
                if (!t.empty()) {
                    t.key() = m.id;
                    g.target.insert(std::move(t));
                }
                log_info("group", "consumer group '{}': static member '{}' is back as {} (was {})",
                         g.id, *req.instance_id, m.id, old_id);
                g.static_members[*req.instance_id] = m.id;
                auto& placed = g.members[m.id] = std::move(m);
                // What it owned it must report again: its assignment is sent in full.
                return &placed;
            }
        }
    }
    auto it = g.members.find(req.member_id);
    if (it != g.members.end()) {
        // Rejoining with epoch 0: it owns nothing now (it said so), and starts over.
        member_data& m = it->second;
        disarm(timer_kind::revocation, g, m.id, m.revocation_deadline);
        m.current = member_assignment{};
        return &m;
    }
    if (g.members.size() >= static_cast<size_t>(_cfg.max_group_size)) {
        err = failure(error_code::group_max_size_reached,
                      fmt::format("The consumer group has reached its maximum capacity of {} "
                                  "members.",
                                  _cfg.max_group_size),
                      req);
        return nullptr;
    }
    member_data& m = g.members[req.member_id];
    m.id = req.member_id;
    m.instance_id = req.instance_id;
    if (m.instance_id) g.static_members[*m.instance_id] = m.id;
    created = true;
    log_info("group", "consumer group '{}': member {} joins", g.id, m.id);
    return &m;
}

bool coordinator::update_subscription(member_data& m, const heartbeat_request& req) {
    bool changed = false;
    if (req.subscribed_topic_names) {
        auto names = *req.subscribed_topic_names;
        std::sort(names.begin(), names.end());
        names.erase(std::unique(names.begin(), names.end()), names.end());
        if (names != m.subscribed_topics) m.subscribed_topics = std::move(names), changed = true;
    }
    if (req.subscribed_topic_regex) {
        std::optional<std::string> re;
        if (!req.subscribed_topic_regex->empty()) re = req.subscribed_topic_regex;
        if (re != m.subscribed_regex) m.subscribed_regex = std::move(re), changed = true;
    }
    if (req.server_assignor) {
        std::optional<std::string> a;
        if (!req.server_assignor->empty()) a = req.server_assignor;
        if (a != m.server_assignor) m.server_assignor = std::move(a), changed = true;
    }
    return changed;
}

// The subscribed topics that exist, with their partition counts: by name, and every
// topic a member's regex matches in full (as Kafka's RE2/J matches()).
topic_sizes coordinator::subscribed_sizes(const group_data& g) const {
    topic_sizes out;
    std::vector<std::string> all;
    bool listed = false;
    for (const auto& [id, m] : g.members) {
        for (const auto& t : m.subscribed_topics)
            if (auto n = _topics.partitions(t)) out[t] = *n;
        if (!m.subscribed_regex) continue;
        auto re = compile(*m.subscribed_regex);
        if (!re) continue;
        if (!listed) all = _topics.names(), listed = true;
        for (const auto& t : all)
            if (std::regex_match(t, *re))
                if (auto n = _topics.partitions(t)) out[t] = *n;
    }
    return out;
}

void coordinator::compute_target(group_data& g) {
    // The assignor most members ask for (ties: the first in group.consumer.assignors),
    // else the default.
    std::map<std::string, int> votes;
    for (const auto& [id, m] : g.members)
        if (m.server_assignor) votes[*m.server_assignor]++;
    std::string chosen = _cfg.consumer_assignors.empty() ? std::string(uniform_assignor)
                                                         : _cfg.consumer_assignors.front();
    int best = 0;
    for (const auto& name : _cfg.consumer_assignors) {
        auto it = votes.find(name);
        if (it != votes.end() && it->second > best) chosen = name, best = it->second;
    }
    std::vector<assignor_member> in;
    std::vector<std::string> all;
    bool listed = false;
    for (const auto& [id, m] : g.members) {
        auto& am = in.emplace_back();
        am.member_id = id;
        for (const auto& t : m.subscribed_topics)
            if (g.subscribed.count(t)) am.topics.insert(t);
        if (m.subscribed_regex) {
            if (auto re = compile(*m.subscribed_regex)) {
                if (!listed) all = _topics.names(), listed = true;
                for (const auto& t : all)
                    if (g.subscribed.count(t) && std::regex_match(t, *re)) am.topics.insert(t);
            }
        }
        if (auto it = g.target.find(id); it != g.target.end()) am.previous = it->second;
    }
    g.assignor = chosen;
    g.target = assign(chosen, in, g.subscribed);
    g.assignment_epoch = g.group_epoch;
    log_info("group", "consumer group '{}' epoch {}: new target assignment ({}, {} members)", g.id,
             g.group_epoch, chosen, g.members.size());
}

void coordinator::reconcile_member(group_data& g, member_data& m,
                                   const std::optional<partition_map>& owned) {
    const partition_map& target = g.target[m.id];
    auto next =
        reconcile(m.current, g.assignment_epoch, target, owned,
                  [&](const std::string& t, int32_t p) { return g.owned_by_other(m.id, t, p); });
    bool was_revoking = m.current.state == member_state::unrevoked_partitions;
    m.current = std::move(next);
    if (m.current.state == member_state::unrevoked_partitions) {
        // A member that does not revoke within its rebalance timeout is removed.
        // (A classic member revokes by joining again; its session covers it.)
        if (!was_revoking && m.rebalance_timeout_ms > 0 && !m.classic)
            arm(timer_kind::revocation, g, m.id, m.revocation_deadline,
                _clock.steady_ms() + m.rebalance_timeout_ms);
    } else {
        disarm(timer_kind::revocation, g, m.id, m.revocation_deadline);
    }
}

void coordinator::leave(group_data& g, const heartbeat_request& req, heartbeat_callback& cb) {
    std::string member_id = req.member_id;
    if (req.member_epoch == static_leave_epoch && req.instance_id) {
        auto s = g.static_members.find(*req.instance_id);
        if (s != g.static_members.end()) member_id = s->second;
    }
    auto it = g.members.find(member_id);
    if (it == g.members.end())
        return cb(failure(
            error_code::unknown_member_id,
            fmt::format("Member {} is not a member of group {}.", req.member_id, g.id), req));
    heartbeat_result r;
    r.member_id = req.member_id;
    r.member_epoch = req.member_epoch;
    if (req.member_epoch == static_leave_epoch) {
        // Stays a member, keeping its partitions, until it comes back or its session ends.
        member_data& m = it->second;
        if (m.current.member_epoch != static_leave_epoch)
            m.current.previous_epoch = m.current.member_epoch;
        m.current.member_epoch = static_leave_epoch;
        refresh_session(g, m);
        log_info("group", "consumer group '{}': static member {} leaves for now", g.id, member_id);
    } else {
        if (maybe_downgrade(g, member_id)) return cb(r);
        remove_member(g, member_id, "left the group");
    }
    g.state_ms = _clock.wall_ms();
    store(g, [cb = std::move(cb), r](const result<void>&) { cb(r); });
}

void coordinator::remove_member(group_data& g, const std::string& member_id, const char* reason) {
    auto it = g.members.find(member_id);
    if (it == g.members.end()) return;
    member_data& m = it->second;
    disarm(timer_kind::session, g, m.id, m.session_deadline);
    disarm(timer_kind::revocation, g, m.id, m.revocation_deadline);
    if (m.instance_id) {
        auto s = g.static_members.find(*m.instance_id);
        if (s != g.static_members.end() && s->second == m.id) g.static_members.erase(s);
    }
    log_info("group", "consumer group '{}': member {} {}", g.id, member_id, reason);
    g.members.erase(it);
    g.target.erase(member_id);
    g.group_epoch++;
    g.subscribed = subscribed_sizes(g);
    compute_target(g);
}

void coordinator::refresh_session(group_data& g, member_data& m) {
    arm(timer_kind::session, g, m.id, m.session_deadline,
        _clock.steady_ms() + (m.classic ? m.classic->session_timeout_ms
                              : _group_configs
                                  ? _group_configs->consumer_session_timeout_ms(g.id, _cfg)
                                  : _cfg.consumer_session_timeout_ms));
}

}  // namespace sluice::group::consumer
