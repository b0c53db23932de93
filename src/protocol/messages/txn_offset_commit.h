#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

// TxnOffsetCommit v0-5 (flexible from v3; v3 adds the group generation and member,
// v5 is transaction version 2: the group joins the transaction implicitly).
struct txn_offset_commit_request {
    struct partition {
        int32_t partition_index = 0;
        int64_t committed_offset = -1;
        int32_t committed_leader_epoch = -1;  // v2+
        std::optional<std::string> committed_metadata;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(committed_offset);
            f(committed_leader_epoch, since(2));
            f(committed_metadata);
        }
    };
    using topic = topic_entries<partition>;
    std::string transactional_id;
    std::string group_id;
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;
    int32_t generation_id = -1;                    // v3+
    std::string member_id;                         // v3+
    std::optional<std::string> group_instance_id;  // v3+
    std::vector<topic> topics;

    template <typename F>
    void serde(F& f) {
        f(transactional_id);
        f(group_id);
        f(producer_id);
        f(producer_epoch);
        f(generation_id, since(3));
        f(member_id, since(3));
        f(group_instance_id, since(3));
        f(topics);
    }
};

struct txn_offset_commit_response {
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
        f(throttle_time_ms);
        f(topics);
    }
};

}  // namespace sluice::protocol
