#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct leave_group_request {
    struct member {
        std::string member_id;
        std::optional<std::string> group_instance_id;
        std::optional<std::string> reason;  // free text for logs (KIP-800)
        template <typename F>
        void serde(F& f) {
            f(member_id);
            f(group_instance_id);
            f(reason, since(5));
        }
    };
    std::string group_id;
    std::string member_id;        // v0-2: the one member leaving
    std::vector<member> members;  // v3+: a batch, answered member by member

    template <typename F>
    void serde(F& f) {
        f(group_id);
        f(member_id, range(0, 2));
        f(members, since(3));
    }
};

struct leave_group_response {
    struct member {
        std::string member_id;
        std::optional<std::string> group_instance_id;
        int16_t error_code = 0;
        template <typename F>
        void serde(F& f) {
            f(member_id);
            f(group_instance_id);
            f(error_code);
        }
    };
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    std::vector<member> members;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(1));
        f(error_code);
        f(members, since(3));
    }
};

}  // namespace sluice::protocol
