#include "protocol/messages/add_partitions_to_txn.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {
namespace {

using protocol::add_partitions_to_txn_request;
using protocol::add_partitions_to_txn_response;
using protocol::error_code;

// One transaction's partitions: as Kafka, a partition that cannot join (unknown or not
// allowed) gets its own code and the others OPERATION_NOT_ATTEMPTED; otherwise all get
// the coordinator's answer, which for verify_only (v4+) is each partition's own: NONE in
// the ongoing transaction, TRANSACTION_ABORTABLE outside it.
std::vector<add_partitions_to_txn_response::topic_result> add_one(
    const request_context& ctx, const std::string& id, int64_t pid, int16_t epoch, bool verify_only,
    const std::vector<add_partitions_to_txn_request::topic>& topics) {
    std::vector<topic_partition> tps;
    std::map<topic_partition, error_code> refused;
    for (const auto& t : topics) {
        const topic_state* ts = ctx.b.topics().find(t.name);
        const bool denied = !ctx.allowed(security::resource_kind::topic, t.name);
        for (int32_t p : t.partitions) {
            topic_partition tp{t.name, p};
            if (denied)
                refused[tp] = error_code::topic_authorization_failed;
            else if (!ts || p < 0 || p >= ts->info.partitions)
                refused[tp] = error_code::unknown_topic_or_partition;
            tps.push_back(std::move(tp));
        }
    }
    error_code all = error_code::none;
    if (refused.empty() && verify_only) {
        for (const auto& tp : tps) {
            auto e = ctx.b.txns().verify_partitions(id, pid, epoch, {tp});
            if (e != txn::txn_error::none) refused[tp] = txn_error_code(e, true, true);
        }
        // Nothing was attempted: each partition has its own answer.
        for (const auto& tp : tps) refused.try_emplace(tp, error_code::none);
    } else if (refused.empty()) {
        auto e = ctx.b.txns().add_partitions(id, pid, epoch, tps);
        log_txn_refusal(ctx, "AddPartitionsToTxn", id, e);
        all = txn_error_code(e, ctx.version() >= 2);
    }
    std::vector<add_partitions_to_txn_response::topic_result> out;
    for (const auto& t : topics) {
        auto& tr = out.emplace_back();
        tr.name = t.name;
        for (int32_t p : t.partitions) {
            error_code e = all;
            if (!refused.empty()) {
                auto it = refused.find({t.name, p});
                e = it == refused.end() ? error_code::operation_not_attempted : it->second;
            }
            tr.results.push_back({p, code(e)});
        }
    }
    return out;
}

}  // namespace

// v0-3 come from a transactional producer, which needs Write on its transactional id;
// v4+ from a partition leader verifying or adding for its producers (KIP-890), which
// needs ClusterAction on the cluster instead, as in Kafka. Both are answered from the one
// coordinator here.
void handle_add_partitions_to_txn(const request_context& ctx, request_body body) {
    add_partitions_to_txn_request req;
    if (!decode_request(ctx, body, req)) return;
    add_partitions_to_txn_response resp;
    if (ctx.version() < 4) {
        // As Kafka: a client needs Write on its transactional id, else every partition is
        // refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
        if (!ctx.allowed(security::resource_kind::transactional_id, req.transactional_id)) {
            for (const auto& t : req.topics) {
                auto& tr = resp.results_by_topic.emplace_back();
                tr.name = t.name;
                for (int32_t p : t.partitions)
                    tr.results.push_back(
                        {p, code(error_code::transactional_id_authorization_failed)});
            }
            return ctx.respond(resp);
        }
        resp.results_by_topic = add_one(ctx, req.transactional_id, req.producer_id,
                                        req.producer_epoch, false, req.topics);
        return ctx.respond(resp);
    }
    if (!ctx.allowed(security::resource_kind::cluster)) {
        resp.error_code = code(error_code::cluster_authorization_failed);
        return ctx.respond(resp);
    }
    for (const auto& t : req.transactions) {
        auto& r = resp.results_by_transaction.emplace_back();
        r.transactional_id = t.transactional_id;
        r.topic_results = add_one(ctx, t.transactional_id, t.producer_id, t.producer_epoch,
                                  t.verify_only, t.topics);
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
