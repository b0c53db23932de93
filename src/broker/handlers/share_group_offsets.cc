// The share group offset APIs (KIP-932): DescribeShareGroupOffsets,
// AlterShareGroupOffsets and DeleteShareGroupOffsets, over share::coordinator's
// share-partitions (src/group/share/offsets.cc).

#include <algorithm>
#include <map>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/share_group_offsets.h"

namespace sluice::broker {
namespace {

using protocol::error_code;
namespace proto = protocol;

const topic_state* known_partition(broker& b, const std::string& topic, int32_t partition) {
    const topic_state* ts = b.topics().find(topic);
    return ts && partition >= 0 && partition < ts->info.partitions ? ts : nullptr;
}

// One partition of a DescribeShareGroupOffsets answer: the start offset and Kafka's lag
// (KIP-1226: what is not yet done between the start offset and the high watermark).
proto::describe_share_group_offsets_response::partition describe_partition(
    broker& b, const group::share::tp& p, const group::share::partition_offset* o) {
    proto::describe_share_group_offsets_response::partition out;
    out.partition_index = p.second;
    if (!o) return out;  // no state: start offset and lag -1, as Kafka
    out.start_offset = o->start_offset;
    out.leader_epoch = 0;
    const topic_state* ts = b.topics().find(p.first);
    if (log::partition_store* plog = ts ? b.partition(*ts, p.second) : nullptr)
        out.lag =
            std::max<int64_t>(0, plog->high_watermark() - o->start_offset - o->done_in_window);
    return out;
}

proto::describe_share_group_offsets_response::group describe_group(
    const request_context& ctx, const proto::describe_share_group_offsets_request::group& rg) {
    auto& b = ctx.b;
    proto::describe_share_group_offsets_response::group out;
    out.group_id = rg.group_id;
    auto fail = [&](error_code e, std::string msg) {
        out.error_code = code(e);
        out.error_message = std::move(msg);
        return out;
    };
    if (rg.group_id.empty()) return fail(error_code::invalid_group_id, "the group id is empty");
    if (auto e = group_refusal(ctx, rg.group_id); e != error_code::none)
        return fail(e, e == error_code::group_authorization_failed
                           ? "not authorized on the group"
                           : std::string(proto::error_name(e)));
    auto offsets = b.share_groups().offsets(rg.group_id);
    if (!offsets)
        return fail(error_code::group_id_not_found,
                    "group " + rg.group_id + " is not a share group");
    std::map<group::share::tp, const group::share::partition_offset*> by_tp;
    for (const auto& o : *offsets) by_tp[o.partition] = &o;
    auto topic_entry = [&](const std::string& name) -> auto& {
        if (out.topics.empty() || out.topics.back().topic_name != name) {
            auto& t = out.topics.emplace_back();
            t.topic_name = name;
            if (const topic_state* ts = b.topics().find(name)) t.topic_id = ts->info.id;
        }
        return out.topics.back();
    };
    if (!rg.topics) {  // every partition the group has state for, of topics it may see
        for (const auto& [p, o] : by_tp)
            if (ctx.allowed_quiet(security::resource_kind::topic, p.first) &&
                b.topics().find(p.first))
                topic_entry(p.first).partitions.push_back(describe_partition(b, p, o));
        return out;
    }
    for (const auto& t : *rg.topics) {
        const bool denied = !ctx.allowed(security::resource_kind::topic, t.topic_name);
        auto& ot = topic_entry(t.topic_name);
        for (int32_t part : t.partitions) {
            const group::share::tp p{t.topic_name, part};
            error_code e = denied ? error_code::topic_authorization_failed
                           : !known_partition(b, t.topic_name, part)
                               ? error_code::unknown_topic_or_partition
                               : error_code::none;
            if (e != error_code::none) {
                auto& op = ot.partitions.emplace_back();
                op.partition_index = part;
                op.error_code = code(e);
                op.error_message = std::string(proto::error_name(e));
                continue;
            }
            auto it = by_tp.find(p);
            ot.partitions.push_back(
                describe_partition(b, p, it == by_tp.end() ? nullptr : it->second));
        }
    }
    return out;
}

// Alter and Delete change an empty share group only: the group-level error of the
// answer, if any (an unknown group is created for Alter, as Kafka does).
template <typename Response>
bool refused(const request_context& ctx, const std::string& group, bool create, Response& resp) {
    error_code e = group.empty() ? error_code::invalid_group_id : group_refusal(ctx, group);
    if (e == error_code::none) e = ctx.b.share_groups().check_empty(group, create);
    if (e == error_code::none) return false;
    resp.error_code = code(e);
    resp.error_message = e == error_code::non_empty_group ? "share group " + group + " has members"
                                                          : std::string(proto::error_name(e));
    return true;
}

}  // namespace

void handle_describe_share_group_offsets(const request_context& ctx, request_body body) {
    proto::describe_share_group_offsets_request req;
    if (!decode_request(ctx, body, req)) return;
    proto::describe_share_group_offsets_response resp;
    for (const auto& g : req.groups) resp.groups.push_back(describe_group(ctx, g));
    ctx.respond(resp);
}

void handle_alter_share_group_offsets(const request_context& ctx, request_body body) {
    proto::alter_share_group_offsets_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    auto& sg = b.share_groups();
    proto::alter_share_group_offsets_response resp;
    if (refused(ctx, req.group_id, true, resp)) return ctx.respond(resp);
    for (const auto& t : req.topics) {
        auto& ot = resp.responses.emplace_back();
        ot.topic_name = t.topic_name;
        if (const topic_state* ts = b.topics().find(t.topic_name)) ot.topic_id = ts->info.id;
        const bool denied = !ctx.allowed(security::resource_kind::topic, t.topic_name);
        for (const auto& p : t.partitions) {
            error_code e = denied ? error_code::topic_authorization_failed
                           : !known_partition(b, t.topic_name, p.partition_index)
                               ? error_code::unknown_topic_or_partition
                           : p.start_offset < 0
                               ? error_code::invalid_request
                               : sg.alter_offset(req.group_id, {t.topic_name, p.partition_index},
                                                 p.start_offset);
            auto& op = ot.partitions.emplace_back();
            op.partition_index = p.partition_index;
            op.error_code = code(e);
            if (e != error_code::none) op.error_message = std::string(proto::error_name(e));
        }
    }
    ctx.respond(resp);
}

void handle_delete_share_group_offsets(const request_context& ctx, request_body body) {
    proto::delete_share_group_offsets_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    auto& sg = b.share_groups();
    proto::delete_share_group_offsets_response resp;
    if (refused(ctx, req.group_id, false, resp)) return ctx.respond(resp);
    for (const auto& t : req.topics) {
        auto& ot = resp.responses.emplace_back();
        ot.topic_name = t.topic_name;
        const topic_state* ts = b.topics().find(t.topic_name);
        if (ts) ot.topic_id = ts->info.id;
        error_code e = !ctx.allowed(security::resource_kind::topic, t.topic_name)
                           ? error_code::topic_authorization_failed
                       : !ts ? error_code::unknown_topic_or_partition
                             : error_code::none;
        if (e == error_code::none) {
            auto r = sg.delete_offsets(req.group_id, t.topic_name);
            e = !r    ? error_code::kafka_storage_error
                : !*r ? error_code::unknown_topic_or_partition
                      : error_code::none;
            if (r && !*r) ot.error_message = "the share group has no offsets for the topic";
        }
        ot.error_code = code(e);
        if (e != error_code::none && !ot.error_message)
            ot.error_message = std::string(proto::error_name(e));
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
