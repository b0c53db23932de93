#include "broker/api_table.h"
#include "broker/handlers/handlers.h"
#include "broker/session.h"

namespace sluice::broker {

void reject_malformed(const request_context& ctx) {
    const api_def* api = find_api(ctx.header.api_key);
    log_warn("protocol", "{}: malformed {} v{} request (correlation id {}); closing the connection",
             ctx.client(), api ? api->name : "?", ctx.version(), ctx.header.correlation_id);
    ctx.sess->close("malformed request");
}

}  // namespace sluice::broker
