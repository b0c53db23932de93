// Durable group state: what the coordinator writes to its state_writer, and how a group
// comes back from the store at start-up.
//
// Written (Kafka writes its group metadata record at the same moments, or later):
//   - the leader's SyncGroup: the new generation with every assignment, before any
//     member is answered (complete_sync);
//   - a static member taking over its old member id in a Stable group, before its
//     JoinGroup is answered (membership.cc);
//   - a member gone (left, expired, dropped by a rebalance deadline): the group as it
//     is then, usually PreparingRebalance, so that after a restart the others rejoin
//     rather than keep a generation that lost a member's partitions;
//   - the group Empty; forgotten groups are erased.
// Joins alone write nothing: until a generation is Stable, a restart falls back to the
// previous record, and members with an unknown id join again, as in Kafka.

#include <algorithm>
#include <charconv>

#include "common/logging.h"
#include "group/coordinator.h"
#include "group/group_data.h"

namespace sluice::group {

std::string format_topics(const std::vector<std::string>& topics) {
    std::string out;
    for (const auto& t : topics) {
        if (!out.empty()) out += ',';
        out += t;
    }
    return out;
}

std::vector<std::string> parse_topics(std::string_view s) {
    std::vector<std::string> out;
    while (!s.empty()) {
        auto comma = s.find(',');
        out.emplace_back(s.substr(0, comma));
        s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
    }
    return out;
}

std::string_view stored_state_name(group_state s) {
    switch (s) {
        case group_state::stable:
            return "Stable";
        case group_state::preparing_rebalance:
        case group_state::completing_rebalance:
            return "PreparingRebalance";
        case group_state::empty:
        case group_state::dead:
            break;
    }
    return "Empty";
}

std::string format_partitions(const partition_map& m) {
    std::string out;
    for (const auto& [t, ps] : m) {
        if (ps.empty()) continue;
        if (!out.empty()) out += ';';
        out += t;
        out += ':';
        bool first = true;
        for (int32_t p : ps) {
            if (!first) out += ',';
            out += std::to_string(p);
            first = false;
        }
    }
    return out;
}

std::optional<partition_map> parse_partitions(std::string_view s) {
    partition_map out;
    // Splits off the text up to sep (or all of it).
    auto next = [](std::string_view& rest, char sep) {
        auto at = rest.find(sep);
        std::string_view head = rest.substr(0, at);
        rest = at == std::string_view::npos ? std::string_view{} : rest.substr(at + 1);
        return head;
    };
    while (!s.empty()) {
        std::string_view list = next(s, ';');
        std::string_view topic = next(list, ':');
        if (topic.empty() || list.empty()) return std::nullopt;
        auto& ps = out[std::string(topic)];
        while (!list.empty()) {
            std::string_view num = next(list, ',');
            int32_t p = 0;
            auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), p);
            if (ec != std::errc() || ptr != num.data() + num.size() || p < 0) return std::nullopt;
            ps.insert(p);
        }
    }
    return out;
}

stored_group coordinator::snapshot(const group_data& g) const {
    stored_group s;
    s.group_id = g.id;
    s.protocol_type = g.protocol_type;
    s.protocol_name = g.protocol_name;
    s.generation = g.generation;
    s.leader = g.leader;
    switch (g.state) {
        case group_state::stable:
            s.state = group_state::stable;
            break;
        case group_state::preparing_rebalance:
        case group_state::completing_rebalance:
            s.state = group_state::preparing_rebalance;
            break;
        case group_state::empty:
        case group_state::dead:
            s.state = group_state::empty;
            break;
    }
    s.state_ms = s.state == group_state::empty ? g.empty_since_ms : _clock.wall_ms();
    std::vector<const member_data*> ordered;
    ordered.reserve(g.members.size());
    for (const auto& [id, m] : g.members) ordered.push_back(&m);
    std::sort(ordered.begin(), ordered.end(),
              [](const member_data* a, const member_data* b) { return a->join_seq < b->join_seq; });
    for (const member_data* m : ordered) {
        auto& sm = s.members.emplace_back();
        sm.member_id = m->id;
        sm.instance_id = m->instance_id;
        sm.client_id = m->client_id;
        sm.client_host = m->client_host;
        sm.session_timeout_ms = m->session_timeout_ms;
        sm.rebalance_timeout_ms = m->rebalance_timeout_ms;
        sm.protocols = m->protocols;
        if (s.state == group_state::stable) sm.assignment = m->assignment;
    }
    return s;
}

