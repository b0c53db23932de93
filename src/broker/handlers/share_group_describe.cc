#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/share_group.h"

namespace sluice::broker {

using protocol::share_group_describe_request;
using protocol::share_group_describe_response;

void handle_share_group_describe(const request_context& ctx, request_body body) {
    share_group_describe_request req;
    if (!decode_request(ctx, body, req)) return;
    share_group_describe_response resp;
    for (const auto& id : req.group_ids) {
        auto& g = resp.groups.emplace_back();
        g.group_id = id;
        if (auto e = group_refusal(ctx, id); e != protocol::error_code::none) {
            g.error_code = code(e);
            continue;
        }
        auto d = ctx.b.share_groups().describe(id);
        if (!d) {
            g.error_code = code(protocol::error_code::group_id_not_found);
            g.error_message = "group " + id + " is not a share group";
            continue;
        }
        g.group_state = d->state;
        g.group_epoch = d->group_epoch;
        g.assignment_epoch = d->assignment_epoch;
        g.assignor_name = "simple";
        for (const auto& m : d->members) {
            auto& om = g.members.emplace_back();
            om.member_id = m.member_id;
            om.rack_id = m.rack_id;
            om.member_epoch = m.member_epoch;
            om.client_id = m.client_id;
            om.client_host = m.client_host;
            om.subscribed_topic_names = m.subscribed_topics;
            for (const auto& [name, ps] : m.assigned)
                if (const topic_state* ts = ctx.b.topics().find(name))
                    om.current.assigned.push_back(
                        {ts->info.id, name, std::vector<int32_t>(ps.begin(), ps.end())});
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
