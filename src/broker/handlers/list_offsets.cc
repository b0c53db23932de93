#include <algorithm>
#include <memory>
#include <set>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/list_offsets.h"
#include "shared/shared_log.h"

namespace sluice::broker {
namespace {

using protocol::error_code;
using protocol::list_offsets_response;

// READ_COMMITTED (isolation_level 1) sees up to the last stable offset: LATEST is it,
// and a timestamp lookup finds no record at or past it, as in Kafka.
void lookup(const log::partition_store& plog, int64_t ts, bool committed,
            list_offsets_response::partition& out) {
    const int64_t fetchable = committed ? plog.last_stable_offset() : plog.high_watermark();
    if (ts == protocol::latest_timestamp) {
        out.offset = fetchable;
        return;
    }
    if (ts == protocol::earliest_timestamp || ts == protocol::earliest_local_timestamp) {
        out.offset = plog.log_start_offset();
        return;
    }
    auto found =
        ts == protocol::max_timestamp ? plog.max_timestamp_offset() : plog.offset_for_timestamp(ts);
    if (!found) {
        out.error_code = code(found.code() == errc::io_error ? error_code::kafka_storage_error
                                                             : error_code::unknown_server_error);
        log_error("list_offsets", "lookup failed: {}", found.err().message);
        return;
    }
    if (*found && (*found)->offset < fetchable) {
        out.offset = (*found)->offset;
        out.timestamp = (*found)->timestamp;
    } else {
        out.leader_epoch =
            -1;  // no record at or after ts: offset, timestamp and epoch -1, as Kafka
    }
}

// Kafka answers UNSUPPORTED_VERSION for a special timestamp the request's version does
// not define: max timestamp (-3) came with v7, earliest local (-4) with v8, and the ones
// below (-5 latest tiered, v9, and on) come after the versions served here.
bool timestamp_known(int64_t ts, int16_t version) {
    if (ts >= 0 || ts == protocol::latest_timestamp || ts == protocol::earliest_timestamp)
        return true;
    if (ts == protocol::max_timestamp) return version >= 7;
    return ts == protocol::earliest_local_timestamp && version >= 8;
}

// Kafka refuses a partition named twice in one request: one INVALID_REQUEST entry for it.
bool named_twice(const std::vector<protocol::list_offsets_request::partition>& parts,
                 int32_t index) {
    return std::count_if(parts.begin(), parts.end(),
                         [&](const auto& p) { return p.partition_index == index; }) > 1;
}

// A partition's lookup, left for later (shared mode: on a reader thread).
struct pending_lookup {
    size_t topic = 0, partition = 0;  // in the response
    const log::partition_store* plog = nullptr;
    int64_t timestamp = 0;
};

}  // namespace

void handle_list_offsets(const request_context& ctx, request_body body) {
    protocol::list_offsets_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    auto resp_ptr = std::make_shared<list_offsets_response>();
    auto& resp = *resp_ptr;
    std::vector<pending_lookup> lookups;
    for (const auto& rt : req.topics) {
        auto& ot = resp.topics.emplace_back();
        ot.name = rt.name;
        const bool denied = !ctx.allowed(security::resource_kind::topic, rt.name);
        const topic_state* t = denied ? nullptr : b.topics().find(rt.name);
        std::set<int32_t> answered;
        for (const auto& rp : rt.partitions) {
            if (!answered.insert(rp.partition_index).second) continue;
            auto& op = ot.partitions.emplace_back();
            op.partition_index = rp.partition_index;
            if (named_twice(rt.partitions, rp.partition_index)) {
                op.error_code = code(error_code::invalid_request);
                continue;
            }
            log::partition_store* plog = t ? b.partition(*t, rp.partition_index) : nullptr;
            if (!plog) {
                op.error_code = code(denied ? error_code::topic_authorization_failed
                                            : error_code::unknown_topic_or_partition);
                continue;
            }
            if (!b.member()) {  // shared mode, its lease passed: retriable
                op.error_code = code(error_code::not_leader_or_follower);
                continue;
            }
            if (!timestamp_known(rp.timestamp, ctx.version())) {
                op.error_code = code(error_code::unsupported_version);
                continue;
            }
            // An out-of-service partition has no offsets to tell; 0 would mislead consumers
            // and lag tools. Kafka answers KAFKA_STORAGE_ERROR for an offline log (retriable).
            auto* local = b.shared() ? nullptr : static_cast<log::partition_log*>(plog);
            if (auto a = local ? local->available() : result<void>{}; !a) {
                op.error_code =
                    code(a.code() == errc::not_found ? error_code::unknown_topic_or_partition
                                                     : error_code::kafka_storage_error);
                log_warn("list_offsets", "{}: {}-{}: {}", ctx.client(), rt.name, rp.partition_index,
                         a.err().message);
                continue;
            }
            op.leader_epoch = 0;
            lookups.push_back(
                {resp.topics.size() - 1, ot.partitions.size() - 1, plog, rp.timestamp});
        }
    }
    const bool committed = req.isolation_level == 1;
    auto run = [resp_ptr, lookups = std::move(lookups), committed, v0 = ctx.version() == 0] {
        for (const auto& l : lookups) {
            auto& op = resp_ptr->topics[l.topic].partitions[l.partition];
            lookup(*l.plog, l.timestamp, committed, op);
            if (v0 && op.offset >= 0) op.old_style_offsets = {op.offset};
        }
    };
    if (!b.shared()) {
        run();
        ctx.respond(resp);
        return;
    }
    // Shared mode: the lookups read the database, off the event loop.
    // The job hands the request on to the loop: the session is let go there, not here.
    b.shared_log()->run_read([run = std::move(run), ctx = ctx, resp_ptr]() mutable {
        run();
        auto& loop = ctx.b.loop();
        loop.post([ctx = std::move(ctx), resp_ptr] { ctx.respond(*resp_ptr); });
    });
}

}  // namespace sluice::broker
