// The share group offset APIs (KIP-932): DescribeShareGroupOffsets,
// AlterShareGroupOffsets and DeleteShareGroupOffsets, over share::coordinator's
// share-partitions (src/group/share/offsets.cc).

#include <algorithm>
#include <map>
#include <memory>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/share_common.h"
#include "protocol/messages/share_group_offsets.h"

namespace sluice::broker {
namespace {

using protocol::error_code;
namespace proto = protocol;

const topic_state* known_partition(broker& b, const std::string& topic, int32_t partition) {
    const topic_state* ts = b.topics().find(topic);
    return ts && partition >= 0 && partition < ts->info.partitions ? ts : nullptr;
}

using offsets = std::optional<std::vector<group::share::partition_offset>>;
using high_watermarks = std::map<group::share::tp, int64_t>;

// Loop thread: the high watermarks of the partitions of `found`, read where share work
// runs (the database, off the loop, in shared mode), then `done` on the loop thread.
void read_high_watermarks(broker& b, const std::string& group, const offsets& found,
                          std::function<void(high_watermarks)> done) {
    std::vector<std::pair<group::share::tp, log::partition_store*>> logs;
    for (const auto& o : found ? *found : std::vector<group::share::partition_offset>{}) {
        const topic_state* ts = b.topics().find(o.partition.first);
        if (log::partition_store* plog = ts ? b.partition(*ts, o.partition.second) : nullptr)
            logs.emplace_back(o.partition, plog);
    }
    auto out = std::make_shared<high_watermarks>();
    b.share_work().run(
        group, "",
        [logs = std::move(logs), out] {
            for (const auto& [p, plog] : logs) (*out)[p] = plog->high_watermark();
        },
        [out, done = std::move(done)] { done(std::move(*out)); });
}

// One partition of a DescribeShareGroupOffsets answer: the start offset and Kafka's lag
// (KIP-1226: what is not yet done between the start offset and the high watermark).
proto::describe_share_group_offsets_response::partition describe_partition(
    const group::share::tp& p, const group::share::partition_offset* o,
    const high_watermarks& marks) {
    proto::describe_share_group_offsets_response::partition out;
    out.partition_index = p.second;
    if (!o) return out;  // no state: start offset and lag -1, as Kafka
    out.start_offset = o->start_offset;
    out.leader_epoch = 0;
    if (auto it = marks.find(p); it != marks.end())
        out.lag = std::max<int64_t>(0, it->second - o->start_offset - o->done_in_window);
    return out;
}

// Why a group of a share group offset request is refused before its state is looked at
// (empty id, not authorized, not coordinated here); NONE when it is not.
error_code group_check(const request_context& ctx, const std::string& group) {
    return group.empty() ? error_code::invalid_group_id : group_refusal(ctx, group);
}

std::string group_error_message(const std::string& group, error_code e) {
    switch (e) {
        case error_code::invalid_group_id:
            return "the group id is empty";
        case error_code::group_authorization_failed:
            return "not authorized on the group";
        case error_code::non_empty_group:
            return "share group " + group + " has members";
        case error_code::group_id_not_found:
            return "group " + group + " is not a share group";
        default:
            return std::string(proto::error_name(e));
    }
}

// A group-level error: the answer carries nothing else.
template <typename Response>
void set_group_error(Response& resp, const std::string& group, error_code e) {
    resp.error_code = code(e);
    resp.error_message = group_error_message(group, e);
    resp.responses.clear();
}

proto::describe_share_group_offsets_response::group describe_group(
    const request_context& ctx, const proto::describe_share_group_offsets_request::group& rg,
    const offsets& found, const high_watermarks& marks) {
    auto& b = ctx.b;
    proto::describe_share_group_offsets_response::group out;
    out.group_id = rg.group_id;
    if (!found) {
        out.error_code = code(error_code::group_id_not_found);
        out.error_message = group_error_message(rg.group_id, error_code::group_id_not_found);
        return out;
    }
    std::map<group::share::tp, const group::share::partition_offset*> by_tp;
    for (const auto& o : *found) by_tp[o.partition] = &o;
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
                topic_entry(p.first).partitions.push_back(describe_partition(p, o, marks));
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
                describe_partition(p, it == by_tp.end() ? nullptr : it->second, marks));
        }
    }
    return out;
}

}  // namespace

