// Online migration between the classic protocol and consumer groups (KIP-848): the
// classic coordinator's side. The consumer coordinator (group/consumer/) decides when a
// group changes hands; this hands the members over, or takes them back.

#include "common/logging.h"
#include "group/coordinator.h"
#include "group/group_data.h"

namespace sluice::group {

std::optional<stored_group> coordinator::members_of(const std::string& group_id) const {
    const group_data* g = find(group_id);
    if (!g || g->members.empty()) return std::nullopt;
    stored_group s = snapshot(*g);
    // What each member was given last, even mid-rebalance: a cooperative member still
    // owns it, and the consumer group must not hand it to another before it is revoked.
    for (auto& sm : s.members) sm.assignment = g->members.at(sm.member_id).assignment;
    return s;
}

void coordinator::release_members(const std::string& group_id) {
    group_data* g = find(group_id);
    if (!g || g->members.empty()) return;
    auto parked = take_parked(*g);
    for (auto& [id, m] : g->members) disarm(timer_kind::member, *g, id, m.deadline);
    for (auto& [id, deadline] : g->pending) disarm(timer_kind::pending, *g, id, deadline);
    g->pending.clear();
    disarm(timer_kind::group, *g, {}, g->deadline);
    g->members.clear();
    g->static_members.clear();
    g->leader.clear();
    g->protocol_name.reset();
    g->state = group_state::empty;
    g->empty_since_ms = _clock.wall_ms();
    g->storing_assignment = 0;
    log_info("group", "group '{}': its members move to a consumer group (online upgrade)",
             group_id);
    if (g->stored) store(*g);
    parked.answer(error_code::rebalance_in_progress);
}

void coordinator::adopt(const stored_group& s) {
    restore_group(s);
    group_data* g = find(s.group_id);
    if (!g) return;
    log_info("group", "group '{}' generation {}: back to the classic protocol (online downgrade)",
             g->id, g->generation);
    store(*g);
}

}  // namespace sluice::group
