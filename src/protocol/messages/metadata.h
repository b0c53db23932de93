#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct metadata_request {
    struct topic {
        uuid topic_id{};
        std::optional<std::string> name;  // null in v10+ when asking by id
        template <typename F>
        void serde(F& f) {
            f(topic_id, since(10));
            f(name, all_versions, nullable(since(10)));
        }
    };
    // Null (v1+) asks for every topic; in v0 an empty array does.
    std::optional<std::vector<topic>> topics;
    bool allow_auto_topic_creation = true;
    bool include_cluster_authorized_operations = false;
    bool include_topic_authorized_operations = false;

    template <typename F>
    void serde(F& f) {
        f(topics, all_versions, nullable(since(1)));
        f(allow_auto_topic_creation, since(4));
        f(include_cluster_authorized_operations, range(8, 10));
        f(include_topic_authorized_operations, since(8));
    }
};

struct metadata_response {
    struct broker {
        int32_t node_id = 0;
        std::string host;
        int32_t port = 0;
        std::optional<std::string> rack;
        template <typename F>
        void serde(F& f) {
            f(node_id);
            f(host);
            f(port);
            f(rack, since(1));
        }
    };
    struct partition {
        int16_t error_code = 0;
        int32_t partition_index = 0;
        int32_t leader_id = 0;
        int32_t leader_epoch = -1;
        std::vector<int32_t> replica_nodes;
        std::vector<int32_t> isr_nodes;
        std::vector<int32_t> offline_replicas;
        template <typename F>
        void serde(F& f) {
            f(error_code);
            f(partition_index);
            f(leader_id);
            f(leader_epoch, since(7));
            f(replica_nodes);
            f(isr_nodes);
            f(offline_replicas, since(5));
        }
    };
    struct topic {
        int16_t error_code = 0;
        std::optional<std::string> name;
        uuid topic_id{};
        bool is_internal = false;
        std::vector<partition> partitions;
        int32_t topic_authorized_operations = INT32_MIN;
        template <typename F>
        void serde(F& f) {
            f(error_code);
            f(name, all_versions, nullable(since(12)));
            f(topic_id, since(10));
            f(is_internal, since(1));
            f(partitions);
            f(topic_authorized_operations, since(8));
        }
    };
    int32_t throttle_time_ms = 0;
    std::vector<broker> brokers;
    std::optional<std::string> cluster_id;
    int32_t controller_id = -1;
    std::vector<topic> topics;
    int32_t cluster_authorized_operations = INT32_MIN;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(3));
        f(brokers);
        f(cluster_id, since(2));
        f(controller_id, since(1));
        f(topics);
        f(cluster_authorized_operations, range(8, 10));
    }
};

}  // namespace sluice::protocol
