#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct describe_groups_request {
    std::vector<std::string> groups;
    bool include_authorized_operations = false;

    template <typename F>
    void serde(F& f) {
        f(groups);
        f(include_authorized_operations, since(3));
    }
};

struct describe_groups_response {
    struct member {
        std::string member_id;
        std::optional<std::string> group_instance_id;
        std::string client_id;
        std::string client_host;
        bytes member_metadata;    // for the group's chosen protocol
        bytes member_assignment;  // as the leader assigned it in SyncGroup
        template <typename F>
        void serde(F& f) {
            f(member_id);
            f(group_instance_id, since(4));
            f(client_id);
            f(client_host);
            f(member_metadata);
            f(member_assignment);
        }
    };
    struct group {
        int16_t error_code = 0;
        std::string group_id;
        std::string group_state;  // "Dead" for a group that does not exist
        std::string protocol_type;
        std::string protocol_data;  // the chosen protocol's name, e.g. "range"
        std::vector<member> members;
        int32_t authorized_operations = INT32_MIN;  // INT32_MIN: not requested
        template <typename F>
        void serde(F& f) {
            f(error_code);
            f(group_id);
            f(group_state);
            f(protocol_type);
            f(protocol_data);
            f(members);
            f(authorized_operations, since(3));
        }
    };
    int32_t throttle_time_ms = 0;
    std::vector<group> groups;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(1));
        f(groups);
    }
};

}  // namespace sluice::protocol
