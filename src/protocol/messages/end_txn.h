#pragma once

#include <string>

#include "protocol/serde.h"

namespace sluice::protocol {

// EndTxn v0-5 (flexible from v3; v5 is transaction version 2 and answers the bumped
// producer id and epoch).
struct end_txn_request {
    std::string transactional_id;
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;
    bool committed = false;

    template <typename F>
    void serde(F& f) {
        f(transactional_id);
        f(producer_id);
        f(producer_epoch);
        f(committed);
    }
};

struct end_txn_response {
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    int64_t producer_id = -1;     // v5+
    int16_t producer_epoch = -1;  // v5+

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code);
        f(producer_id, since(5));
        f(producer_epoch, since(5));
    }
};

}  // namespace sluice::protocol
