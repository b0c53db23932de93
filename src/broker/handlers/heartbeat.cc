#include "protocol/messages/heartbeat.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

void handle_heartbeat(const request_context& ctx, request_body body) {
    protocol::heartbeat_request req;
    if (!decode_request(ctx, body, req)) return;
    group::member_ref m{std::move(req.member_id), std::move(req.group_instance_id),
                        req.generation_id};
    protocol::heartbeat_response resp;
    auto& consumer = ctx.b.consumer_groups();
    const auto refused = group_refusal(ctx, req.group_id);
    resp.error_code = refused != protocol::error_code::none ? code(refused)
                      : consumer.has_members(req.group_id)
                          ? code(consumer.classic_heartbeat(req.group_id, m))
                          : code(ctx.b.groups().heartbeat(req.group_id, m));
    ctx.respond(resp);
}

}  // namespace sluice::broker
