#include "protocol/messages/describe_producers.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "common/clock.h"

namespace sluice::broker {

// Each partition's idempotent producers, as the partition's state holds them.
void handle_describe_producers(const request_context& ctx, request_body body) {
    protocol::describe_producers_request req;
    if (!decode_request(ctx, body, req)) return;
    using protocol::error_code;
    protocol::describe_producers_response resp;
    for (const auto& rt : req.topics) {
        auto& ot = resp.topics.emplace_back();
        ot.name = rt.name;
        const bool denied = !ctx.allowed(security::resource_kind::topic, rt.name);
        for (int32_t index : rt.partition_indexes) {
            auto& op = ot.partitions.emplace_back();
            op.partition_index = index;
            auto* plog = denied ? nullptr : ctx.b.logs().get(rt.name, index);
            auto list = plog ? plog->producers(now_ms())
                             : result<std::vector<log::producer_entry>>(errc::not_found, "");
            if (!list) {
                auto e = denied ? error_code::topic_authorization_failed
                         : plog ? error_code::kafka_storage_error
                                : error_code::unknown_topic_or_partition;
                op.error_code = code(e);
                op.error_message = denied ? "KafkaRead on the topic is needed"
                                   : plog ? list.err().message
                                          : "no such topic or partition";
                continue;
            }
            for (const auto& e : *list) {
                auto& p = op.active_producers.emplace_back();
                p.producer_id = e.producer_id;
                p.producer_epoch = e.epoch;
                p.last_sequence = e.last() ? e.last()->last_seq : -1;
                p.last_timestamp = e.last_timestamp;
                p.coordinator_epoch = e.coordinator_epoch;
                p.current_txn_start_offset = e.txn_first_offset;
            }
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
