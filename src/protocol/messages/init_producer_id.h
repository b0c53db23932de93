#pragma once

#include <optional>
#include <string>

#include "protocol/serde.h"

namespace sluice::protocol {

// InitProducerId v0-5 (flexible from v2).
struct init_producer_id_request {
    std::optional<std::string> transactional_id;
    int32_t transaction_timeout_ms = 0;
    // v3+ (KIP-360): the producer's current id and epoch, -1 for a new producer.
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;

    template <typename F>
    void serde(F& f) {
        f(transactional_id);
        f(transaction_timeout_ms);
        f(producer_id, since(3));
        f(producer_epoch, since(3));
    }
};

struct init_producer_id_response {
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code);
        f(producer_id);
        f(producer_epoch);
    }
};

}  // namespace sluice::protocol
