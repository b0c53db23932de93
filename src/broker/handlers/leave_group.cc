#include "protocol/messages/leave_group.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

void handle_leave_group(const request_context& ctx, request_body body) {
    protocol::leave_group_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& classic = ctx.b.groups();
    auto& consumer = ctx.b.consumer_groups();
    auto leave = [&](const group::member_ref& m) {
        return consumer.has_members(req.group_id) ? consumer.classic_leave(req.group_id, m)
                                                  : classic.leave(req.group_id, m);
    };
    protocol::leave_group_response resp;
    if (auto refused = group_refusal(ctx, req.group_id); refused != protocol::error_code::none) {
        resp.error_code = code(refused);
    } else if (ctx.version() < 3) {
        resp.error_code = code(leave({req.member_id, std::nullopt, -1}));
    } else {
        // v3+: each member of the batch gets its own answer.
        for (const auto& m : req.members) {
            auto e = leave({m.member_id, m.group_instance_id, -1});
            resp.members.push_back({m.member_id, m.group_instance_id, code(e)});
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
