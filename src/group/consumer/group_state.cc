// The consumer coordinator's reading side (describe, list, offset checks), its timers,
// and its durable state: what it writes and how a group comes back at start-up.

#include "common/logging.h"
#include "group/consumer/coordinator.h"
#include "group/consumer/group_data.h"
#include "group/consumer_protocol.h"

namespace sluice::group::consumer {

bool coordinator::is_consumer_group(const std::string& group_id) const {
    return find(group_id) != nullptr;
}

bool coordinator::has_members(const std::string& group_id) const {
    const group_data* g = find(group_id);
    return g && !g->members.empty();
}

void coordinator::erase_group(const std::string& group_id) {
    group_data* g = find(group_id);
    if (!g || !g->members.empty()) return;
    if (_writer) {
        group_write w{group_write::kind::erase_consumer, {}, {}};
        w.consumer.group_id = group_id;
        _writer->write(std::move(w), [group_id](const result<void>& r) {
            if (!r)
                log_error("group", "consumer group '{}': erasing its stored state: {}", group_id,
                          r.err().message);
        });
    }
    _groups.erase(group_id);
}

void coordinator::forget(const std::string& group_id) {
    group_data* g = find(group_id);
    if (!g) return;
    for (auto& [id, m] : g->members) {
        disarm(timer_kind::session, *g, id, m.session_deadline);
        disarm(timer_kind::revocation, *g, id, m.revocation_deadline);
    }
    _groups.erase(group_id);
}

// Kafka's ConsumerGroup.validateOffsetCommit.
std::optional<error_code> coordinator::check_commit(const std::string& group_id,
                                                    const std::string& member_id,
                                                    int32_t member_epoch,
                                                    int16_t api_version) const {
    const group_data* g = find(group_id);
    if (!g) return std::nullopt;
    // From outside the group (an admin or a consumer assigning itself): only while empty.
    if (member_epoch < 0 && g->members.empty()) return error_code::none;
    auto it = g->members.find(member_id);
    if (it == g->members.end()) return error_code::unknown_member_id;
    int32_t expected = it->second.current.member_epoch;
    // A classic member commits with its generation, at any version.
    if (it->second.classic)
        return member_epoch == expected ? error_code::none : error_code::illegal_generation;
    if (api_version < 9) return error_code::unsupported_version;
    if (member_epoch > expected) return error_code::fenced_member_epoch;
    if (member_epoch < expected) return error_code::stale_member_epoch;
    return error_code::none;
}

// Kafka's ConsumerGroup.validateOffsetFetch.
error_code coordinator::check_fetch(const std::string& group_id,
                                    const std::optional<std::string>& member_id,
                                    int32_t member_epoch) const {
    const group_data* g = find(group_id);
    if (!g || (member_epoch < 0 && !member_id)) return error_code::none;
    auto it = g->members.find(member_id.value_or(""));
    if (it == g->members.end()) return error_code::unknown_member_id;
    if (member_epoch != it->second.current.member_epoch) return error_code::stale_member_epoch;
    return error_code::none;
}

std::vector<group_listing> coordinator::list() const {
    std::vector<group_listing> out;
    for (const auto& [id, g] : _groups) out.push_back({id, g->state()});
    return out;
}

std::optional<group_description> coordinator::describe(const std::string& group_id) const {
    const group_data* g = find(group_id);
    if (!g) return std::nullopt;
    group_description d;
    d.group_id = g->id;
    d.state = g->state();
    d.group_epoch = g->group_epoch;
    d.assignment_epoch = g->assignment_epoch;
    d.assignor = g->assignor;
    for (const auto& [id, m] : g->members) {
        auto& md = d.members.emplace_back();
        md.member_id = id;
        md.instance_id = m.instance_id;
        md.rack_id = m.rack_id;
        md.member_epoch = m.current.member_epoch;
        md.classic = m.classic.has_value();
        md.client_id = m.client_id;
        md.client_host = m.client_host;
        md.subscribed_topics = m.subscribed_topics;
        md.subscribed_regex = m.subscribed_regex;
        md.assigned = m.current.assigned;
        if (auto t = g->target.find(id); t != g->target.end()) md.target = t->second;
    }
    return d;
}

// --- timers ---

void coordinator::arm(timer_kind k, group_data& g, const std::string& member, int64_t& slot,
                      int64_t at) {
    _timers.arm(k, g.id, member, slot, at);
}

void coordinator::disarm(timer_kind k, const group_data& g, const std::string& member,
                         int64_t& slot) {
    _timers.disarm(k, g.id, member, slot);
}

std::optional<int64_t> coordinator::next_deadline() const {
    return _timers.next();
}

void coordinator::poll() {
    int64_t now = _clock.steady_ms();
    while (auto due = _timers.pop_due(now)) {
        const auto& k = *due;
        group_data* g = find(k.group);
        if (!g) continue;
        auto it = g->members.find(k.member);
        if (it == g->members.end()) continue;
        if (k.kind == timer_kind::session) {
            it->second.session_deadline = 0;
            if (maybe_downgrade(*g, k.member)) continue;
            remove_member(*g, k.member, "expired (its session timeout)");
        } else {
            it->second.revocation_deadline = 0;
            if (it->second.current.state != member_state::unrevoked_partitions) continue;
            if (maybe_downgrade(*g, k.member)) continue;
            remove_member(*g, k.member,
                          "did not revoke its partitions within its rebalance timeout");
        }
        g->state_ms = _clock.wall_ms();
        store(*g, nullptr);
    }
}

// --- durable state ---

stored_consumer_group coordinator::snapshot(const group_data& g) const {
    stored_consumer_group s;
    s.group_id = g.id;
    s.group_epoch = g.group_epoch;
    s.assignment_epoch = g.assignment_epoch;
    s.assignor = g.assignor;
    s.state_ms = g.state_ms;
    for (const auto& [id, m] : g.members) {
        auto& sm = s.members.emplace_back();
        sm.member_id = id;
        sm.instance_id = m.instance_id;
        sm.rack_id = m.rack_id;
        sm.client_id = m.client_id;
        sm.client_host = m.client_host;
        sm.member_epoch = m.current.member_epoch;
        sm.previous_epoch = m.current.previous_epoch;
        sm.rebalance_timeout_ms = m.rebalance_timeout_ms;
        sm.server_assignor = m.server_assignor;
        sm.subscribed_topics = m.subscribed_topics;
        sm.subscribed_regex = m.subscribed_regex;
        sm.assigned = m.current.assigned;
        sm.pending_revocation = m.current.pending_revocation;
        if (auto t = g.target.find(id); t != g.target.end()) sm.target = t->second;
        if (m.classic)
            sm.classic = stored_consumer_member::classic_metadata{m.classic->session_timeout_ms,
                                                                  m.classic->protocols};
    }
    return s;
}

void coordinator::store(group_data& g, state_writer::done_fn done) {
    if (!done) {
        done = [id = g.id](const result<void>& r) {
            if (!r)
                log_error("group", "consumer group '{}': storing its state: {}", id,
                          r.err().message);
        };
    }
    if (!_writer) return done({});
    _writer->write({group_write::kind::put_consumer, {}, snapshot(g)}, std::move(done));
}

void coordinator::restore(const stored_consumer_group& s) {
    auto& slot = _groups[s.group_id];
    slot = std::make_unique<group_data>();
    group_data& g = *slot;
    g.id = s.group_id;
    g.group_epoch = s.group_epoch;
    g.assignment_epoch = s.assignment_epoch;
    g.assignor = s.assignor;
    g.state_ms = s.state_ms;
    for (const auto& sm : s.members) {
        member_data& m = g.members[sm.member_id];
        m.id = sm.member_id;
        m.instance_id = sm.instance_id;
        m.rack_id = sm.rack_id;
        m.client_id = sm.client_id;
        m.client_host = sm.client_host;
        m.rebalance_timeout_ms = sm.rebalance_timeout_ms;
        m.server_assignor = sm.server_assignor;
        m.subscribed_topics = sm.subscribed_topics;
        m.subscribed_regex = sm.subscribed_regex;
        m.current.member_epoch = sm.member_epoch;
        m.current.previous_epoch = sm.previous_epoch;
        m.current.assigned = sm.assigned;
        m.current.pending_revocation = sm.pending_revocation;
        m.current.state = !sm.pending_revocation.empty() ? member_state::unrevoked_partitions
                          : sm.member_epoch == s.assignment_epoch && sm.assigned != sm.target
                              ? member_state::unreleased_partitions
                              : member_state::stable;
        g.target[m.id] = sm.target;
        if (m.instance_id) g.static_members[*m.instance_id] = m.id;
        if (sm.classic && !sm.classic->protocols.empty()) {
            // The subscription version the member's assignments are written in, as its
            // join had it.
            auto sub = parse_subscription(sm.classic->protocols.front().metadata);
            m.classic =
                member_data::classic_metadata{sm.classic->session_timeout_ms, sm.classic->protocols,
                                              sub ? sub->version : int16_t{0}};
        }
        // A member that does not come back is removed one session timeout from now.
        refresh_session(g, m);
        if (m.current.state == member_state::unrevoked_partitions && m.rebalance_timeout_ms > 0)
            arm(timer_kind::revocation, g, m.id, m.revocation_deadline,
                _clock.steady_ms() + m.rebalance_timeout_ms);
    }
    // The target was computed for the topics as they are now (topics live in the same
    // catalog), so the restart itself does not move the group epoch.
    g.subscribed = subscribed_sizes(g);
    log_info("group", "consumer group '{}' epoch {}: restored {} with {} members", g.id,
             g.group_epoch, g.state(), g.members.size());
}

}  // namespace sluice::group::consumer
