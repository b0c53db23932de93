#include "protocol/messages/list_groups.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "common/ascii.h"

namespace sluice::broker {

void handle_list_groups(const request_context& ctx, request_body body) {
    protocol::list_groups_request req;
    if (!decode_request(ctx, body, req)) return;
    std::set<group::group_state> wanted;
    for (const auto& name : req.states_filter) {
        // An unknown state name matches nothing, as in Kafka.
        if (auto s = group::parse_state(name)) wanted.insert(*s);
    }
    // Every Sluice group is a classic one (no KIP-848 groups); Kafka matches type names
    // case-insensitively and an unknown name matches nothing.
    const bool classic_wanted =
        req.types_filter.empty() ||
        std::any_of(req.types_filter.begin(), req.types_filter.end(),
                    [](const std::string& t) { return iequals(t, "classic"); });
    protocol::list_groups_response resp;
    if (!classic_wanted) {
        ctx.respond(resp);
        return;
    }
    // Describe on the cluster lists every group; otherwise those the principal may
    // describe.
    const bool all = ctx.allowed_quiet(security::resource_kind::cluster);
    for (const auto& g : ctx.b.groups().list()) {
        if (!req.states_filter.empty() && !wanted.count(g.state)) continue;
        if (!all && !ctx.allowed_quiet(security::resource_kind::group, g.group_id)) continue;
        resp.groups.push_back(
            {g.group_id, g.protocol_type, std::string(group::state_name(g.state))});
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