void handle_describe_share_group_offsets(const request_context& ctx, request_body body) {
    proto::describe_share_group_offsets_request req;
    if (!decode_request(ctx, body, req)) return;
    auto resp = std::make_shared<proto::describe_share_group_offsets_response>();
    resp->groups.resize(req.groups.size());
    auto all = std::make_shared<share_calls>([ctx, resp] { ctx.respond(*resp); });
    for (size_t i = 0; i < req.groups.size(); ++i) {
        const auto& rg = req.groups[i];
        if (auto e = group_check(ctx, rg.group_id); e != error_code::none) {
            resp->groups[i].group_id = rg.group_id;
            resp->groups[i].error_code = code(e);
            resp->groups[i].error_message = group_error_message(rg.group_id, e);
            continue;
        }
        all->add();
        ctx.b.share_groups().offsets(rg.group_id, [ctx, resp, i, rg, all](offsets found) {
            auto got = std::make_shared<offsets>(std::move(found));
            read_high_watermarks(ctx.b, rg.group_id, *got,
                                 [ctx, resp, i, rg, all, got](const high_watermarks& marks) {
                                     resp->groups[i] = describe_group(ctx, rg, *got, marks);
                                     all->finish();
                                 });
        });
    }
    all->finish();
}

void handle_alter_share_group_offsets(const request_context& ctx, request_body body) {
    proto::alter_share_group_offsets_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    auto resp = std::make_shared<proto::alter_share_group_offsets_response>();
    if (auto e = group_check(ctx, req.group_id); e != error_code::none) {
        set_group_error(*resp, req.group_id, e);
        return ctx.respond(*resp);
    }
    std::vector<std::pair<group::share::tp, int64_t>> starts;
    std::vector<std::pair<size_t, size_t>> slots;  // (topic, partition) of each start
    for (const auto& t : req.topics) {
        auto& ot = resp->responses.emplace_back();
        ot.topic_name = t.topic_name;
        if (const topic_state* ts = b.topics().find(t.topic_name)) ot.topic_id = ts->info.id;
        const bool denied = !ctx.allowed(security::resource_kind::topic, t.topic_name);
        for (const auto& p : t.partitions) {
            error_code e = denied ? error_code::topic_authorization_failed
                           : !known_partition(b, t.topic_name, p.partition_index)
                               ? error_code::unknown_topic_or_partition
                           : p.start_offset < 0 ? error_code::invalid_request
                                                : error_code::none;
            auto& op = ot.partitions.emplace_back();
            op.partition_index = p.partition_index;
            op.error_code = code(e);
            if (e != error_code::none) op.error_message = std::string(proto::error_name(e));
            if (e != error_code::none) continue;
            starts.push_back({{t.topic_name, p.partition_index}, p.start_offset});
            slots.emplace_back(resp->responses.size() - 1, ot.partitions.size() - 1);
        }
    }
    b.share_groups().alter_offsets(
        req.group_id, std::move(starts),
        [ctx, resp, group = req.group_id, slots](error_code e, std::vector<error_code> each) {
            if (e != error_code::none) set_group_error(*resp, group, e);
            for (size_t i = 0; e == error_code::none && i < each.size(); ++i) {
                auto& op = resp->responses[slots[i].first].partitions[slots[i].second];
                op.error_code = code(each[i]);
                if (each[i] != error_code::none)
                    op.error_message = std::string(proto::error_name(each[i]));
            }
            ctx.respond(*resp);
        });
}

void handle_delete_share_group_offsets(const request_context& ctx, request_body body) {
    proto::delete_share_group_offsets_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    auto resp = std::make_shared<proto::delete_share_group_offsets_response>();
    if (auto e = group_check(ctx, req.group_id); e != error_code::none) {
        set_group_error(*resp, req.group_id, e);
        return ctx.respond(*resp);
    }
    std::vector<std::string> topics;
    std::vector<size_t> slots;  // the answer's topic of each
    for (const auto& t : req.topics) {
        auto& ot = resp->responses.emplace_back();
        ot.topic_name = t.topic_name;
        const topic_state* ts = b.topics().find(t.topic_name);
        if (ts) ot.topic_id = ts->info.id;
        error_code e = !ctx.allowed(security::resource_kind::topic, t.topic_name)
                           ? error_code::topic_authorization_failed
                       : !ts ? error_code::unknown_topic_or_partition
                             : error_code::none;
        ot.error_code = code(e);
        if (e != error_code::none) ot.error_message = std::string(proto::error_name(e));
        if (e != error_code::none) continue;
        topics.push_back(t.topic_name);
        slots.push_back(resp->responses.size() - 1);
    }
    b.share_groups().delete_offsets(
        req.group_id, std::move(topics),
        [ctx, resp, group = req.group_id, slots](error_code e, std::vector<error_code> each) {
            if (e != error_code::none) set_group_error(*resp, group, e);
            for (size_t i = 0; e == error_code::none && i < each.size(); ++i) {
                auto& ot = resp->responses[slots[i]];
                ot.error_code = code(each[i]);
                if (each[i] == error_code::unknown_topic_or_partition)
                    ot.error_message = "the share group has no offsets for the topic";
                else if (each[i] != error_code::none)
                    ot.error_message = std::string(proto::error_name(each[i]));
            }
            ctx.respond(*resp);
        });
}

}  // namespace sluice::broker
