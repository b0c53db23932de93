#include "protocol/messages/find_coordinator.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "broker/session.h"

namespace sluice::broker {

// Every group and every transactional id is coordinated here. With several advertised
// addresses, keys are spread across them as partitions are, so clients see the load
// shared; in shared mode, over the live brokers by placement.
void handle_find_coordinator(const request_context& ctx, request_body body) {
    protocol::find_coordinator_request req;
    if (!decode_request(ctx, body, req)) return;
    auto answer = [&](const std::string& key, protocol::find_coordinator_response::coordinator& c) {
        c.key = key;
        if (req.key_type != protocol::coordinator_key_group &&
            req.key_type != protocol::coordinator_key_transaction) {
            c.error_code = code(protocol::error_code::invalid_request);
            c.error_message = "unknown key type " + std::to_string(req.key_type);
            return;
        }
        if (req.key_type == protocol::coordinator_key_group &&
            !ctx.allowed(security::resource_kind::group, key)) {
            c.error_code = code(protocol::error_code::group_authorization_failed);
            c.error_message = "KafkaDescribe on sluice:group:" + key + " is needed";
            return;
        }
        if (req.key_type == protocol::coordinator_key_transaction &&
            !ctx.allowed(security::resource_kind::transactional_id, key)) {
            c.error_code = code(protocol::error_code::transactional_id_authorization_failed);
            c.error_message = "KafkaDescribe on sluice:transactional-id:" + key + " is needed";
            return;
        }
        const auto& broker = ctx.b.coordinator_for(
            ctx.sess->listener(), key, req.key_type == protocol::coordinator_key_transaction);
        c.node_id = broker.node_id;
        c.host = broker.address.host;
        c.port = broker.address.port;
    };
    protocol::find_coordinator_response resp;
    if (ctx.version() >= 4) {
        for (const auto& key : req.coordinator_keys) answer(key, resp.coordinators.emplace_back());
    } else {
        protocol::find_coordinator_response::coordinator c;
        answer(req.key, c);
        resp.error_code = c.error_code;
        resp.error_message = c.error_message;
        resp.node_id = c.node_id;
        resp.host = c.host;
        resp.port = c.port;
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
