#pragma once

#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

// AddPartitionsToTxn v0-5 (flexible from v3). v0-3: one transaction, from its producer;
// v4+: batched, from a partition leader (KIP-890), with verify_only.
struct add_partitions_to_txn_request {
    struct topic {
        std::string name;
        std::vector<int32_t> partitions;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(partitions);
        }
    };
    struct transaction {
        std::string transactional_id;
        int64_t producer_id = -1;
        int16_t producer_epoch = -1;
        bool verify_only = false;
        std::vector<topic> topics;
        template <typename F>
        void serde(F& f) {
            f(transactional_id);
            f(producer_id);
            f(producer_epoch);
            f(verify_only);
            f(topics);
        }
    };
    std::vector<transaction> transactions;  // v4+
    // v0-3
    std::string transactional_id;
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;
    std::vector<topic> topics;

    template <typename F>
    void serde(F& f) {
        f(transactions, since(4));
        f(transactional_id, range(0, 3));
        f(producer_id, range(0, 3));
        f(producer_epoch, range(0, 3));
        f(topics, range(0, 3));
    }
};

struct add_partitions_to_txn_response {
    struct partition_result {
        int32_t partition_index = 0;
        int16_t error_code = 0;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(error_code);
        }
    };
    struct topic_result {
        std::string name;
        std::vector<partition_result> results;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(results);
        }
    };
    struct transaction_result {
        std::string transactional_id;
        std::vector<topic_result> topic_results;
        template <typename F>
        void serde(F& f) {
            f(transactional_id);
            f(topic_results);
        }
    };
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;                                  // v4+
    std::vector<transaction_result> results_by_transaction;  // v4+
    std::vector<topic_result> results_by_topic;              // v0-3

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code, since(4));
        f(results_by_transaction, since(4));
        f(results_by_topic, range(0, 3));
    }
};

}  // namespace sluice::protocol
