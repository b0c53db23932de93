#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct sync_group_request {
    struct assignment {
        std::string member_id;
        bytes assignment;  // opaque to the broker: handed to that member as is
        template <typename F>
        void serde(F& f) {
            f(member_id);
            f(assignment);
        }
    };
    std::string group_id;
    int32_t generation_id = -1;
    std::string member_id;
    std::optional<std::string> group_instance_id;
    // v5+: checked against the group's; a mismatch is INCONSISTENT_GROUP_PROTOCOL.
    std::optional<std::string> protocol_type;
    std::optional<std::string> protocol_name;
    std::vector<assignment> assignments;  // sent by the leader only; empty from followers

    template <typename F>
    void serde(F& f) {
        f(group_id);
        f(generation_id);
        f(member_id);
        f(group_instance_id, since(3));
        f(protocol_type, since(5));
        f(protocol_name, since(5));
        f(assignments);
    }
};

struct sync_group_response {
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    std::optional<std::string> protocol_type;
    std::optional<std::string> protocol_name;
    bytes assignment;  // this member's share of the leader's assignment

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(1));
        f(error_code);
        f(protocol_type, since(5));
        f(protocol_name, since(5));
        f(assignment);
    }
};

}  // namespace sluice::protocol
