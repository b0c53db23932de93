#include "protocol/messages/offset_commit.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "common/clock.h"

namespace sluice::broker {

using protocol::error_code;
using protocol::offset_commit_response;

// Validates the committer and every partition, makes the accepted offsets durable
// (group commit on the offset writer), and answers once they are.
void handle_offset_commit(const request_context& ctx, request_body body) {
    protocol::offset_commit_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    auto& groups = b.groups();
    // A consumer group (KIP-848) checks the member epoch; a classic one the generation.
    error_code group_error = error_code::none;
    if (req.group_id.empty())
        group_error = ctx.allowed(security::resource_kind::group, req.group_id)
                          ? error_code::invalid_group_id
                          : error_code::group_authorization_failed;
    else if (auto e = group_refusal(ctx, req.group_id); e != error_code::none)
        group_error = e;
    else if (auto c = b.consumer_groups().check_commit(req.group_id, req.member_id,
                                                       req.generation_id, ctx.version()))
        group_error = *c;
    else
        group_error = groups.check_commit(
            req.group_id, {req.member_id, req.group_instance_id, req.generation_id});
    int64_t now = now_ms();
    auto resp = std::make_shared<offset_commit_response>();
    std::vector<catalog::offset_write> writes;
    std::vector<group::offset_entry> accepted;
    for (const auto& t : req.topics) {
        auto& ot = resp->topics.emplace_back();
        ot.name = t.name;
        const topic_state* ts = b.topics().find(t.name);
        const bool denied =
            group_error == error_code::none && !ctx.allowed(security::resource_kind::topic, t.name);
        for (const auto& p : t.partitions) {
            auto& op = ot.partitions.emplace_back();
            op.partition_index = p.partition_index;
            error_code e = denied ? error_code::topic_authorization_failed : group_error;
            if (e == error_code::none &&
                (!ts || p.partition_index < 0 || p.partition_index >= ts->info.partitions))
                e = error_code::unknown_topic_or_partition;
            if (e == error_code::none && p.committed_metadata &&
                p.committed_metadata->size() > groups.settings().offset_metadata_max_bytes)
                e = error_code::offset_metadata_too_large;
            op.error_code = code(e);
            if (e != error_code::none) continue;
            // Kafka stores null metadata as the empty string, and OffsetFetch returns that.
            group::committed_offset v{p.committed_offset, p.committed_leader_epoch,
                                      p.committed_metadata.value_or(std::string{}), now, -1};
            if (req.retention_time_ms >= 0) v.expire_ms = now + req.retention_time_ms;
            writes.push_back({catalog::offset_write::kind::commit,
                              {req.group_id, t.name, p.partition_index, v.offset, v.leader_epoch,
                               v.metadata, v.commit_ms, v.expire_ms}});
            accepted.push_back({{t.name, p.partition_index}, std::move(v)});
        }
    }
    if (group_error != error_code::none && group_error != error_code::invalid_group_id)
        log_debug("group", "{}: commit to group '{}' refused: {}", ctx.client(), req.group_id,
                  protocol::error_name(group_error));
    if (writes.empty()) return ctx.respond(*resp);
    b.store_offsets(std::move(writes), [ctx, resp, group_id = std::move(req.group_id),
                                        accepted = std::move(accepted)](const result<void>& r) {
        if (r) {
            // Topics deleted while the write was queued were skipped by the store.
            std::vector<group::offset_entry> live;
            for (const auto& e : accepted)
                if (ctx.b.topics().find(e.tp.topic)) live.push_back(e);
            ctx.b.groups().store_offsets(group_id, live);
        } else {
            for (auto& t : resp->topics)
                for (auto& p : t.partitions)
                    if (p.error_code == 0) p.error_code = code(offset_write_error(r.err()));
        }
        ctx.respond(*resp);
    });
}

}  // namespace sluice::broker
