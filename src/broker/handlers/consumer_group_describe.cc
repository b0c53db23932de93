#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/consumer_group.h"

namespace sluice::broker {

using protocol::consumer_group_describe_response;

static consumer_group_describe_response::assignment describe_partitions(
    broker& b, const group::partition_map& in) {
    consumer_group_describe_response::assignment out;
    for (const auto& [name, ps] : in) {
        const topic_state* ts = b.topics().find(name);
        if (!ts) continue;
        out.topic_partitions.push_back(
            {ts->info.id, name, std::vector<int32_t>(ps.begin(), ps.end())});
    }
    return out;
}

void handle_consumer_group_describe(const request_context& ctx, request_body body) {
    protocol::consumer_group_describe_request req;
    if (!decode_request(ctx, body, req)) return;
    consumer_group_describe_response resp;
    for (const auto& id : req.group_ids) {
        auto& out = resp.groups.emplace_back();
        out.group_id = id;
        if (auto e = group_refusal(ctx, id); e != protocol::error_code::none) {
            out.error_code = code(e);
            continue;
        }
        auto d = ctx.b.consumer_groups().describe(id);
        if (!d) {
            // As Kafka: an unknown group, or a classic one, is not a consumer group.
            out.error_code = code(protocol::error_code::group_id_not_found);
            out.error_message = "Group " + id + " not found.";
            if (ctx.b.groups().describe(id))
                out.error_message = "Group " + id + " is not a consumer group.";
            continue;
        }
        if (req.include_authorized_operations)
            out.authorized_operations =
                authorized_operations(ctx, {security::resource_kind::group, id});
        out.group_state = d->state;
        out.group_epoch = d->group_epoch;
        out.assignment_epoch = d->assignment_epoch;
        out.assignor_name = d->assignor;
        for (auto& m : d->members) {
            auto& om = out.members.emplace_back();
            om.member_id = std::move(m.member_id);
            om.instance_id = std::move(m.instance_id);
            om.rack_id = std::move(m.rack_id);
            om.member_epoch = m.member_epoch;
            om.member_type = m.classic ? 0 : 1;  // v1+: 0 a classic member, 1 a consumer one
            om.client_id = std::move(m.client_id);
            om.client_host = std::move(m.client_host);
            om.subscribed_topic_names = std::move(m.subscribed_topics);
            om.subscribed_topic_regex = std::move(m.subscribed_regex);
            om.current = describe_partitions(ctx.b, m.assigned);
            om.target = describe_partitions(ctx.b, m.target);
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
