#include "protocol/messages/join_group.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

void handle_join_group(const request_context& ctx, request_body body) {
    protocol::join_group_request req;
    if (!decode_request(ctx, body, req)) return;
    if (auto e = group_refusal(ctx, req.group_id); e != protocol::error_code::none) {
        protocol::join_group_response resp;
        resp.error_code = code(e);
        resp.member_id = req.member_id;
        ctx.respond(resp);
        return;
    }
    // A consumer group with members takes classic members too (KIP-848's online
    // migration); an empty one gives its id back to the classic protocol.
    auto& consumer = ctx.b.consumer_groups();
    const bool to_consumer = consumer.has_members(req.group_id);
    if (!to_consumer) consumer.erase_group(req.group_id);
    group::join_request j;
    j.group_id = std::move(req.group_id);
    j.member_id = std::move(req.member_id);
    j.instance_id = std::move(req.group_instance_id);
    j.client_id = ctx.header.client_id.value_or("");
    j.client_host = client_host(ctx);
    j.session_timeout_ms = req.session_timeout_ms;
    j.rebalance_timeout_ms = req.rebalance_timeout_ms;
    j.protocol_type = std::move(req.protocol_type);
    for (auto& p : req.protocols) j.protocols.push_back({std::move(p.name), std::move(p.metadata)});
    j.require_known_member_id = ctx.version() >= 4;
    j.supports_skip_assignment = ctx.version() >= 9;
    auto answer = [ctx](const group::join_result& r) {
        protocol::join_group_response resp;
        resp.error_code = code(r.error);
        resp.generation_id = r.generation;
        resp.protocol_type = r.protocol_type;
        resp.protocol_name = r.protocol_name;
        resp.leader = r.leader;
        resp.member_id = r.member_id;
        resp.skip_assignment = r.skip_assignment;
        for (const auto& m : r.members)
            resp.members.push_back({m.member_id, m.instance_id, m.metadata});
        ctx.respond(resp);
    };
    if (to_consumer)
        consumer.classic_join(std::move(j), std::move(answer));
    else
        ctx.b.groups().join(std::move(j), std::move(answer));
}

}  // namespace sluice::broker
