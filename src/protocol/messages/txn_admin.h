#pragma once

// The transaction APIs for operators and Kafka's `kafka-transactions` tool:
// DescribeTransactions v0, ListTransactions v0-2 and WriteTxnMarkers v1-2 (all flexible).

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct describe_transactions_request {
    std::vector<std::string> transactional_ids;

    template <typename F>
    void serde(F& f) {
        f(transactional_ids);
    }
};

struct describe_transactions_response {
    struct topic {
        std::string topic;
        std::vector<int32_t> partitions;
        template <typename F>
        void serde(F& f) {
            f(topic);
            f(partitions);
        }
    };
    struct state {
        int16_t error_code = 0;
        std::string transactional_id;
        std::string transaction_state;
        int32_t transaction_timeout_ms = 0;
        int64_t transaction_start_time_ms = -1;
        int64_t producer_id = -1;
        int16_t producer_epoch = -1;
        std::vector<topic> topics;
        template <typename F>
        void serde(F& f) {
            f(error_code);
            f(transactional_id);
            f(transaction_state);
            f(transaction_timeout_ms);
            f(transaction_start_time_ms);
            f(producer_id);
            f(producer_epoch);
            f(topics);
        }
    };
    int32_t throttle_time_ms = 0;
    std::vector<state> transaction_states;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(transaction_states);
    }
};

struct list_transactions_request {
    std::vector<std::string> state_filters;
    std::vector<int64_t> producer_id_filters;
    int64_t duration_filter = -1;                         // v1+
    std::optional<std::string> transactional_id_pattern;  // v2+

    template <typename F>
    void serde(F& f) {
        f(state_filters);
        f(producer_id_filters);
        f(duration_filter, since(1));
        f(transactional_id_pattern, since(2));
    }
};

struct list_transactions_response {
    struct state {
        std::string transactional_id;
        int64_t producer_id = -1;
        std::string transaction_state;
        template <typename F>
        void serde(F& f) {
            f(transactional_id);
            f(producer_id);
            f(transaction_state);
        }
    };
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    std::vector<std::string> unknown_state_filters;
    std::vector<state> transaction_states;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code);
        f(unknown_state_filters);
        f(transaction_states);
    }
};

struct write_txn_markers_request {
    struct topic {
        std::string name;
        std::vector<int32_t> partition_indexes;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(partition_indexes);
        }
    };
    struct marker {
        int64_t producer_id = -1;
        int16_t producer_epoch = -1;
        bool transaction_result = false;  // true: COMMIT
        std::vector<topic> topics;
        int32_t coordinator_epoch = 0;
        int8_t transaction_version = 0;  // v2+
        template <typename F>
        void serde(F& f) {
            f(producer_id);
            f(producer_epoch);
            f(transaction_result);
            f(topics);
            f(coordinator_epoch);
            f(transaction_version, since(2));
        }
    };
    std::vector<marker> markers;

    template <typename F>
    void serde(F& f) {
        f(markers);
    }
};

struct write_txn_markers_response {
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
    struct marker {
        int64_t producer_id = -1;
        std::vector<topic> topics;
        template <typename F>
        void serde(F& f) {
            f(producer_id);
            f(topics);
        }
    };
    std::vector<marker> markers;

    template <typename F>
    void serde(F& f) {
        f(markers);
    }
};

}  // namespace sluice::protocol
