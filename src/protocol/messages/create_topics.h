#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct create_topics_request {
    struct assignment {
        int32_t partition_index = 0;
        std::vector<int32_t> broker_ids;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(broker_ids);
        }
    };
    struct config {
        std::string name;
        std::optional<std::string> value;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(value);
        }
    };
    struct topic {
        std::string name;
        int32_t num_partitions = -1;      // -1: broker default
        int16_t replication_factor = -1;  // checked, then ignored: one copy
        std::vector<assignment> assignments;
        std::vector<config> configs;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(num_partitions);
            f(replication_factor);
            f(assignments);
            f(configs);
        }
    };
    std::vector<topic> topics;
    int32_t timeout_ms = 60000;
    bool validate_only = false;

    template <typename F>
    void serde(F& f) {
        f(topics);
        f(timeout_ms);
        f(validate_only, since(1));
    }
};

struct create_topics_response {
    struct config {
        std::string name;
        std::optional<std::string> value;
        bool read_only = false;
        int8_t config_source = -1;
        bool is_sensitive = false;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(value);
            f(read_only);
            f(config_source);
            f(is_sensitive);
        }
    };
    struct topic {
        std::string name;
        uuid topic_id{};
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        int16_t topic_config_error_code = 0;
        int32_t num_partitions = -1;
        int16_t replication_factor = -1;
        std::optional<std::vector<config>> configs;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(topic_id, since(7));
            f(error_code);
            f(error_message, since(1));
            f.tagged(0, topic_config_error_code, since(5));
            f(num_partitions, since(5));
            f(replication_factor, since(5));
            f(configs, since(5));
        }
    };
    int32_t throttle_time_ms = 0;
    std::vector<topic> topics;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(2));
        f(topics);
    }
};

}  // namespace sluice::protocol