void coordinator::store(group_data& g, state_writer::done_fn done) {
    g.stored = true;
    store(snapshot(g), std::move(done));
}

void coordinator::store(stored_group s, state_writer::done_fn done) {
    if (!_writer) {
        if (done) done({});
        return;
    }
    if (!done) {
        // Nothing waits for it; a failure is logged, and the next write of the group
        // replaces the record anyway.
        done = [id = s.group_id](const result<void>& r) {
            if (!r) log_error("group", "group '{}': storing its state: {}", id, r.err().message);
        };
    }
    _writer->write({group_write::kind::put, std::move(s)}, std::move(done));
}

void coordinator::unstore(group_data& g) {
    if (!g.stored) return;
    g.stored = false;
    if (!_writer) return;
    group_write w{group_write::kind::erase, {}};
    w.group.group_id = g.id;
    _writer->write(std::move(w), [id = g.id](const result<void>& r) {
        if (!r) log_error("group", "group '{}': erasing its stored state: {}", id, r.err().message);
    });
}

void coordinator::complete_sync(const std::string& group_id, int32_t generation, uint64_t seq,
                                const result<void>& stored) {
    group_data* g = find(group_id);
    // A rebalance, or a newer assignment from the leader, made this write moot.
    if (!g || g->generation != generation || g->state != group_state::completing_rebalance ||
        g->storing_assignment != seq)
        return;
    g->storing_assignment = 0;
    if (!stored) {
        // As Kafka: every member waiting for this generation learns that the coordinator
        // could not keep it, and the group forms a new one.
        log_error("group", "group '{}' generation {}: storing the assignment: {}", g->id,
                  generation, stored.err().message);
        for (auto& [id, m] : g->members) {
            m.assignment.clear();
            if (auto cb = std::exchange(m.awaiting_sync, nullptr)) {
                refresh_session(*g, m);
                sync_result r;
                r.error = write_failure_code(stored.err());
                cb(r);
            }
        }
        prepare_rebalance(*g, "the assignment could not be stored");
        return;
    }
    disarm(timer_kind::group, *g, {}, g->deadline);
    g->state = group_state::stable;
    log_info("group", "group '{}' generation {}: stable", g->id, g->generation);
    for (auto& [id, member] : g->members) {
        if (auto waiting = std::exchange(member.awaiting_sync, nullptr)) {
            // A session that expired while parked restarts now (on_member_deadline).
            refresh_session(*g, member);
            sync_result r;
            r.protocol_type = g->protocol_type;
            r.protocol_name = g->protocol_name;
            r.assignment = member.assignment;
            waiting(r);
        }
    }
}

void coordinator::restore_group(const stored_group& s) {
    group_data& g = get_or_create(s.group_id);
    g.stored = true;
    g.generation = s.generation;
    g.protocol_type = s.protocol_type;
    g.protocol_name = s.protocol_name;
    for (const auto& sm : s.members) {
        member_data& m = g.members[sm.member_id];
        m.id = sm.member_id;
        m.instance_id = sm.instance_id;
        m.client_id = sm.client_id;
        m.client_host = sm.client_host;
        m.session_timeout_ms = sm.session_timeout_ms;
        m.rebalance_timeout_ms = sm.rebalance_timeout_ms;
        m.protocols = sm.protocols;
        if (s.state == group_state::stable) m.assignment = sm.assignment;
        m.join_seq = ++_join_seq;
        if (m.instance_id) g.static_members[*m.instance_id] = m.id;
        refresh_session(g, m);
    }
    g.leader = g.members.count(s.leader) ? s.leader : std::string{};
    if (g.leader.empty() && !g.members.empty()) g.leader = s.members.front().member_id;
    if (g.members.empty() || s.state == group_state::empty) {
        g.state = group_state::empty;
        g.protocol_name.reset();
        // Offsets restored before count the group empty since their newest commit.
        g.empty_since_ms = g.offsets.empty() ? s.state_ms : std::max(g.empty_since_ms, s.state_ms);
    } else if (s.state == group_state::stable) {
        g.state = group_state::stable;
    } else {
        // The members must rejoin; those that do not are dropped when the join phase ends.
        g.state = group_state::preparing_rebalance;
        g.initial_delay = false;
        arm(timer_kind::group, g, {}, g.deadline, _clock.steady_ms() + g.rebalance_timeout_ms());
    }
    log_info("group", "group '{}' generation {}: restored {} with {} members", g.id, g.generation,
             state_name(g.state), g.members.size());
}

}  // namespace sluice::group
