#pragma once

#include <string>

#include "protocol/serde.h"

namespace sluice::protocol {

// AddOffsetsToTxn v0-4 (flexible from v3).
struct add_offsets_to_txn_request {
    std::string transactional_id;
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;
    std::string group_id;

    template <typename F>
    void serde(F& f) {
        f(transactional_id);
        f(producer_id);
        f(producer_epoch);
        f(group_id);
    }
};

struct add_offsets_to_txn_response {
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code);
    }
};

}  // namespace sluice::protocol
