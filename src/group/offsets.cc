// Committed offsets: validation of commits against the group's generation, the
// in-memory copy of what is durable, deletion and retention.

#include <algorithm>

#include "common/logging.h"
#include "group/consumer_protocol.h"
#include "group/coordinator.h"
#include "group/group_data.h"

namespace sluice::group {

error_code coordinator::check_commit(const std::string& group_id, const member_ref& m) {
    group_data* g = find(group_id);
    if (!g) {
        // No group: only a commit outside group management may create one.
        return m.generation < 0 ? error_code::none : error_code::illegal_generation;
    }
    if (m.generation < 0 && g->state == group_state::empty) return error_code::none;
    if (auto e = validate_member(*g, m); e != error_code::none) return e;
    if (m.generation != g->generation) return error_code::illegal_generation;
    switch (g->state) {
        case group_state::completing_rebalance:
            // The member has its join answer but not yet its assignment.
            return error_code::rebalance_in_progress;
        case group_state::stable:
        case group_state::preparing_rebalance: {
            // A commit is a sign of life, as a heartbeat is.
            member_data& md = g->members.at(m.member_id);
            if (!md.awaiting_join) refresh_session(*g, md);
            return error_code::none;
        }
        case group_state::empty:
        case group_state::dead:
            return error_code::unknown_member_id;
    }
    return error_code::none;
}

void coordinator::store_offsets(const std::string& group_id,
                                const std::vector<offset_entry>& entries) {
    if (entries.empty()) return;
    group_data& g = get_or_create(group_id);
    for (const auto& e : entries) g.offsets[e.tp] = e.value;
}

void coordinator::restore(const std::string& group_id, const std::vector<offset_entry>& entries) {
    if (entries.empty()) return;
    group_data& g = get_or_create(group_id);
    g.empty_since_ms = 0;
    for (const auto& e : entries) {
        g.offsets[e.tp] = e.value;
        g.empty_since_ms = std::max(g.empty_since_ms, e.value.commit_ms);
    }
}

std::optional<committed_offset> coordinator::committed(const std::string& group_id,
                                                       const topic_partition& tp) const {
    const group_data* g = find(group_id);
    if (!g) return std::nullopt;
    auto it = g->offsets.find(tp);
    if (it == g->offsets.end()) return std::nullopt;
    return it->second;
}

std::vector<offset_entry> coordinator::committed_all(const std::string& group_id) const {
    std::vector<offset_entry> out;
    if (const group_data* g = find(group_id)) {
        out.reserve(g->offsets.size());
        for (const auto& [tp, v] : g->offsets) out.push_back({tp, v});
    }
    return out;
}

error_code coordinator::check_delete_group(const std::string& group_id) const {
    const group_data* g = find(group_id);
    if (!g) return error_code::group_id_not_found;
    if (g->state != group_state::empty || !g->pending.empty()) return error_code::non_empty_group;
    return error_code::none;
}

void coordinator::delete_group(const std::string& group_id) {
    group_data* g = find(group_id);
    if (!g) return;
    g->offsets.clear();
    log_info("group", "group '{}' deleted", group_id);
    if (group_data* still = find(group_id)) maybe_drop(*still);
}

error_code coordinator::check_offset_delete(const std::string& group_id,
                                            const std::vector<topic_partition>& tps,
                                            std::vector<error_code>& per_partition) const {
    per_partition.assign(tps.size(), error_code::none);
    const group_data* g = find(group_id);
    if (!g) return error_code::group_id_not_found;
    if (g->state == group_state::empty) return error_code::none;
    if (g->protocol_type != "consumer") return error_code::non_empty_group;
    // Topics some member subscribes to keep their offsets.
    std::set<std::string> subscribed;
    for (const auto& [id, m] : g->members) {
        const protocol_entry* p = g->protocol_name ? m.find_protocol(*g->protocol_name) : nullptr;
        if (!p && !m.protocols.empty()) p = &m.protocols.front();
        if (!p) continue;
        if (auto topics = subscribed_topics(p->metadata))
            subscribed.insert(topics->begin(), topics->end());
    }
    for (size_t i = 0; i < tps.size(); ++i)
        if (subscribed.count(tps[i].topic))
            per_partition[i] = error_code::group_subscribed_to_topic;
    return error_code::none;
}

void coordinator::erase_offsets(const std::string& group_id,
                                const std::vector<topic_partition>& tps) {
    group_data* g = find(group_id);
    if (!g) return;
    for (const auto& tp : tps) g->offsets.erase(tp);
}

void coordinator::remove_topic(const std::string& topic) {
    for (auto& [id, g] : _groups) {
        auto first = g->offsets.lower_bound({topic, INT32_MIN});
        auto last = g->offsets.lower_bound({topic + '\0', INT32_MIN});
        g->offsets.erase(first, last);
    }
}

// Kafka's rule since 2.1: offsets of a group with members never expire; once the group
// is empty they expire offsets.retention.minutes after it became empty (and after the
// commit itself), or at the explicit expiry a v2-v4 commit asked for.
std::vector<std::pair<std::string, offset_entry>> coordinator::expired_offsets() const {
    std::vector<std::pair<std::string, offset_entry>> out;
    int64_t now = _clock.wall_ms();
    for (const auto& [id, g] : _groups) {
        if (g->state != group_state::empty) continue;
        for (const auto& [tp, v] : g->offsets) {
            bool expired = v.expire_ms >= 0 ? now >= v.expire_ms
                                            : now - std::max(g->empty_since_ms, v.commit_ms) >=
                                                  _cfg.offsets_retention_ms;
            if (expired) out.push_back({id, {tp, v}});
        }
    }
    return out;
}

void coordinator::erase_expired(const std::vector<std::pair<std::string, offset_entry>>& expired) {
    for (const auto& [id, e] : expired) {
        group_data* g = find(id);
        if (!g) continue;
        auto it = g->offsets.find(e.tp);
        if (it != g->offsets.end() && it->second.commit_ms == e.value.commit_ms)
            g->offsets.erase(it);
    }
}

}  // namespace sluice::group
