#pragma once

#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct list_groups_request {
    std::vector<std::string> states_filter;  // v4+; empty: groups in any state
    std::vector<std::string> types_filter;   // v5+ (KIP-848); empty: groups of any type

    template <typename F>
    void serde(F& f) {
        f(states_filter, since(4));
        f(types_filter, since(5));
    }
};

struct list_groups_response {
    struct group {
        std::string group_id;
        std::string protocol_type;  // "consumer", or "" for offsets-only groups
        std::string group_state;    // e.g. "Stable", "Empty"
        std::string group_type = "classic";  // v5+: "classic" or "consumer" (KIP-848)
        template <typename F>
        void serde(F& f) {
            f(group_id);
            f(protocol_type);
            f(group_state, since(4));
            f(group_type, since(5));
        }
    };
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    std::vector<group> groups;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(1));
        f(error_code);
        f(groups);
    }
};

}  // namespace sluice::protocol
