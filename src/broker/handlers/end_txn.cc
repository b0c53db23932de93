#include "protocol/messages/end_txn.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

// Answered once the transaction is complete: its markers and (at commit) its offsets
// durable, so that a read_committed consumer or SQL query sees the whole transaction
// after the answer. v5 is transaction version 2: the answer carries the bumped epoch.
void handle_end_txn(const request_context& ctx, request_body body) {
    protocol::end_txn_request req;
    if (!decode_request(ctx, body, req)) return;
    const std::string id = req.transactional_id;
    if (!ctx.allowed(security::resource_kind::transactional_id, id)) {
        protocol::end_txn_response r;
        r.error_code = code(protocol::error_code::transactional_id_authorization_failed);
        return ctx.respond(r);
    }
    if (!ctx.b.coordinates_txn(id)) {
        // Shared mode: the id is placed on another broker (it moved with the live set).
        protocol::end_txn_response r;
        r.error_code = code(protocol::error_code::not_coordinator);
        return ctx.respond(r);
    }
    // The version says which transaction protocol the client runs (v5: TV2).
    log_debug("txn", "{}: EndTxn v{} for '{}' producer {} epoch {}: {}", ctx.client(),
              ctx.version(), id, req.producer_id, req.producer_epoch,
              req.committed ? "commit" : "abort");
    ctx.b.txns().end_txn(id, req.producer_id, req.producer_epoch, req.committed, ctx.version() >= 5,
                         [ctx, id](const txn::producer_answer& a) {
                             log_txn_refusal(ctx, "EndTxn", id, a.error);
                             protocol::end_txn_response r;
                             r.error_code = code(txn_error_code(a.error, ctx.version() >= 2));
                             r.producer_id = a.producer_id;
                             r.producer_epoch = a.producer_epoch;
                             ctx.respond(r);
                         });
}

}  // namespace sluice::broker
