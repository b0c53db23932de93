#include "protocol/messages/describe_groups.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

void handle_describe_groups(const request_context& ctx, request_body body) {
    protocol::describe_groups_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::describe_groups_response resp;
    for (const auto& id : req.groups) {
        auto& out = resp.groups.emplace_back();
        out.group_id = id;
        if (auto e = group_refusal(ctx, id); e != protocol::error_code::none) {
            out.error_code = code(e);
            continue;
        }
        if (req.include_authorized_operations)
            out.authorized_operations =
                authorized_operations(ctx, {security::resource_kind::group, id});
        auto d = ctx.b.groups().describe(id);
        if (auto c = ctx.b.consumer_groups().describe(id)) {
            // As Kafka describes a consumer group to the classic API: its state and type;
            // members are described by ConsumerGroupDescribe.
            out.group_state = c->state;
            out.protocol_type = "consumer";
            for (auto& m : c->members)
                out.members.push_back({std::move(m.member_id),
                                       std::move(m.instance_id),
                                       std::move(m.client_id),
                                       std::move(m.client_host),
                                       {},
                                       {}});
            continue;
        }
        if (!d) {
            // v0-v5 describe a group that does not exist as Dead, without an error.
            out.group_state = group::state_name(group::group_state::dead);
            continue;
        }
        out.group_state = group::state_name(d->state);
        out.protocol_type = d->protocol_type;
        out.protocol_data = d->protocol_name;
        for (auto& m : d->members) {
            out.members.push_back({std::move(m.member_id), std::move(m.instance_id),
                                   std::move(m.client_id), std::move(m.client_host),
                                   std::move(m.metadata), std::move(m.assignment)});
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
