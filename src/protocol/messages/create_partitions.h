#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct create_partitions_request {
    struct assignment {
        std::vector<int32_t> broker_ids;  // replicas of one new partition, leader first
        template <typename F>
        void serde(F& f) {
            f(broker_ids);
        }
    };
    struct topic {
        std::string name;
        int32_t count = 0;  // the new total partition count, not the number to add
        // One entry per new partition, in partition order; null: the broker places them.
        std::optional<std::vector<assignment>> assignments;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(count);
            f(assignments);
        }
    };
    std::vector<topic> topics;
    int32_t timeout_ms = 0;
    bool validate_only = false;  // check the request, create nothing

    template <typename F>
    void serde(F& f) {
        f(topics);
        f(timeout_ms);
        f(validate_only);
    }
};

struct create_partitions_response {
    struct result {
        std::string name;
        int16_t error_code = 0;
        std::optional<std::string> error_message;  // null when there is no error
        template <typename F>
        void serde(F& f) {
            f(name);
            f(error_code);
            f(error_message);
        }
    };
    int32_t throttle_time_ms = 0;
    std::vector<result> results;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(results);
    }
};

}  // namespace sluice::protocol
