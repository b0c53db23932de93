#include <algorithm>
#include <span>

#include "broker/api_table.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "broker/session.h"
#include "security/acl.h"

namespace sluice::broker {

void reject_malformed(const request_context& ctx) {
    const api_def* api = find_api(ctx.header.api_key);
    log_warn("protocol", "{}: malformed {} v{} request (correlation id {}); closing the connection",
             ctx.client(), api ? api->name : "?", ctx.version(), ctx.header.correlation_id);
    ctx.sess->close("malformed request");
}

protocol::error_code group_refusal(const request_context& ctx, const std::string& group_id) {
    if (!ctx.allowed(security::resource_kind::group, group_id))
        return protocol::error_code::group_authorization_failed;
    auto e = ctx.b.group_coordinator_error(group_id);
    if (e != protocol::error_code::none)
        log_debug("group", "{}: group '{}' is not served here: {}", ctx.client(), group_id,
                  protocol::error_name(e));
    return e;
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

// The operations Kafka defines on each resource type, whose AclOperation codes
// (security/acl.h: READ 3 ... IDEMPOTENT_WRITE 12) are the answer's bits. UNKNOWN (0),
// ANY (1) and ALL (2) are never set in an answer.
using security::action;
constexpr action topic_ops[] = {
    action::read,  action::write,    action::create,           action::delete_,
    action::alter, action::describe, action::describe_configs, action::alter_configs};
constexpr action group_ops[] = {action::read, action::delete_, action::describe};
constexpr action transactional_id_ops[] = {action::write, action::describe};
constexpr action cluster_ops[] = {action::create,           action::alter,
                                  action::describe,         action::cluster_action,
                                  action::describe_configs, action::alter_configs,
                                  action::idempotent_write};

std::span<const action> operations_on(security::resource_kind kind) {
    switch (kind) {
        case security::resource_kind::topic:
            return topic_ops;
        case security::resource_kind::group:
            return group_ops;
        case security::resource_kind::transactional_id:
            return transactional_id_ops;
        case security::resource_kind::cluster:
            break;
    }
    return cluster_ops;
}

}  // namespace

int32_t authorized_operations(const request_context& ctx, const security::resource& r) {
    int32_t out = 0;
    for (auto a : operations_on(r.kind))
        if (ctx.b.access().allowed(ctx.principal(), a, r))
            out |= 1 << static_cast<int>(security::acl::operation_of(a));
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
        return fmt::format("{} replicas given for a partition; at most {} are accepted", ids.size(),
                           max_replication_factor);
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
