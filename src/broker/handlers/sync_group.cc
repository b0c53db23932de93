#include "protocol/messages/sync_group.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

void handle_sync_group(const request_context& ctx, request_body body) {
    protocol::sync_group_request req;
    if (!decode_request(ctx, body, req)) return;
    if (auto e = group_refusal(ctx, req.group_id); e != protocol::error_code::none) {
        protocol::sync_group_response resp;
        resp.error_code = code(e);
        ctx.respond(resp);
        return;
    }
    // KIP-559: from v5 the protocol type and name are mandatory; Kafka refuses a request
    // without them before it looks at the group.
    if (ctx.version() >= 5 && (!req.protocol_type || !req.protocol_name)) {
        log_warn("group", "{}: SyncGroup v{} for group '{}' without protocol type or name",
                 ctx.client(), ctx.version(), req.group_id);
        protocol::sync_group_response resp;
        resp.error_code = code(protocol::error_code::inconsistent_group_protocol);
        ctx.respond(resp);
        return;
    }
    group::sync_request s;
    s.group_id = std::move(req.group_id);
    s.member_id = std::move(req.member_id);
    s.instance_id = std::move(req.group_instance_id);
    s.generation = req.generation_id;
    s.protocol_type = std::move(req.protocol_type);
    s.protocol_name = std::move(req.protocol_name);
    for (auto& a : req.assignments)
        s.assignments.emplace_back(std::move(a.member_id), std::move(a.assignment));
    auto answer = [ctx](const group::sync_result& r) {
        protocol::sync_group_response resp;
        resp.error_code = code(r.error);
        resp.protocol_type = r.protocol_type;
        resp.protocol_name = r.protocol_name;
        resp.assignment = r.assignment;
        ctx.respond(resp);
    };
    if (ctx.b.consumer_groups().has_members(s.group_id))
        ctx.b.consumer_groups().classic_sync(s, std::move(answer));
    else
        ctx.b.groups().sync(s, std::move(answer));
}

}  // namespace sluice::broker
