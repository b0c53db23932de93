#include "protocol/messages/offset_fetch.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {
namespace {

using protocol::offset_fetch_request;
using protocol::offset_fetch_response;

// One group's answer: the partitions asked for (an uncommitted one gets offset -1), or
// with topics null every partition the group has committed.
std::vector<offset_fetch_response::topic> fetch_group(
    const group::coordinator& groups, const std::string& group_id,
    const std::optional<std::vector<offset_fetch_request::topic>>& topics) {
    std::vector<offset_fetch_response::topic> out;
    auto fill = [](offset_fetch_response::partition& p, const group::committed_offset& v) {
        p.committed_offset = v.offset;
        p.committed_leader_epoch = v.leader_epoch;
        p.metadata = v.metadata;
    };
    if (!topics) {
        for (const auto& e : groups.committed_all(group_id)) {
            if (out.empty() || out.back().name != e.tp.topic) out.push_back({e.tp.topic, {}});
            auto& p = out.back().partitions.emplace_back();
            p.partition_index = e.tp.partition;
            fill(p, e.value);
        }
        return out;
    }
    for (const auto& t : *topics) {
        auto& ot = out.emplace_back();
        ot.name = t.name;
        for (int32_t idx : t.partition_indexes) {
            auto& p = ot.partitions.emplace_back();
            p.partition_index = idx;
            p.metadata = "";
            if (auto v = groups.committed(group_id, {t.name, idx})) fill(p, *v);
        }
    }
    return out;
}

}  // namespace

void handle_offset_fetch(const request_context& ctx, bytes_view body) {
    offset_fetch_request req;
    if (!decode_request(ctx, body, req)) return;
    const auto& groups = ctx.b.groups();
    offset_fetch_response resp;
    if (ctx.version() >= 8) {
        for (const auto& g : req.groups)
            resp.groups.push_back({g.group_id, fetch_group(groups, g.group_id, g.topics), 0});
    } else {
        resp.topics = fetch_group(groups, req.group_id, req.topics);
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
