#pragma once

#include <optional>
#include <string>

#include "protocol/serde.h"

namespace sluice::protocol {

struct heartbeat_request {
    std::string group_id;
    int32_t generation_id = -1;
    std::string member_id;
    std::optional<std::string> group_instance_id;

    template <typename F>
    void serde(F& f) {
        f(group_id);
        f(generation_id);
        f(member_id);
        f(group_instance_id, since(3));
    }
};

struct heartbeat_response {
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;  // REBALANCE_IN_PROGRESS tells the member to rejoin

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(1));
        f(error_code);
    }
};

}  // namespace sluice::protocol
