#pragma once

#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct delete_groups_request {
    std::vector<std::string> groups_names;  // Kafka's spelling

    template <typename F>
    void serde(F& f) {
        f(groups_names);
    }
};

struct delete_groups_response {
    struct result {
        std::string group_id;
        int16_t error_code = 0;  // NON_EMPTY_GROUP while the group has members
        template <typename F>
        void serde(F& f) {
            f(group_id);
            f(error_code);
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
