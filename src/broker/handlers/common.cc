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

int32_t group_operations(const request_context& ctx, const std::string& group) {
    using security::action;
    constexpr std::pair<action, int> bits[] = {
        {action::read, 3}, {action::delete_, 6}, {action::describe, 8}};
    int32_t out = 0;
    for (auto [a, bit] : bits)
        if (ctx.b.access().allowed(ctx.principal(), a, {security::resource_kind::group, group}))
            out |= 1 << bit;
    return out;
}

}  // namespace sluice::broker
