// Joining, syncing, heartbeats and leaving: Kafka's classic group protocol with eager
// rebalancing, following the broker-side behaviour Kafka clients are written against.

#include <algorithm>

#include "common/logging.h"
#include "group/coordinator.h"
#include "group/group_data.h"

namespace sluice::group {
namespace {

join_result join_error(error_code e, std::string member_id = {}) {
    join_result r;
    r.error = e;
    r.member_id = std::move(member_id);
    return r;
}

sync_result sync_error(error_code e) {
    sync_result r;
    r.error = e;
    return r;
}

}  // namespace

// A member may join if it speaks the group's protocol type and at least one protocol
// that every current member also supports.
static bool supports_protocols(const coordinator::group_data& g, const join_request& req) {
    if (req.protocol_type.empty() || req.protocols.empty()) return false;
    if (g.members.empty()) return true;
    if (g.protocol_type != req.protocol_type) return false;
    for (const auto& p : req.protocols) {
        bool everyone = std::all_of(g.members.begin(), g.members.end(), [&](const auto& kv) {
            return kv.second.find_protocol(p.name) != nullptr;
        });
        if (everyone) return true;
    }
    return false;
}

void coordinator::join(join_request req, join_callback cb) {
    if (req.group_id.empty()) return cb(join_error(error_code::invalid_group_id, req.member_id));
    if (req.session_timeout_ms < _cfg.min_session_timeout_ms ||
        req.session_timeout_ms > _cfg.max_session_timeout_ms)
        return cb(join_error(error_code::invalid_session_timeout, req.member_id));
    if (req.rebalance_timeout_ms <= 0) req.rebalance_timeout_ms = req.session_timeout_ms;

    group_data* existing = find(req.group_id);
    if (!existing && !req.member_id.empty())
        return cb(join_error(error_code::unknown_member_id, req.member_id));
    group_data& g = existing ? *existing : get_or_create(req.group_id);
    std::string group_id = req.group_id;
    if (!supports_protocols(g, req))
        cb(join_error(error_code::inconsistent_group_protocol, req.member_id));
    else if (req.member_id.empty())
        join_new_member(g, req, cb);
    else
        join_known_member(g, req, cb);
}

void coordinator::join_new_member(group_data& g, join_request& req, join_callback& cb) {
    if (req.instance_id && g.static_members.count(*req.instance_id))
        return join_static_member(g, req, cb);
    if (g.members.size() + g.pending.size() >= static_cast<size_t>(_cfg.max_group_size)) {
        log_info("group", "group '{}' is full ({} members); refusing a new member", g.id,
                 _cfg.max_group_size);
        return cb(join_error(error_code::group_max_size_reached));
    }
    std::string id = new_member_id(req.client_id);
    if (req.require_known_member_id && !req.instance_id) {
        // The member must come back with this id; until then it counts as pending.
        auto& deadline = g.pending[id];
        deadline = 0;
        arm(timer_kind::pending, g, id, deadline, _clock.steady_ms() + req.session_timeout_ms);
        return cb(join_error(error_code::member_id_required, id));
    }
    add_member_and_rebalance(g, id, req, std::move(cb));
}

// A static member (group.instance.id) rejoining with a fresh member id takes over its
// old identity: the old id is fenced, and a stable group keeps its generation and
// assignment without a rebalance unless the member changed its protocols (Kafka 2.4+).
// A leader keeps its leadership under the new id; as in Kafka, JoinGroup v9+ tells it so
// with the member list and skip_assignment, and older versions name the old leader id so
// that the client does not run its assignor for a generation that will not change.
void coordinator::join_static_member(group_data& g, join_request& req, join_callback& cb) {
    std::string old_id = g.static_members.at(*req.instance_id);
    std::string id = new_member_id(req.client_id);
    auto node = g.members.extract(old_id);
    if (node.empty()) {  // stale mapping; treat as a new member
        g.static_members.erase(*req.instance_id);
        return join_new_member(g, req, cb);
    }
    member_data& old = node.mapped();
    disarm(timer_kind::member, g, old_id, old.deadline);
    if (auto prev = std::exchange(old.awaiting_join, nullptr))
        prev(join_error(error_code::fenced_instance_id, old_id));
    if (auto prev = std::exchange(old.awaiting_sync, nullptr))
        prev(sync_error(error_code::fenced_instance_id));
    node.key() = id;
    node.mapped().id = id;
    auto& m = g.members.insert(std::move(node)).position->second;
    g.static_members[*req.instance_id] = id;
    bool was_leader = g.leader == old_id;
    if (was_leader) g.leader = id;
    log_info("group", "group '{}': static member '{}' now has member id {} (was {})", g.id,
             *req.instance_id, id, old_id);

    m.client_id = req.client_id;
    m.client_host = req.client_host;
    m.session_timeout_ms = req.session_timeout_ms;
    m.rebalance_timeout_ms = req.rebalance_timeout_ms;
    if (g.state == group_state::stable && m.protocols == req.protocols) {
        refresh_session(g, m);
        join_result r = current_join_result(g, m);
        if (was_leader && req.supports_skip_assignment) {
            r.skip_assignment = true;
        } else if (was_leader) {
            r.leader = old_id;
            r.members.clear();
        }
        // The new id must survive a restart before the member uses it: a restored group
        // with the old id would fence it.
        return store(g, [cb = std::move(cb), r = std::move(r)](const result<void>& stored) {
            if (stored) return cb(r);
            log_error("group", "storing a static member's new id: {}", stored.err().message);
            cb(join_error(write_failure_code(stored.err()), r.member_id));
        });
    }
    update_member_and_rebalance(g, m, req, std::move(cb));
}

void coordinator::join_known_member(group_data& g, join_request& req, join_callback& cb) {
    if (auto p = g.pending.find(req.member_id); p != g.pending.end()) {
        std::string id = req.member_id;
        disarm(timer_kind::pending, g, id, p->second);
        g.pending.erase(p);
        return add_member_and_rebalance(g, id, req, std::move(cb));
    }
    member_ref ref{req.member_id, req.instance_id, -1};
    if (auto e = validate_member(g, ref); e != error_code::none)
        return cb(join_error(e, req.member_id));
    member_data& m = g.members.at(req.member_id);
    switch (g.state) {
        case group_state::preparing_rebalance:
            return update_member_and_rebalance(g, m, req, std::move(cb));
        case group_state::completing_rebalance:
            // A repeated join of this generation gets the same answer again.
            if (m.protocols == req.protocols) return cb(current_join_result(g, m));
            return update_member_and_rebalance(g, m, req, std::move(cb));
        case group_state::stable:
            if (g.leader == m.id || m.protocols != req.protocols)
                return update_member_and_rebalance(g, m, req, std::move(cb));
            refresh_session(g, m);
            return cb(current_join_result(g, m));
        case group_state::empty:
        case group_state::dead:
            return cb(join_error(error_code::unknown_member_id, req.member_id));
    }
}

void coordinator::add_member_and_rebalance(group_data& g, const std::string& member_id,
                                           join_request& req, join_callback cb) {
    member_data& m = g.members[member_id];
    m.id = member_id;
    m.instance_id = req.instance_id;
    m.client_id = req.client_id;
    m.client_host = req.client_host;
    m.session_timeout_ms = req.session_timeout_ms;
    m.rebalance_timeout_ms = req.rebalance_timeout_ms;
    m.protocols = std::move(req.protocols);
    m.awaiting_join = std::move(cb);
    m.join_seq = ++_join_seq;
    m.is_new = true;
    if (m.instance_id) g.static_members[*m.instance_id] = member_id;
    if (g.members.size() == 1) g.protocol_type = req.protocol_type;
    if (g.leader.empty()) g.leader = member_id;
    if (g.initial_delay) g.new_member_added = true;
    log_debug("group", "group '{}': member {} joins", g.id, member_id);
    // Parked in the join phase: the session clock starts when the join is answered.
    disarm(timer_kind::member, g, member_id, m.deadline);
    if (g.state == group_state::preparing_rebalance)
        try_complete_join(g);
    else
        prepare_rebalance(g, "a member joined");
}

void coordinator::update_member_and_rebalance(group_data& g, member_data& m, join_request& req,
                                              join_callback cb) {
    m.protocols = std::move(req.protocols);
    m.session_timeout_ms = req.session_timeout_ms;
    m.rebalance_timeout_ms = req.rebalance_timeout_ms;
    m.client_id = req.client_id;
    m.client_host = req.client_host;
    // A client never has two joins in flight; if one is parked anyway, it is superseded.
    if (auto prev = std::exchange(m.awaiting_join, std::move(cb)))
        prev(join_error(error_code::rebalance_in_progress, m.id));
    disarm(timer_kind::member, g, m.id, m.deadline);
    if (g.state == group_state::preparing_rebalance)
        try_complete_join(g);
    else
        prepare_rebalance(g, "a member rejoined");
}

void coordinator::prepare_rebalance(group_data& g, const char* reason) {
    if (g.state == group_state::completing_rebalance) {
        // The assignment being distributed is void; parked syncs learn it.
        for (auto& [id, m] : g.members) {
            m.assignment.clear();
            if (auto cb = std::exchange(m.awaiting_sync, nullptr)) {
                // A session that ran out while parked was ignored (on_member_deadline);
                // it runs again from this answer, as Kafka's propagateAssignment does.
                refresh_session(g, m);
                cb(sync_error(error_code::rebalance_in_progress));
            }
        }
    }
    int64_t now = _clock.steady_ms();
    if (g.state == group_state::empty) {
        // A new group waits a little for more members before its first generation,
        // extended for each arrival up to the rebalance timeout (Kafka's initial delay).
        g.initial_delay = true;
        g.new_member_added = false;
        g.initial_remaining_ms =
            std::max<int64_t>(0, g.rebalance_timeout_ms() - _cfg.initial_rebalance_delay_ms);
        arm(timer_kind::group, g, {}, g.deadline, now + _cfg.initial_rebalance_delay_ms);
    } else {
        g.initial_delay = false;
        arm(timer_kind::group, g, {}, g.deadline, now + g.rebalance_timeout_ms());
    }
    log_info("group", "group '{}' generation {}: rebalancing ({}), {} members", g.id, g.generation,
             reason, g.members.size());
    g.state = group_state::preparing_rebalance;
    try_complete_join(g);
}

void coordinator::try_complete_join(group_data& g) {
    // During the initial delay only the timer ends the join phase.
    if (g.state == group_state::preparing_rebalance && !g.initial_delay && g.all_joined())
        complete_join(g);
}

static std::string select_protocol(const coordinator::group_data& g) {
    // Candidates: protocols every member supports. Each member votes for its most
    // preferred candidate; the most votes win, ties going to the leader's preference.
    const auto& leader = g.members.at(g.leader);
    std::vector<std::string> candidates;
    for (const auto& p : leader.protocols) {
        bool everyone = std::all_of(g.members.begin(), g.members.end(), [&](const auto& kv) {
            return kv.second.find_protocol(p.name) != nullptr;
        });
        if (everyone) candidates.push_back(p.name);
    }
    std::map<std::string, int> votes;
    for (const auto& [id, m] : g.members) {
        for (const auto& p : m.protocols) {
            if (std::find(candidates.begin(), candidates.end(), p.name) != candidates.end()) {
                ++votes[p.name];
                break;
            }
        }
    }
    std::string best;
    int best_votes = -1;
    for (const auto& c : candidates) {
        if (votes[c] > best_votes) {
            best = c;
            best_votes = votes[c];
        }
    }
    return best;
}

void coordinator::complete_join(group_data& g) {
    // Dynamic members that did not rejoin in time are out of this generation. Static
    // members stay (as in Kafka): they are expected back under the same instance id, and
    // only their session timeout removes them.
    std::vector<std::string> gone;
    for (const auto& [id, m] : g.members)
        if (!m.awaiting_join && !m.instance_id) gone.push_back(id);
    for (const auto& id : gone)
        remove_member(g, id, "did not rejoin within the rebalance timeout", false);

    disarm(timer_kind::group, g, {}, g.deadline);
    g.initial_delay = false;
    ++g.generation;
    if (g.members.empty()) {
        g.state = group_state::empty;
        g.protocol_name.reset();  // the protocol type stays, as Kafka lists it
        g.leader.clear();
        g.empty_since_ms = _clock.wall_ms();
        log_info("group", "group '{}' generation {}: empty", g.id, g.generation);
        if (g.stored) store(g);
        return;
    }
    // The leader must be a member that is here to receive the member list.
    auto leader = g.members.find(g.leader);
    if (leader == g.members.end() || !leader->second.awaiting_join) {
        const member_data* best = nullptr;
        for (const auto& [id, m] : g.members)
            if (m.awaiting_join && (!best || m.join_seq < best->join_seq)) best = &m;
        if (!best) best = &g.members.begin()->second;
        g.leader = best->id;
    }
    g.protocol_name = select_protocol(g);
    g.state = group_state::completing_rebalance;
    // The leader must sync within the rebalance timeout, or the laggards are dropped.
    arm(timer_kind::group, g, {}, g.deadline, _clock.steady_ms() + g.rebalance_timeout_ms());
    log_info("group", "group '{}' generation {}: {} members, protocol '{}', leader {}", g.id,
             g.generation, g.members.size(), *g.protocol_name, g.leader);
    for (auto& [id, m] : g.members) {
        m.is_new = false;
        auto cb = std::exchange(m.awaiting_join, nullptr);
        if (!cb) continue;  // a static member that has not rejoined yet
        refresh_session(g, m);
        cb(current_join_result(g, m));
    }
}

join_result coordinator::current_join_result(const group_data& g, const member_data& m) const {
    join_result r;
    r.generation = g.generation;
    r.protocol_type = g.protocol_type;
    r.protocol_name = g.protocol_name;
    r.leader = g.leader;
    r.member_id = m.id;
    if (g.leader == m.id) {
        for (const auto& [id, other] : g.members) {
            const auto* p = other.find_protocol(*g.protocol_name);
            r.members.push_back({id, other.instance_id, p ? p->metadata : bytes{}});
        }
    }
    return r;
}

error_code coordinator::validate_member(const group_data& g, const member_ref& m) const {
    if (m.instance_id) {
        auto it = g.static_members.find(*m.instance_id);
        if (it != g.static_members.end() && it->second != m.member_id)
            return error_code::fenced_instance_id;
    }
    if (!g.members.count(m.member_id)) return error_code::unknown_member_id;
    return error_code::none;
}

void coordinator::refresh_session(group_data& g, member_data& m) {
    arm(timer_kind::member, g, m.id, m.deadline, _clock.steady_ms() + m.session_timeout_ms);
}

void coordinator::sync(const sync_request& req, sync_callback cb) {
    group_data* g = find(req.group_id);
    if (!g) return cb(sync_error(error_code::unknown_member_id));
    member_ref ref{req.member_id, req.instance_id, req.generation};
    if (auto e = validate_member(*g, ref); e != error_code::none) return cb(sync_error(e));
    if (req.generation != g->generation) return cb(sync_error(error_code::illegal_generation));
    if ((req.protocol_type && req.protocol_type != g->protocol_type) ||
        (req.protocol_name && req.protocol_name != g->protocol_name))
        return cb(sync_error(error_code::inconsistent_group_protocol));
    member_data& m = g->members.at(req.member_id);
    switch (g->state) {
        case group_state::empty:
        case group_state::dead:
            return cb(sync_error(error_code::unknown_member_id));
        case group_state::preparing_rebalance:
            return cb(sync_error(error_code::rebalance_in_progress));
        case group_state::stable: {
            refresh_session(*g, m);
            sync_result r;
            r.protocol_type = g->protocol_type;
            r.protocol_name = g->protocol_name;
            r.assignment = m.assignment;
            return cb(r);
        }
        case group_state::completing_rebalance:
            break;
    }
    if (auto prev = std::exchange(m.awaiting_sync, std::move(cb)))
        prev(sync_error(error_code::rebalance_in_progress));
    refresh_session(*g, m);
    if (g->leader != m.id) return;
    // The leader's assignment completes the generation; members it left out get nothing.
    for (auto& [id, member] : g->members) member.assignment.clear();
    for (const auto& [id, a] : req.assignments) {
        auto it = g->members.find(id);
        if (it != g->members.end()) it->second.assignment = a;
    }
    // Stable once stored: a restart then resumes this generation (persistence.cc). The
    // rebalance deadline stays armed while the write runs.
    uint64_t seq = ++_store_seq;
    g->storing_assignment = seq;
    stored_group s = snapshot(*g);
    s.state = group_state::stable;
    for (size_t i = 0; i < s.members.size(); ++i)
        s.members[i].assignment = g->members.at(s.members[i].member_id).assignment;
    g->stored = true;
    store(std::move(s), [this, id = g->id, gen = g->generation, seq](const result<void>& r) {
        complete_sync(id, gen, seq, r);
    });
}

error_code coordinator::heartbeat(const std::string& group_id, const member_ref& ref) {
    group_data* g = find(group_id);
    if (!g) return error_code::unknown_member_id;
    if (auto e = validate_member(*g, ref); e != error_code::none) return e;
    if (ref.generation != g->generation) return error_code::illegal_generation;
    member_data& m = g->members.at(ref.member_id);
    switch (g->state) {
        case group_state::empty:
        case group_state::dead:
            return error_code::unknown_member_id;
        case group_state::preparing_rebalance:
            if (!m.awaiting_join) refresh_session(*g, m);
            return error_code::rebalance_in_progress;
        case group_state::completing_rebalance:
        case group_state::stable:
            refresh_session(*g, m);
            return error_code::none;
    }
    return error_code::none;
}

error_code coordinator::leave(const std::string& group_id, const member_ref& ref) {
    group_data* g = find(group_id);
    if (!g) return error_code::unknown_member_id;
    std::string member_id = ref.member_id;
    if (ref.instance_id) {
        // LeaveGroup v3+ may name a static member by instance id alone.
        auto it = g->static_members.find(*ref.instance_id);
        if (it == g->static_members.end()) return error_code::unknown_member_id;
        if (!member_id.empty() && member_id != it->second) return error_code::fenced_instance_id;
        member_id = it->second;
    }
    if (auto p = g->pending.find(member_id); p != g->pending.end()) {
        disarm(timer_kind::pending, *g, member_id, p->second);
        g->pending.erase(p);
        try_complete_join(*g);
        return error_code::none;
    }
    if (!g->members.count(member_id)) return error_code::unknown_member_id;
    remove_member(*g, member_id, "left the group");
    return error_code::none;
}

// Removes a member and, unless the caller is itself ending a phase, moves the group on:
// a running generation is rebalanced, a join phase may now be complete.
void coordinator::remove_member(group_data& g, const std::string& member_id, const char* reason,
                                bool move_on) {
    auto it = g.members.find(member_id);
    if (it == g.members.end()) return;
    member_data& m = it->second;
    disarm(timer_kind::member, g, member_id, m.deadline);
    auto join_cb = std::exchange(m.awaiting_join, nullptr);
    auto sync_cb = std::exchange(m.awaiting_sync, nullptr);
    if (m.instance_id) g.static_members.erase(*m.instance_id);
    g.members.erase(it);
    log_info("group", "group '{}': member {} {}", g.id, member_id, reason);
    if (join_cb) join_cb(join_error(error_code::unknown_member_id, member_id));
    if (sync_cb) sync_cb(sync_error(error_code::unknown_member_id));
    if (g.leader == member_id) {
        g.leader.clear();
        auto first = std::min_element(g.members.begin(), g.members.end(), [](auto& a, auto& b) {
            return a.second.join_seq < b.second.join_seq;
        });
        if (first != g.members.end()) g.leader = first->first;
    }
    if (!move_on) return;
    switch (g.state) {
        case group_state::stable:
        case group_state::completing_rebalance:
            prepare_rebalance(g, "a member left");
            break;
        case group_state::preparing_rebalance:
            try_complete_join(g);
            break;
        case group_state::empty:
        case group_state::dead:
            break;
    }
    // A restart must not bring the member back (persistence.cc). A group that was never
    // stored has nothing to correct.
    if (g.stored) store(g);
}

void coordinator::on_group_deadline(group_data& g) {
    if (g.state == group_state::preparing_rebalance) {
        if (g.initial_delay && g.new_member_added && g.initial_remaining_ms > 0) {
            int64_t delay =
                std::min<int64_t>(_cfg.initial_rebalance_delay_ms, g.initial_remaining_ms);
            g.initial_remaining_ms -= delay;
            g.new_member_added = false;
            arm(timer_kind::group, g, {}, g.deadline, _clock.steady_ms() + delay);
            return;
        }
        complete_join(g);
    } else if (g.state == group_state::completing_rebalance) {
        complete_sync_timeout(g);
    }
}

// The leader did not sync within the rebalance timeout: members that have not sent
// SyncGroup are dropped and the others rebalance.
void coordinator::complete_sync_timeout(group_data& g) {
    std::vector<std::string> gone;
    for (const auto& [id, m] : g.members)
        if (!m.awaiting_sync) gone.push_back(id);
    log_info("group", "group '{}' generation {}: {} members did not sync in time", g.id,
             g.generation, gone.size());
    for (const auto& id : gone) {
        if (!g.members.count(id)) continue;
        remove_member(g, id, "did not sync within the rebalance timeout");
    }
}

void coordinator::on_member_deadline(group_data& g, const std::string& member_id) {
    member_data& m = g.members.at(member_id);
    // Members parked in a join or sync are alive by definition; the group's own
    // deadlines bound how long they wait.
    if (m.awaiting_join || m.awaiting_sync) return;
    remove_member(g, member_id, "session timed out");
}

void coordinator::on_pending_deadline(group_data& g, const std::string& member_id) {
    g.pending.erase(member_id);
    log_debug("group", "group '{}': pending member {} never rejoined", g.id, member_id);
    try_complete_join(g);
}

}  // namespace sluice::group
