#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/consumer_group.h"

namespace sluice::broker {

using protocol::consumer_group_heartbeat_request;
using protocol::consumer_group_heartbeat_response;

// Topic ids on the wire, names inside the coordinator. An id no topic has any more is
// left out: the member no longer owns what it cannot fetch.
static group::partition_map by_name(
    broker& b, const std::vector<consumer_group_heartbeat_request::topic_partition_set>& in) {
    group::partition_map out;
    for (const auto& t : in)
        if (const topic_state* ts = b.topics().find(catalog::uuid(t.topic_id)))
            out[ts->info.name].insert(t.partitions.begin(), t.partitions.end());
    return out;
}

static std::vector<consumer_group_heartbeat_request::topic_partition_set> by_id(
    broker& b, const group::partition_map& in) {
    std::vector<consumer_group_heartbeat_request::topic_partition_set> out;
    for (const auto& [name, ps] : in)
        if (const topic_state* ts = b.topics().find(name))
            out.push_back({ts->info.id, std::vector<int32_t>(ps.begin(), ps.end())});
    return out;
}

void handle_consumer_group_heartbeat(const request_context& ctx, request_body body) {
    consumer_group_heartbeat_request req;
    if (!decode_request(ctx, body, req)) return;
    if (auto e = group_refusal(ctx, req.group_id); e != protocol::error_code::none) {
        consumer_group_heartbeat_response resp;
        resp.error_code = code(e);
        ctx.respond(resp);
        return;
    }
    group::consumer::heartbeat_request h;
    h.version = ctx.version();
    h.group_id = std::move(req.group_id);
    h.member_id = std::move(req.member_id);
    h.member_epoch = req.member_epoch;
    h.instance_id = std::move(req.instance_id);
    h.rack_id = std::move(req.rack_id);
    h.rebalance_timeout_ms = req.rebalance_timeout_ms;
    h.subscribed_topic_names = std::move(req.subscribed_topic_names);
    h.subscribed_topic_regex = std::move(req.subscribed_topic_regex);
    h.server_assignor = std::move(req.server_assignor);
    if (req.topic_partitions_owned) h.owned = by_name(ctx.b, *req.topic_partitions_owned);
    h.client_id = ctx.header.client_id.value_or("");
    h.client_host = client_host(ctx);
    ctx.b.consumer_groups().heartbeat(
        std::move(h), [ctx](const group::consumer::heartbeat_result& r) {
            consumer_group_heartbeat_response resp;
            resp.error_code = code(r.error);
            resp.error_message = r.message;
            if (r.error == protocol::error_code::none) {
                resp.member_id = r.member_id;
                resp.member_epoch = r.member_epoch;
                resp.heartbeat_interval_ms = r.heartbeat_interval_ms;
                if (r.assignment) resp.assigned = {by_id(ctx.b, *r.assignment)};
            } else {
                log_debug("group", "{}: consumer group heartbeat refused: {} ({})", ctx.client(),
                          protocol::error_name(r.error), r.message.value_or(""));
            }
            ctx.respond(resp);
        });
}

}  // namespace sluice::broker
