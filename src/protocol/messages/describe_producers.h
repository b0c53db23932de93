#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

// DescribeProducers v0 (flexible).
struct describe_producers_request {
    struct topic {
        std::string name;
        std::vector<int32_t> partition_indexes;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(partition_indexes);
        }
    };
    std::vector<topic> topics;

    template <typename F>
    void serde(F& f) {
        f(topics);
    }
};

struct describe_producers_response {
    struct producer {
        int64_t producer_id = -1;
        int32_t producer_epoch = -1;
        int32_t last_sequence = -1;
        int64_t last_timestamp = -1;
        int32_t coordinator_epoch = -1;         // of the last marker; -1: none
        int64_t current_txn_start_offset = -1;  // the open transaction's first offset
        template <typename F>
        void serde(F& f) {
            f(producer_id);
            f(producer_epoch);
            f(last_sequence);
            f(last_timestamp);
            f(coordinator_epoch);
            f(current_txn_start_offset);
        }
    };
    struct partition {
        int32_t partition_index = 0;
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        std::vector<producer> active_producers;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(error_code);
            f(error_message);
            f(active_producers);
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
