#include "protocol/messages/describe_producers.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "common/clock.h"

namespace sluice::broker {
namespace {

using producer_row = shared::shared_partition::producer_row;

// The partition's producers in either mode; nullopt when there is no such partition.
std::optional<result<std::vector<producer_row>>> producers_of(broker& b, const std::string& topic,
                                                              int32_t index) {
    if (b.shared()) {
        const topic_state* t = b.topics().find(topic);
        auto* part = t ? b.partition(*t, index) : nullptr;
        if (!part) return std::nullopt;
        return static_cast<shared::shared_partition*>(part)->producers();
    }
    auto* plog = b.logs().get(topic, index);
    if (!plog) return std::nullopt;
    auto list = plog->producers(now_ms());
    if (!list) return result<std::vector<producer_row>>(list.err());
    std::vector<producer_row> out;
    for (const auto& e : *list)
        out.push_back({e.producer_id, e.epoch, e.last() ? e.last()->last_seq : -1, e.last_timestamp,
                       e.txn_first_offset, e.coordinator_epoch});
    return out;
}

}  // namespace

// Each partition's idempotent producers, as the partition's state holds them (shared
// mode: the shared catalog's sluice_producer_state and sluice_txn_open).
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
            auto list = denied ? std::nullopt : producers_of(ctx.b, rt.name, index);
            if (!list || !*list) {
                auto e = denied ? error_code::topic_authorization_failed
                         : list ? error_code::kafka_storage_error
                                : error_code::unknown_topic_or_partition;
                op.error_code = code(e);
                op.error_message = denied ? "KafkaRead on the topic is needed"
                                   : list ? list->err().message
                                          : "no such topic or partition";
                continue;
            }
            for (const auto& e : **list) {
                auto& p = op.active_producers.emplace_back();
                p.producer_id = e.producer_id;
                p.producer_epoch = e.epoch;
                p.last_sequence = e.last_sequence;
                p.last_timestamp = e.last_timestamp;
                p.coordinator_epoch = e.coordinator_epoch;
                p.current_txn_start_offset = e.txn_first_offset;
            }
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
