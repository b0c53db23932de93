#include "protocol/messages/txn_offset_commit.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "common/clock.h"

namespace sluice::broker {

using protocol::error_code;

// Offsets pending with the transaction: they become the group's committed offsets when
// it commits and are dropped when it aborts. The group checks the member and generation
// as for OffsetCommit (KIP-447: a zombie of an older generation is fenced); v5
// (transaction version 2) adds the group to the transaction implicitly.
void handle_txn_offset_commit(const request_context& ctx, request_body body) {
    protocol::txn_offset_commit_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    // As Kafka: the transactional id first, then the group, then each topic.
    const bool id_denied =
        !ctx.allowed(security::resource_kind::transactional_id, req.transactional_id);
    error_code group_error = id_denied ? error_code::transactional_id_authorization_failed
                             : req.group_id.empty()
                                 ? (ctx.allowed(security::resource_kind::group, req.group_id)
                                        ? error_code::invalid_group_id
                                        : error_code::group_authorization_failed)
                                 : group_refusal(ctx, req.group_id);
    // As Kafka's doTxnCommitOffsets: without a member id and generation (v0-2, or a
    // producer outside the group) nothing is checked.
    if (group_error == error_code::none && !(req.member_id.empty() && req.generation_id < 0))
        group_error = b.groups().check_commit(
            req.group_id, {req.member_id, req.group_instance_id, req.generation_id});
    const int64_t now = now_ms();
    std::vector<txn::pending_offset> offsets;
    std::map<topic_partition, error_code> refused;
    for (const auto& t : req.topics) {
        if (id_denied) break;  // every partition gets the transactional id's refusal
        const topic_state* ts = b.topics().find(t.name);
        const bool denied = !ctx.allowed(security::resource_kind::topic, t.name);
        for (const auto& p : t.partitions) {
            topic_partition tp{t.name, p.partition_index};
            if (denied)
                refused[tp] = error_code::topic_authorization_failed;
            else if (!ts || p.partition_index < 0 || p.partition_index >= ts->info.partitions)
                refused[tp] = error_code::unknown_topic_or_partition;
            else if (p.committed_metadata &&
                     p.committed_metadata->size() > b.groups().settings().offset_metadata_max_bytes)
                refused[tp] = error_code::offset_metadata_too_large;
            else
                offsets.push_back({req.group_id, tp, p.committed_offset, p.committed_leader_epoch,
                                   p.committed_metadata.value_or(std::string{}), now});
        }
    }
    if (group_error == error_code::none && !offsets.empty()) {
        auto e = b.txns().commit_offsets(req.transactional_id, req.producer_id, req.producer_epoch,
                                         req.group_id, std::move(offsets), ctx.version() >= 5);
        log_txn_refusal(ctx, "TxnOffsetCommit", req.transactional_id, e);
        // Shared mode: the group's coordinator epoch moved on; as for a refused OffsetCommit.
        if (e == txn::txn_error::not_coordinator) b.on_groups_fenced({req.group_id});
        group_error = txn_error_code(e, ctx.version() >= 3, ctx.version() >= 4);
    }
    protocol::txn_offset_commit_response resp;
    for (const auto& t : req.topics) {
        auto& rt = resp.topics.emplace_back();
        rt.name = t.name;
        for (const auto& p : t.partitions) {
            auto it = refused.find({t.name, p.partition_index});
            rt.partitions.push_back(
                {p.partition_index, code(it == refused.end() ? group_error : it->second)});
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
