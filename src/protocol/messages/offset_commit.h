#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct offset_commit_request {
    struct partition {
        int32_t partition_index = 0;
        int64_t committed_offset = 0;  // the next offset the group will consume
        int32_t committed_leader_epoch = -1;
        int64_t commit_timestamp = -1;                  // v1 only; -1: the broker's clock
        std::optional<std::string> committed_metadata;  // kept and returned by OffsetFetch
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(committed_offset);
            f(committed_leader_epoch, since(6));
            f(commit_timestamp, range(1, 1));
            f(committed_metadata);
        }
    };
    using topic = topic_entries<partition>;
    std::string group_id;
    // -1 with an empty member_id: a commit from outside the group (simple consumer).
    int32_t generation_id = -1;
    std::string member_id;
    std::optional<std::string> group_instance_id;
    int64_t retention_time_ms = -1;  // v2-4; -1: the broker's offsets retention
    std::vector<topic> topics;

    template <typename F>
    void serde(F& f) {
        f(group_id);
        f(generation_id, since(1));
        f(member_id, since(1));
        f(group_instance_id, since(7));
        f(retention_time_ms, range(2, 4));
        f(topics);
    }
};

struct offset_commit_response {
    struct partition {
        int32_t partition_index = 0;
        int16_t error_code = 0;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(error_code);
        }
    };
    using topic = topic_entries<partition>;
    int32_t throttle_time_ms = 0;
    std::vector<topic> topics;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(3));
        f(topics);
    }
};

}  // namespace sluice::protocol
