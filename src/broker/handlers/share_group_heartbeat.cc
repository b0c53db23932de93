#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/share_group.h"

namespace sluice::broker {

using protocol::share_group_heartbeat_request;
using protocol::share_group_heartbeat_response;

void handle_share_group_heartbeat(const request_context& ctx, request_body body) {
    share_group_heartbeat_request req;
    if (!decode_request(ctx, body, req)) return;
    if (auto e = group_refusal(ctx, req.group_id); e != protocol::error_code::none) {
        share_group_heartbeat_response refused;
        refused.error_code = code(e);
        ctx.respond(refused);
        return;
    }
    group::share::heartbeat_request h;
    h.group_id = std::move(req.group_id);
    h.member_id = std::move(req.member_id);
    h.member_epoch = req.member_epoch;
    h.rack_id = std::move(req.rack_id);
    h.subscribed_topic_names = std::move(req.subscribed_topic_names);
    h.client_id = ctx.header.client_id.value_or("");
    h.client_host = client_host(ctx);
    ctx.b.share_groups().heartbeat(std::move(h), [ctx](const group::share::heartbeat_result& r) {
        share_group_heartbeat_response resp;
        resp.error_code = code(r.error);
        resp.error_message = r.message;
        if (r.error != protocol::error_code::none) {
            log_debug("group", "{}: share group heartbeat refused: {} ({})", ctx.client(),
                      protocol::error_name(r.error), r.message.value_or(""));
            return ctx.respond(resp);
        }
        resp.member_id = r.member_id;
        resp.member_epoch = r.member_epoch;
        resp.heartbeat_interval_ms = r.heartbeat_interval_ms;
        if (r.assignment) {
            resp.assigned.emplace();
            for (const auto& [name, ps] : *r.assignment)
                if (const topic_state* ts = ctx.b.topics().find(name))
                    resp.assigned->topic_partitions.push_back(
                        {ts->info.id, std::vector<int32_t>(ps.begin(), ps.end())});
        }
        ctx.respond(resp);
    });
}

}  // namespace sluice::broker
