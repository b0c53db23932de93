#include "protocol/messages/leave_group.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

void handle_leave_group(const request_context& ctx, request_body body) {
    protocol::leave_group_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& groups = ctx.b.groups();
    protocol::leave_group_response resp;
    if (!ctx.allowed(security::resource_kind::group, req.group_id)) {
        resp.error_code = code(protocol::error_code::group_authorization_failed);
    } else if (ctx.version() < 3) {
        resp.error_code = code(groups.leave(req.group_id, {req.member_id, std::nullopt, -1}));
    } else {
        // v3+: each member of the batch gets its own answer.
        for (const auto& m : req.members) {
            auto e = groups.leave(req.group_id, {m.member_id, m.group_instance_id, -1});
            resp.members.push_back({m.member_id, m.group_instance_id, code(e)});
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
