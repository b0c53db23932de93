#include "broker/handlers/handlers.h"

namespace sluice::broker {

protocol::error_code txn_error_code(txn::txn_error e, bool producer_fenced_known,
                                    bool abortable_known) {
    using protocol::error_code;
    switch (e) {
        case txn::txn_error::none:
            return error_code::none;
        case txn::txn_error::invalid_producer_id_mapping:
            return error_code::invalid_producer_id_mapping;
        // KIP-588: PRODUCER_FENCED from InitProducerId v4, AddPartitionsToTxn v2,
        // AddOffsetsToTxn v2, EndTxn v2 and TxnOffsetCommit v3 on; before them Kafka
        // answers INVALID_PRODUCER_EPOCH.
        case txn::txn_error::producer_fenced:
            return producer_fenced_known ? error_code::producer_fenced
                                         : error_code::invalid_producer_epoch;
        case txn::txn_error::concurrent_transactions:
            return error_code::concurrent_transactions;
        case txn::txn_error::invalid_txn_state:
            return error_code::invalid_txn_state;
        // KIP-890: clients from Produce v11 and TxnOffsetCommit v4 (and the brokers'
        // AddPartitionsToTxn v4+) know TRANSACTION_ABORTABLE; older ones get
        // INVALID_TXN_STATE, as Kafka's AddPartitionsToTxnManager converts it for them.
        case txn::txn_error::not_in_transaction:
            return abortable_known ? error_code::transaction_abortable
                                   : error_code::invalid_txn_state;
        case txn::txn_error::invalid_transaction_timeout:
            return error_code::invalid_transaction_timeout;
        case txn::txn_error::not_available:
            return error_code::coordinator_not_available;
        case txn::txn_error::not_coordinator:
            return error_code::not_coordinator;
    }
    return error_code::unknown_server_error;
}

void log_txn_refusal(const request_context& ctx, std::string_view api, const std::string& id,
                     txn::txn_error e) {
    if (e == txn::txn_error::none) return;
    // CONCURRENT_TRANSACTIONS is a normal retry while markers are written.
    if (e == txn::txn_error::concurrent_transactions)
        log_debug("txn", "{}: {} for transactional id '{}': {}", ctx.client(), api, id,
                  txn::error_text(e));
    else
        log_info("txn", "{}: {} for transactional id '{}' refused: {}", ctx.client(), api, id,
                 txn::error_text(e));
}

}  // namespace sluice::broker
