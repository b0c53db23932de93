#include "protocol/messages/delete_records.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "common/logging.h"
#include "shared/shared_log.h"

namespace sluice::broker {

using protocol::error_code;

namespace {

// Shared mode: the log start moves in the shared catalog (shared_partition::delete_records),
// for every broker at once; the background work's cleanup deletes the objects left
// without batches.
int16_t delete_shared(const request_context& ctx, const std::string& topic, int32_t partition,
                      int64_t offset, int64_t& low_watermark) {
    auto& b = ctx.b;
    const topic_state* ts = b.topics().find(topic);
    log::partition_store* store = ts ? b.partition(*ts, partition) : nullptr;
    if (!store) return code(error_code::unknown_topic_or_partition);
    auto r = static_cast<shared::shared_partition*>(store)->delete_records(offset);
    if (r) {
        low_watermark = *r;
        log_info("admin", "{}: records of {}-{} before {} deleted", ctx.client(), topic, partition,
                 *r);
        return code(error_code::none);
    }
    if (r.code() == errc::out_of_range) return code(error_code::offset_out_of_range);
    log_error("admin", "delete records of {}-{}: {}", topic, partition, r.err().message);
    return code(error_code::kafka_storage_error);
}

}  // namespace

// Advances each partition's log start offset (the low watermark); whole segments below
// it are deleted (shared mode: batch rows, then objects). The new start is durable before
// the answer.
void handle_delete_records(const request_context& ctx, request_body body) {
    protocol::delete_records_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    protocol::delete_records_response resp;
    for (const auto& t : req.topics) {
        auto& ot = resp.topics.emplace_back();
        ot.name = t.name;
        const bool denied = !ctx.allowed(security::resource_kind::topic, t.name);
        for (const auto& p : t.partitions) {
            auto& op = ot.partitions.emplace_back();
            op.partition_index = p.partition_index;
            if (denied) {
                op.error_code = code(error_code::topic_authorization_failed);
                continue;
            }
            if (b.shared()) {
                op.error_code =
                    delete_shared(ctx, t.name, p.partition_index, p.offset, op.low_watermark);
                continue;
            }
            log::partition_log* plog =
                b.topics().find(t.name) ? b.logs().get(t.name, p.partition_index) : nullptr;
            if (!plog) {
                op.error_code = code(error_code::unknown_topic_or_partition);
                continue;
            }
            // On a full disk the log-start-offset file takes the space reserve (log_manager.h).
            auto r = b.logs().with_spare_space([&] { return plog->delete_records(p.offset); });
            if (r) {
                (void)b.logs().refill_spare_space();
                op.low_watermark = *r;
                log_info("admin", "{}: records of {}-{} before {} deleted", ctx.client(), t.name,
                         p.partition_index, *r);
            } else if (r.code() == errc::out_of_range) {
                op.error_code = code(error_code::offset_out_of_range);
            } else {
                op.error_code = code(error_code::kafka_storage_error);
                log_error("admin", "delete records of {}-{}: {}", t.name, p.partition_index,
                          r.err().message);
            }
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
