#include <memory>
#include <vector>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "common/logging.h"
#include "protocol/messages/delete_records.h"
#include "shared/shared_log.h"

namespace sluice::broker {

using protocol::error_code;

namespace {

// Shared mode: the log start moves in the shared catalog (shared_partition::delete_records),
// for every broker at once; the background work's cleanup deletes the objects left
// without batches. Runs on a reader thread of the shared log (it waits on the database).
int16_t delete_shared(const std::string& client, shared::shared_partition& part, int64_t offset,
                      int64_t& low_watermark) {
    const auto& tp = part.id();
    auto r = part.delete_records(offset);
    if (r) {
        low_watermark = *r;
        log_info("admin", "{}: records of {}-{} before {} deleted", client, tp.topic, tp.partition,
                 *r);
        return code(error_code::none);
    }
    if (r.code() == errc::out_of_range) return code(error_code::offset_out_of_range);
    log_error("admin", "delete records of {}-{}: {}", tp.topic, tp.partition, r.err().message);
    return code(error_code::kafka_storage_error);
}

// A partition's deletion left for a reader thread (shared mode).
struct pending_delete {
    size_t topic = 0, partition = 0;  // in the response
    shared::shared_partition* part = nullptr;
    int64_t offset = 0;
};

}  // namespace

// Advances each partition's log start offset (the low watermark); whole segments below
// it are deleted (shared mode: batch rows, then objects). The new start is durable before
// the answer.
void handle_delete_records(const request_context& ctx, request_body body) {
    protocol::delete_records_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    auto resp_ptr = std::make_shared<protocol::delete_records_response>();
    auto& resp = *resp_ptr;
    std::vector<pending_delete> pending;
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
                const topic_state* ts = b.topics().find(t.name);
                log::partition_store* store = ts ? b.partition(*ts, p.partition_index) : nullptr;
                if (!store)
                    op.error_code = code(error_code::unknown_topic_or_partition);
                else
                    pending.push_back({resp.topics.size() - 1, ot.partitions.size() - 1,
                                       static_cast<shared::shared_partition*>(store), p.offset});
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
    if (pending.empty()) {
        ctx.respond(resp);
        return;
    }
    // The job hands the request on to the loop: the session is let go there, not here.
    b.shared_log()->run_read(
        [ctx = ctx, client = ctx.client(), resp_ptr, pending = std::move(pending)]() mutable {
            for (const auto& d : pending) {
                auto& op = resp_ptr->topics[d.topic].partitions[d.partition];
                op.error_code = delete_shared(client, *d.part, d.offset, op.low_watermark);
            }
            auto& loop = ctx.b.loop();
            loop.post([ctx = std::move(ctx), resp_ptr] { ctx.respond(*resp_ptr); });
        });
}

}  // namespace sluice::broker
