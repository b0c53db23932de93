#include <algorithm>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "broker/session.h"
#include "protocol/messages/sasl.h"

namespace sluice::broker {

using protocol::error_code;

void handle_sasl_handshake(const request_context& ctx, request_body body) {
    protocol::sasl_handshake_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::sasl_handshake_response resp;
    const auto& enabled = ctx.b.config().sasl_mechanisms;
    resp.mechanisms = enabled;
    auto& s = *ctx.sess;
    if (!s.listener_cfg().sasl()) {
        log_warn("security", "{}: SaslHandshake on {} listener {}", ctx.client(),
                 protocol_name(s.listener_cfg().protocol), s.listener_cfg().to_string());
        resp.error_code = code(error_code::illegal_sasl_state);
    } else if (s.phase() != session::sasl_phase::none) {
        log_warn("security", "{}: SaslHandshake in the middle of an exchange", ctx.client());
        resp.error_code = code(error_code::illegal_sasl_state);
    } else if (std::find(enabled.begin(), enabled.end(), req.mechanism) == enabled.end()) {
        log_warn("security", "{}: SASL mechanism '{}' is not enabled", ctx.client(), req.mechanism);
        resp.error_code = code(error_code::unsupported_sasl_mechanism);
    } else {
        s.begin_sasl(req.mechanism, ctx.version());
    }
    ctx.respond(resp);
}

void handle_sasl_authenticate(const request_context& ctx, request_body body) {
    using outcome = security::sasl_server::step_result::outcome;
    protocol::sasl_authenticate_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::sasl_authenticate_response resp;
    auto& s = *ctx.sess;
    if (s.phase() != session::sasl_phase::tokens) {
        log_warn("security", "{}: SaslAuthenticate without a SaslHandshake v1 before it; closing",
                 ctx.client());
        resp.error_code = code(error_code::illegal_sasl_state);
        resp.error_message = "SaslAuthenticate needs a SaslHandshake (v1) first";
        ctx.respond(resp);
        s.fail_authentication();
        return;
    }
    auto res = s.sasl_step(req.auth_bytes);
    resp.auth_bytes.assign(res.response.begin(), res.response.end());
    if (res.result == outcome::failure) {
        resp.error_code = code(error_code::sasl_authentication_failed);
        resp.error_message = res.error;
        ctx.respond(resp);
        s.fail_authentication();
        return;
    }
    if (res.result == outcome::success) resp.session_lifetime_ms = res.lifetime_ms;
    ctx.respond(resp);
}

}  // namespace sluice::broker
