#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/list_offsets.h"

namespace sluice::broker {
namespace {

using protocol::error_code;
using protocol::list_offsets_response;

void lookup(const log::partition_log& plog, int64_t ts, list_offsets_response::partition& out) {
    if (ts == protocol::latest_timestamp) {
        out.offset = plog.high_watermark();
        return;
    }
    if (ts == protocol::earliest_timestamp) {
        out.offset = plog.log_start_offset();
        return;
    }
    auto found = ts == protocol::max_timestamp ? plog.max_timestamp_offset()
                                               : plog.offset_for_timestamp(ts);
    if (!found) {
        out.error_code = code(found.code() == errc::io_error ? error_code::kafka_storage_error
                                                             : error_code::unknown_server_error);
        log_error("list_offsets", "lookup failed: {}", found.err().message);
        return;
    }
    if (*found) {
        out.offset = (*found)->offset;
        out.timestamp = (*found)->timestamp;
    }  // else no record at or after ts: offset -1, timestamp -1, as Kafka answers
}

}  // namespace

void handle_list_offsets(const request_context& ctx, request_body body) {
    protocol::list_offsets_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    list_offsets_response resp;
    for (const auto& rt : req.topics) {
        auto& ot = resp.topics.emplace_back();
        ot.name = rt.name;
        const bool denied = !ctx.allowed(security::resource_kind::topic, rt.name);
        const topic_state* t = denied ? nullptr : b.topics().find(rt.name);
        for (const auto& rp : rt.partitions) {
            auto& op = ot.partitions.emplace_back();
            op.partition_index = rp.partition_index;
            log::partition_log* plog = t ? b.logs().get(rt.name, rp.partition_index) : nullptr;
            if (!plog) {
                op.error_code = code(denied ? error_code::topic_authorization_failed
                                            : error_code::unknown_topic_or_partition);
                continue;
            }
            // An out-of-service partition has no offsets to tell; 0 would mislead consumers
            // and lag tools. Kafka answers KAFKA_STORAGE_ERROR for an offline log (retriable).
            if (auto a = plog->available(); !a) {
                op.error_code = code(a.code() == errc::not_found
                                         ? error_code::unknown_topic_or_partition
                                         : error_code::kafka_storage_error);
                log_warn("list_offsets", "{}: {}-{}: {}", ctx.client(), rt.name,
                         rp.partition_index, a.err().message);
                continue;
            }
            op.leader_epoch = 0;
            lookup(*plog, rp.timestamp, op);
            if (ctx.version() == 0 && op.offset >= 0) op.old_style_offsets = {op.offset};
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
