#include <memory>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "common/clock.h"
#include "protocol/messages/txn_admin.h"

namespace sluice::broker {
namespace {

using protocol::error_code;

// The partition's verdict on one marker, as Kafka's ProducerStateManager gives it.
error_code marker_error(log::sequence_verdict v) {
    switch (v) {
        case log::sequence_verdict::append:
            return error_code::none;
        case log::sequence_verdict::coordinator_fenced:
            return error_code::transaction_coordinator_fenced;
        default:
            return error_code::invalid_producer_epoch;
    }
}

// Transaction version 2 markers carry a bumped epoch: Kafka refuses one that is not
// newer than the producer's epoch in the partition (older versions: not older).
bool stale_tv2_marker(log::partition_log& plog, int64_t producer_id, int16_t epoch) {
    auto list = plog.producers(now_ms());
    if (!list) return false;
    for (const auto& e : *list)
        if (e.producer_id == producer_id) return epoch <= e.epoch;
    return false;
}

}  // namespace

// A transaction coordinator's request to a partition leader; Kafka's `kafka-transactions
// abort` sends it too, to end a hanging transaction. Each marker is a COMMIT or ABORT
// control batch appended to the partition; the answer waits until all are durable.
void handle_write_txn_markers(const request_context& ctx, request_body body) {
    protocol::write_txn_markers_request req;
    if (!decode_request(ctx, body, req)) return;
    const bool allowed = ctx.allowed(security::resource_kind::cluster);
    struct pending {
        protocol::write_txn_markers_response resp;
        size_t left = 1;
        std::vector<topic_partition> written;
    };
    auto p = std::make_shared<pending>();
    auto one_done = [ctx, p](int16_t* code_slot, const result<void>& r) {
        if (code_slot && !r)
            *code_slot = code(storage_error_or(r.err().code, error_code::unknown_server_error));
        if (--p->left > 0) return;
        if (!p->written.empty()) ctx.b.notify_data(p->written);
        ctx.respond(p->resp);
    };
    // Every slot exists before a callback may write to it (no reallocation after).
    for (const auto& m : req.markers) {
        auto& om = p->resp.markers.emplace_back();
        om.producer_id = m.producer_id;
        for (const auto& t : m.topics) {
            auto& ot = om.topics.emplace_back();
            ot.name = t.name;
            for (int32_t i : t.partition_indexes) ot.partitions.push_back({i, 0});
        }
    }
    const int64_t now = now_ms();
    for (size_t mi = 0; mi < req.markers.size(); ++mi) {
        const auto& m = req.markers[mi];
        for (size_t ti = 0; ti < m.topics.size(); ++ti) {
            auto& ot = p->resp.markers[mi].topics[ti];
            for (auto& op : ot.partitions) {
                if (!allowed) {
                    op.error_code = code(error_code::cluster_authorization_failed);
                    continue;
                }
                auto* plog = ctx.b.logs().get(ot.name, op.partition_index);
                if (!plog) {
                    op.error_code = code(error_code::unknown_topic_or_partition);
                    continue;
                }
                if (m.transaction_version >= 2 &&
                    stale_tv2_marker(*plog, m.producer_id, m.producer_epoch)) {
                    op.error_code = code(error_code::invalid_producer_epoch);
                    continue;
                }
                auto r = plog->write_marker(m.producer_id, m.producer_epoch, m.transaction_result,
                                            m.coordinator_epoch, now);
                if (!r) {
                    op.error_code =
                        code(storage_error_or(r.err().code, error_code::unknown_server_error));
                    continue;
                }
                if (r->verdict != log::sequence_verdict::append) {
                    op.error_code = code(marker_error(r->verdict));
                    log_info("txn", "{}: WriteTxnMarkers to {}-{} refused: {}", ctx.client(),
                             ot.name, op.partition_index, r->reason);
                    continue;
                }
                log_info("txn", "{}: {} marker for producer {} epoch {} written to {}-{}",
                         ctx.client(), m.transaction_result ? "COMMIT" : "ABORT", m.producer_id,
                         m.producer_epoch, ot.name, op.partition_index);
                ++p->left;
                p->written.push_back({ot.name, op.partition_index});
                int16_t* slot = &op.error_code;
                ctx.b.when_durable(plog, r->last_offset,
                                   [one_done, slot](const result<void>& d) { one_done(slot, d); });
            }
        }
    }
    one_done(nullptr, result<void>{});
}

}  // namespace sluice::broker
