#include <set>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/create_partitions.h"

namespace sluice::broker {

using protocol::error_code;

namespace {

// One replica per new partition (replication factor 1), on an advertised broker id.
std::optional<std::string> check_assignments(
    const std::vector<protocol::create_partitions_request::assignment>& assignments,
    int32_t new_partitions, size_t brokers) {
    if (assignments.size() != static_cast<size_t>(std::max(0, new_partitions)))
        return fmt::format("{} assignments for {} new partitions", assignments.size(),
                           new_partitions);
    for (const auto& a : assignments) {
        if (auto why = replica_list_error(a.broker_ids, brokers)) return why;
        // New partitions keep the topic's replication factor, as in Kafka; here it is 1.
        if (a.broker_ids.size() != 1)
            return fmt::format("{} replicas given; the topic's replication factor is 1",
                               a.broker_ids.size());
    }
    return std::nullopt;
}

}  // namespace

void handle_create_partitions(const request_context& ctx, request_body body) {
    protocol::create_partitions_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& topics = ctx.b.topics();
    std::map<std::string, int> times;
    for (const auto& t : req.topics) ++times[t.name];
    protocol::create_partitions_response resp;
    std::set<std::string> answered;
    for (const auto& t : req.topics) {
        if (!answered.insert(t.name).second) continue;  // one answer per duplicated topic
        auto& out = resp.results.emplace_back();
        out.name = t.name;
        auto fail = [&](error_code e, std::string msg) {
            out.error_code = code(e);
            log_info("admin", "{}: create partitions of '{}' refused: {}", ctx.client(), t.name,
                     msg);
            out.error_message = std::move(msg);
        };
        if (times[t.name] > 1) {
            fail(error_code::invalid_request, "duplicate topic '" + t.name + "' in the request");
            continue;
        }
        if (!ctx.allowed(security::resource_kind::topic, t.name)) {
            fail(error_code::topic_authorization_failed,
                 "KafkaAlter on sluice:topic:" + t.name + " is needed");
            continue;
        }
        const topic_state* ts = topics.find(t.name);
        if (!ts) {
            fail(error_code::unknown_topic_or_partition, "topic '" + t.name + "' does not exist");
            continue;
        }
        if (t.assignments) {
            if (auto why = check_assignments(*t.assignments, t.count - ts->info.partitions,
                                             ctx.b.broker_count())) {
                fail(error_code::invalid_replica_assignment, *why);
                continue;
            }
        }
        auto r = topics.add_partitions(t.name, t.count, req.validate_only);
        if (!r)
            fail(r.code() == errc::out_of_range
                     ? error_code::invalid_partitions
                     : storage_error_or(r.code(), error_code::unknown_server_error),
                 r.err().message);
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
