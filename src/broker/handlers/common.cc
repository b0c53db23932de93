#include <algorithm>
#include <span>

#include "broker/api_table.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "broker/session.h"

namespace sluice::broker {

void reject_malformed(const request_context& ctx) {
    const api_def* api = find_api(ctx.header.api_key);
    log_warn("protocol", "{}: malformed {} v{} request (correlation id {}); closing the connection",
             ctx.client(), api ? api->name : "?", ctx.version(), ctx.header.correlation_id);
    ctx.sess->close("malformed request");
}

std::string client_host(const request_context& ctx) {
    const std::string& peer = ctx.sess->peer();
    auto colon = peer.rfind(':');
    std::string host = colon == std::string::npos ? peer : peer.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    return "/" + host;
}

namespace {

// Kafka's AclOperation codes (READ 3 ... ALTER_CONFIGS 11) for the operations Kafka
// defines on each resource type. UNKNOWN (0), ANY (1) and ALL (2) are never set in an
// answer.
struct operation_bit {
    security::action act;
    int bit;
};
using security::action;
constexpr operation_bit topic_bits[] = {
    {action::read, 3},  {action::write, 4},    {action::create, 5},
    {action::delete_, 6}, {action::alter, 7},  {action::describe, 8},
    {action::describe_configs, 10}, {action::alter_configs, 11}};
constexpr operation_bit group_bits[] = {
    {action::read, 3}, {action::delete_, 6}, {action::describe, 8}};
constexpr operation_bit cluster_bits[] = {
    {action::create, 5}, {action::alter, 7}, {action::describe, 8},
    {action::cluster_action, 9}, {action::describe_configs, 10}, {action::alter_configs, 11},
    {action::idempotent_write, 12}};

std::span<const operation_bit> bits_for(security::resource_kind kind) {
    switch (kind) {
        case security::resource_kind::topic:
            return topic_bits;
        case security::resource_kind::group:
            return group_bits;
        case security::resource_kind::cluster:
            break;
    }
    return cluster_bits;
}

}  // namespace

int32_t authorized_operations(const request_context& ctx, const security::resource& r) {
    int32_t out = 0;
    for (auto [a, bit] : bits_for(r.kind))
        if (ctx.b.access().allowed(ctx.principal(), a, r)) out |= 1 << bit;
    return out;
}

std::optional<std::string> replication_factor_error(int32_t factor) {
    if (factor == -1 || (factor >= 1 && factor <= max_replication_factor)) return std::nullopt;
    return fmt::format("replication factor {} is invalid: give 1 to {}, or -1 for the default",
                       factor, max_replication_factor);
}

std::optional<std::string> replica_list_error(std::span<const int32_t> ids, size_t brokers) {
    if (ids.empty()) return std::string("a partition has an empty replica list");
    if (ids.size() > static_cast<size_t>(max_replication_factor))
        return fmt::format("{} replicas given for a partition; at most {} are accepted",
                           ids.size(), max_replication_factor);
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= brokers)
            return fmt::format("unknown broker id {} in a replica list", ids[i]);
        if (std::find(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(i), ids[i]) !=
            ids.begin() + static_cast<std::ptrdiff_t>(i))
            return fmt::format("broker id {} is given twice in a replica list", ids[i]);
    }
    return std::nullopt;
}

}  // namespace sluice::broker
