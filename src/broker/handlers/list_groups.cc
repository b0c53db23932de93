#include "protocol/messages/list_groups.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

void handle_list_groups(const request_context& ctx, request_body body) {
    protocol::list_groups_request req;
    if (!decode_request(ctx, body, req)) return;
    std::set<group::group_state> wanted;
    for (const auto& name : req.states_filter) {
        // An unknown state name matches nothing, as in Kafka.
        if (auto s = group::parse_state(name)) wanted.insert(*s);
    }
    protocol::list_groups_response resp;
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
