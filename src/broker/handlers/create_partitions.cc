#include <set>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/create_partitions.h"

namespace sluice::broker {

using protocol::error_code;

void handle_create_partitions(const request_context& ctx, bytes_view body) {
    protocol::create_partitions_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& topics = ctx.b.topics();
    std::map<std::string, int> times;
    for (const auto& t : req.topics) ++times[t.name];
    protocol::create_partitions_response resp;
    for (const auto& t : req.topics) {
        auto& out = resp.results.emplace_back();
        out.name = t.name;
        auto fail = [&](error_code e, std::string msg) {
            out.error_code = code(e);
            log_info("admin", "{}: create partitions of '{}' refused: {}", ctx.client(), t.name,
                     msg);
            out.error_message = std::move(msg);
        };
        if (times[t.name] > 1) {
            fail(error_code::invalid_request, "topic '" + t.name + "' is named more than once");
            continue;
        }
        const topic_state* ts = topics.find(t.name);
        if (!ts) {
            fail(error_code::unknown_topic_or_partition, "topic '" + t.name + "' does not exist");
            continue;
        }
        if (t.assignments) {
            // One replica per partition, on any advertised broker id.
            bool ok = t.assignments->size() ==
                      static_cast<size_t>(std::max(0, t.count - ts->info.partitions));
            for (const auto& a : *t.assignments) {
                ok = ok && a.broker_ids.size() == 1;
                for (int32_t id : a.broker_ids)
                    ok = ok && id >= 0 && static_cast<size_t>(id) < ctx.b.brokers().size();
            }
            if (!ok) {
                fail(error_code::invalid_replica_assignment,
                     "assignments must give one broker id (replication factor 1) for each new "
                     "partition");
                continue;
            }
        }
        auto r = topics.add_partitions(t.name, t.count, req.validate_only);
        if (!r)
            fail(r.code() == errc::out_of_range ? error_code::invalid_partitions
                                                : error_code::unknown_server_error,
                 r.err().message);
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
