#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

// Fetch names topics up to v12 and gives their ids from v13.
template <typename P>
struct fetch_topic {
    std::string name;
    uuid topic_id{};
    std::vector<P> partitions;
    template <typename F>
    void serde(F& f) {
        f(name, range(0, 12));
        f(topic_id, since(13));
        f(partitions);
    }
};

struct fetch_request {
    struct partition {
        int32_t partition = 0;
        int32_t current_leader_epoch = -1;
        int64_t fetch_offset = 0;
        int32_t last_fetched_epoch = -1;
        int64_t log_start_offset = -1;
        int32_t partition_max_bytes = 0;
        template <typename F>
        void serde(F& f) {
            f(partition);
            f(current_leader_epoch, since(9));
            f(fetch_offset);
            f(last_fetched_epoch, since(12));
            f(log_start_offset, since(5));
            f(partition_max_bytes);
        }
    };
    using topic = fetch_topic<partition>;
    // The forgotten_topics array itself exists from v7 on.
    using forgotten_topic = fetch_topic<int32_t>;
    std::optional<std::string> cluster_id;
    int32_t replica_id = -1;
    int32_t max_wait_ms = 0;
    int32_t min_bytes = 0;
    int32_t max_bytes = INT32_MAX;
    int8_t isolation_level = 0;
    int32_t session_id = 0;
    int32_t session_epoch = -1;
    std::vector<topic> topics;
    std::vector<forgotten_topic> forgotten_topics;
    std::string rack_id;

    template <typename F>
    void serde(F& f) {
        f.tagged(0, cluster_id, since(12));
        f(replica_id, range(0, 14));
        f(max_wait_ms);
        f(min_bytes);
        f(max_bytes, since(3));
        f(isolation_level, since(4));
        f(session_id, since(7));
        f(session_epoch, since(7));
        f(topics);
        f(forgotten_topics, since(7));
        f(rack_id, since(11));
    }
};

struct fetch_response {
    struct aborted_transaction {
        int64_t producer_id = 0;
        int64_t first_offset = 0;
        template <typename F>
        void serde(F& f) {
            f(producer_id);
            f(first_offset);
        }
    };
    struct partition {
        int32_t partition_index = 0;
        int16_t error_code = 0;
        int64_t high_watermark = -1;
        int64_t last_stable_offset = -1;
        int64_t log_start_offset = -1;
        std::optional<std::vector<aborted_transaction>> aborted_transactions;
        int32_t preferred_read_replica = -1;
        protocol::records records;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(error_code);
            f(high_watermark);
            f(last_stable_offset, since(4));
            f(log_start_offset, since(5));
            f(aborted_transactions, since(4));
            f(preferred_read_replica, since(11));
            f(records);
        }
    };
    using topic = fetch_topic<partition>;
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    int32_t session_id = 0;
    std::vector<topic> responses;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(1));
        f(error_code, since(7));
        f(session_id, since(7));
        f(responses);
    }
};

}  // namespace sluice::protocol
