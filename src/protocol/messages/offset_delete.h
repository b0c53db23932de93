#pragma once

#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct offset_delete_request {
    struct partition {
        int32_t partition_index = 0;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
        }
    };
    using topic = topic_entries<partition>;
    std::string group_id;
    std::vector<topic> topics;

    template <typename F>
    void serde(F& f) {
        f(group_id);
        f(topics);
    }
};

struct offset_delete_response {
    struct partition {
        int32_t partition_index = 0;
        int16_t error_code = 0;  // GROUP_SUBSCRIBED_TO_TOPIC while members consume it
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(error_code);
        }
    };
    using topic = topic_entries<partition>;
    int16_t error_code = 0;  // group-level (e.g. GROUP_ID_NOT_FOUND): nothing deleted
    int32_t throttle_time_ms = 0;
    std::vector<topic> topics;

    template <typename F>
    void serde(F& f) {
        f(error_code);
        f(throttle_time_ms);
        f(topics);
    }
};

}  // namespace sluice::protocol
