#pragma once

#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

// Special timestamps a ListOffsets request may ask for.
inline constexpr int64_t latest_timestamp = -1;
inline constexpr int64_t earliest_timestamp = -2;
inline constexpr int64_t max_timestamp = -3;
// KIP-405: the first offset still on local disk; without tiered storage the log start.
inline constexpr int64_t earliest_local_timestamp = -4;

struct list_offsets_request {
    struct partition {
        int32_t partition_index = 0;
        int32_t current_leader_epoch = -1;
        int64_t timestamp = 0;
        int32_t max_num_offsets = 1;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(current_leader_epoch, since(4));
            f(timestamp);
            f(max_num_offsets, range(0, 0));
        }
    };
    using topic = topic_entries<partition>;
    int32_t replica_id = -1;
    int8_t isolation_level = 0;
    std::vector<topic> topics;
    int32_t timeout_ms = 0;

    template <typename F>
    void serde(F& f) {
        f(replica_id);
        f(isolation_level, since(2));
        f(topics);
        f(timeout_ms, since(10));
    }
};

struct list_offsets_response {
    struct partition {
        int32_t partition_index = 0;
        int16_t error_code = 0;
        std::vector<int64_t> old_style_offsets;  // v0 only
        int64_t timestamp = -1;
        int64_t offset = -1;
        int32_t leader_epoch = -1;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(error_code);
            f(old_style_offsets, range(0, 0));
            f(timestamp, since(1));
            f(offset, since(1));
            f(leader_epoch, since(4));
        }
    };
    using topic = topic_entries<partition>;
    int32_t throttle_time_ms = 0;
    std::vector<topic> topics;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(2));
        f(topics);
    }
};

}  // namespace sluice::protocol
