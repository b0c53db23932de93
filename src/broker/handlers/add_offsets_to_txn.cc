#include "protocol/messages/add_offsets_to_txn.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

// The group joins the transaction: its offsets (TxnOffsetCommit) commit or abort with it.
void handle_add_offsets_to_txn(const request_context& ctx, request_body body) {
    protocol::add_offsets_to_txn_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::add_offsets_to_txn_response resp;
    if (!ctx.allowed(security::resource_kind::transactional_id, req.transactional_id)) {
        resp.error_code = code(protocol::error_code::transactional_id_authorization_failed);
        return ctx.respond(resp);
    }
    if (!ctx.allowed(security::resource_kind::group, req.group_id)) {
        resp.error_code = code(protocol::error_code::group_authorization_failed);
        return ctx.respond(resp);
    }
    auto e = ctx.b.txns().add_group(req.transactional_id, req.producer_id, req.producer_epoch,
                                    req.group_id);
    log_txn_refusal(ctx, "AddOffsetsToTxn", req.transactional_id, e);
    resp.error_code = code(txn_error_code(e, ctx.version() >= 2));
    ctx.respond(resp);
}

}  // namespace sluice::broker
