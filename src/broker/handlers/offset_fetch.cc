#include "protocol/messages/offset_fetch.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {
namespace {

using protocol::offset_fetch_request;
using protocol::offset_fetch_response;

using protocol::error_code;

// One group's answer: the partitions asked for (an uncommitted one gets offset -1), or
// with topics null every partition the group has committed. Topics the principal may
// not describe are left out of "every", and answer TOPIC_AUTHORIZATION_FAILED when named.
// require_stable (v7+): a partition whose offset is pending in an open transaction
// answers UNSTABLE_OFFSET_COMMIT, as Kafka does, so the consumer waits for it.
std::vector<offset_fetch_response::topic> fetch_group(
    const request_context& ctx, const std::string& group_id,
    const std::optional<std::vector<offset_fetch_request::topic>>& topics, bool require_stable) {
    const auto& groups = ctx.b.groups();
    auto unstable = [&](const topic_partition& tp) {
        return require_stable && ctx.b.txns().has_pending_offset(group_id, tp);
    };
    std::vector<offset_fetch_response::topic> out;
    auto fill = [](offset_fetch_response::partition& p, const group::committed_offset& v) {
        p.committed_offset = v.offset;
        p.committed_leader_epoch = v.leader_epoch;
        // Offsets committed with null metadata before it was stored as "" read as "" too.
        p.metadata = v.metadata.value_or(std::string{});
    };
    if (!topics) {
        for (const auto& e : groups.committed_all(group_id)) {
            if (!ctx.allowed_quiet(security::resource_kind::topic, e.tp.topic)) continue;
            if (out.empty() || out.back().name != e.tp.topic) out.push_back({e.tp.topic, {}});
            auto& p = out.back().partitions.emplace_back();
            p.partition_index = e.tp.partition;
            if (unstable(e.tp))
                p.error_code = code(error_code::unstable_offset_commit);
            else
                fill(p, e.value);
        }
        return out;
    }
    for (const auto& t : *topics) {
        auto& ot = out.emplace_back();
        ot.name = t.name;
        const bool denied = !ctx.allowed(security::resource_kind::topic, t.name);
        for (int32_t idx : t.partition_indexes) {
            auto& p = ot.partitions.emplace_back();
            p.partition_index = idx;
            p.metadata = "";
            if (denied)
                p.error_code = code(error_code::topic_authorization_failed);
            else if (unstable({t.name, idx}))
                p.error_code = code(error_code::unstable_offset_commit);
            else if (auto v = groups.committed(group_id, {t.name, idx}))
                fill(p, *v);
        }
    }
    return out;
}

}  // namespace

void handle_offset_fetch(const request_context& ctx, request_body body) {
    offset_fetch_request req;
    if (!decode_request(ctx, body, req)) return;
    offset_fetch_response resp;
    if (ctx.version() >= 8) {
        for (const auto& g : req.groups) {
            if (auto e = group_refusal(ctx, g.group_id); e != error_code::none) {
                resp.groups.push_back({g.group_id, {}, code(e)});
                continue;
            }
            // v9+: a consumer-group member must name its current epoch (KIP-848).
            auto member =
                ctx.b.consumer_groups().check_fetch(g.group_id, g.member_id, g.member_epoch);
            if (member != error_code::none)
                resp.groups.push_back({g.group_id, {}, code(member)});
            else
                resp.groups.push_back(
                    {g.group_id, fetch_group(ctx, g.group_id, g.topics, req.require_stable), 0});
        }
    } else if (auto refused = group_refusal(ctx, req.group_id); refused != error_code::none) {
        // v2-7 carry the error for the group; v0-1 only have the partitions' codes.
        const auto group_denied = code(refused);
        resp.error_code = group_denied;
        if (req.topics) {
            for (const auto& t : *req.topics) {
                auto& ot = resp.topics.emplace_back();
                ot.name = t.name;
                for (int32_t idx : t.partition_indexes) {
                    auto& p = ot.partitions.emplace_back();
                    p.partition_index = idx;
                    p.metadata = "";
                    p.error_code = group_denied;
                }
            }
        }
    } else {
        resp.topics = fetch_group(ctx, req.group_id, req.topics, req.require_stable);
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
