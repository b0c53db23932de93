#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct join_group_request {
    struct protocol {
        std::string name;  // an assignor, e.g. "range"
        bytes metadata;    // opaque to the broker: handed to the leader as is
        template <typename F>
        void serde(F& f) {
            f(name);
            f(metadata);
        }
    };
    std::string group_id;
    int32_t session_timeout_ms = 0;
    int32_t rebalance_timeout_ms = -1;  // -1 (and v0): session_timeout_ms is used instead
    std::string member_id;              // empty on first join: the broker assigns one
    std::optional<std::string> group_instance_id;  // static membership (KIP-345)
    std::string protocol_type;                     // e.g. "consumer"; must match the group's
    std::vector<protocol> protocols;    // in order of preference; one is chosen for the group
    std::optional<std::string> reason;  // free text for logs (KIP-800)

    template <typename F>
    void serde(F& f) {
        f(group_id);
        f(session_timeout_ms);
        f(rebalance_timeout_ms, since(1));
        f(member_id);
        f(group_instance_id, since(5));
        f(protocol_type);
        f(protocols);
        f(reason, since(8));
    }
};

struct join_group_response {
    struct member {
        std::string member_id;
        std::optional<std::string> group_instance_id;
        bytes metadata;  // the member's metadata for the chosen protocol
        template <typename F>
        void serde(F& f) {
            f(member_id);
            f(group_instance_id, since(5));
            f(metadata);
        }
    };
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    int32_t generation_id = -1;
    std::optional<std::string> protocol_type;
    std::optional<std::string> protocol_name;  // the chosen protocol; null is "" before v7
    std::string leader;                        // the leader's member id
    bool skip_assignment = false;              // the leader must not run the assignor
    std::string member_id;                     // the id the broker gave this member
    std::vector<member> members;               // filled only in the leader's response

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(2));
        f(error_code);
        f(generation_id);
        f(protocol_type, since(7));
        f(protocol_name, all_versions, nullable(since(7)));
        f(leader);
        f(skip_assignment, since(9));
        f(member_id);
        f(members);
    }
};

}  // namespace sluice::protocol
