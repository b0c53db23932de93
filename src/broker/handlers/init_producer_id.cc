#include "protocol/messages/init_producer_id.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {
namespace {

// As Kafka (KIP-679): IdempotentWrite on the cluster, or Write on any topic.
bool may_init(const request_context& ctx) {
    if (ctx.allowed_quiet(security::resource_kind::cluster)) return true;
    for (const auto* t : ctx.b.topics().all())
        if (ctx.allowed_quiet(security::resource_kind::topic, t->info.name)) return true;
    return ctx.allowed(security::resource_kind::cluster);  // logs the denial
}

}  // namespace

// Without a transactional id: an idempotent producer, a new id from the catalog's
// durable counter, epoch 0. A v3+ request naming its current id and epoch gets a new id
// too, as Kafka 4.3 answers one without a transactional id (test_differential): KIP-360's
// epoch bump is for transactional producers. With one: the transaction coordinator
// keeps the id and bumps its epoch, fencing the previous instance.
void handle_init_producer_id(const request_context& ctx, request_body body) {
    protocol::init_producer_id_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::init_producer_id_response resp;
    using protocol::error_code;
    if (req.transactional_id && !req.transactional_id->empty()) {
        const std::string id = *req.transactional_id;
        if (!ctx.allowed(security::resource_kind::transactional_id, id)) {
            resp.error_code = code(error_code::transactional_id_authorization_failed);
            return ctx.respond(resp);
        }
        if (!ctx.b.coordinates_txn(id)) {  // shared mode: placed on another broker
            resp.error_code = code(error_code::not_coordinator);
            return ctx.respond(resp);
        }
        ctx.b.txns().init_producer_id(id, req.transaction_timeout_ms, req.producer_id,
                                      req.producer_epoch, [ctx, id](const txn::producer_answer& a) {
                                          log_txn_refusal(ctx, "InitProducerId", id, a.error);
                                          protocol::init_producer_id_response r;
                                          r.error_code =
                                              code(txn_error_code(a.error, ctx.version() >= 4));
                                          r.producer_id = a.producer_id;
                                          r.producer_epoch = a.producer_epoch;
                                          ctx.respond(r);
                                      });
        return;
    }
    if (!may_init(ctx)) {
        resp.error_code = code(error_code::cluster_authorization_failed);
    } else if (auto id = ctx.b.producer_ids().allocate_producer_id(); !id) {
        log_error("producer", "{}: no producer id: {}", ctx.client(), id.err().message);
        resp.error_code = code(error_code::coordinator_not_available);
    } else {
        resp.producer_id = *id;
        resp.producer_epoch = 0;
    }
    if (resp.error_code == 0)
        log_debug("producer", "{}: producer id {} epoch {}", ctx.client(), resp.producer_id,
                  resp.producer_epoch);
    ctx.respond(resp);
}

}  // namespace sluice::broker
