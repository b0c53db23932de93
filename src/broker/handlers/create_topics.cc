#include <map>
#include <set>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/create_topics.h"

namespace sluice::broker {
namespace {

using protocol::create_topics_response;
using protocol::error_code;

error_code to_error(errc e) {
    switch (e) {
        case errc::already_exists: return error_code::topic_already_exists;
        case errc::out_of_range: return error_code::invalid_partitions;
        case errc::invalid_argument: return error_code::invalid_topic_exception;
        case errc::invalid_config: return error_code::invalid_config;
        default: return storage_error_or(e, error_code::unknown_server_error);
    }
}

// Kafka's rules for a manual assignment: partitions numbered 0..n-1, each once, and
// valid replica lists all of one length.
std::optional<std::string> check_assignments(
    const std::vector<protocol::create_topics_request::assignment>& assignments, size_t brokers) {
    std::set<int32_t> indexes;
    for (const auto& a : assignments) {
        if (!indexes.insert(a.partition_index).second)
            return fmt::format("partition {} is assigned twice", a.partition_index);
        if (auto why = replica_list_error(a.broker_ids, brokers)) return why;
        if (a.broker_ids.size() != assignments.front().broker_ids.size())
            return fmt::format("partition {} has {} replicas, partition {} has {}",
                               a.partition_index, a.broker_ids.size(),
                               assignments.front().partition_index,
                               assignments.front().broker_ids.size());
    }
    if (*indexes.begin() != 0 || *indexes.rbegin() != static_cast<int32_t>(indexes.size()) - 1)
        return std::string("assigned partitions must be numbered 0 to n-1");
    return std::nullopt;
}

}  // namespace

void handle_create_topics(const request_context& ctx, request_body body) {
    protocol::create_topics_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    create_topics_response resp;
    // A name given twice is refused once, and neither copy is created, as in Kafka.
    std::map<std::string, int> times;
    for (const auto& t : req.topics) ++times[t.name];
    std::set<std::string> seen;
    for (const auto& t : req.topics) {
        create_topics_response::topic out;
        out.name = t.name;
        auto fail = [&](error_code e, std::string msg) {
            log_warn("admin", "{}: create topic '{}': {}: {}", ctx.client(), t.name,
                     protocol::error_name(e), msg);
            out.error_code = code(e);
            out.error_message = std::move(msg);
            out.configs.emplace();  // an empty list (v5+), as Kafka answers a refusal
            resp.topics.push_back(std::move(out));
        };
        if (!seen.insert(t.name).second) continue;
        if (times[t.name] > 1) {
            fail(error_code::invalid_request, "topic named more than once in the request");
            continue;
        }
        if (!ctx.may_create_topic(t.name)) {
            fail(error_code::topic_authorization_failed,
                 "KafkaCreate on sluice:cluster or sluice:topic:" + t.name + " is needed");
            continue;
        }
        int32_t partitions = t.num_partitions;
        if (!t.assignments.empty()) {
            if (partitions != -1 || t.replication_factor != -1) {
                fail(error_code::invalid_request,
                     "give either num_partitions and replication_factor or replica "
                     "assignments, not both");
                continue;
            }
            if (auto why = check_assignments(t.assignments, b.broker_count())) {
                fail(error_code::invalid_replica_assignment, *why);
                continue;
            }
            partitions = static_cast<int32_t>(t.assignments.size());
        } else if (auto why = replication_factor_error(t.replication_factor)) {
            fail(error_code::invalid_replication_factor, *why);
            continue;
        }
        if (partitions == -1) {
            partitions = b.config().default_partitions;
        }
        std::map<std::string, std::string> configs;
        bool null_value = false;
        for (const auto& c : t.configs) {
            if (!c.value) null_value = true;
            else configs[c.name] = *c.value;
        }
        if (null_value) {
            fail(error_code::invalid_config, "config values may not be null");
            continue;
        }
        // A valid replication factor is accepted and ignored: one broker holds one copy.
        auto created = b.topics().create(t.name, partitions, configs, req.validate_only);
        if (!created) {
            fail(to_error(created.code()), created.err().message);
            continue;
        }
        out.topic_id = created->info.id;
        out.num_partitions = partitions;
        out.replication_factor = 1;
        out.configs.emplace();
        for (const auto& def : catalog::topic_config_defs()) {
            create_topics_response::config c;
            c.name = std::string(def.name);
            c.value = b.topics().effective_config(*created, def.name);
            c.config_source = b.topics().config_source(*created, def.name);
            out.configs->push_back(std::move(c));
        }
        resp.topics.push_back(std::move(out));
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
