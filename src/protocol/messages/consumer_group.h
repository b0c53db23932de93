#pragma once

// ConsumerGroupHeartbeat (API 68) and ConsumerGroupDescribe (API 69): Kafka 4's
// consumer group protocol (KIP-848). Flexible in every version.

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct consumer_group_heartbeat_request {
    struct topic_partition_set {
        uuid topic_id{};
        std::vector<int32_t> partitions;
        template <typename F>
        void serde(F& f) {
            f(topic_id);
            f(partitions);
        }
    };
    std::string group_id;
    std::string member_id;
    int32_t member_epoch = 0;  // 0 joins, -1 leaves, -2 a static member leaves for now
    std::optional<std::string> instance_id;
    std::optional<std::string> rack_id;
    int32_t rebalance_timeout_ms = -1;
    // null: unchanged since the last heartbeat
    std::optional<std::vector<std::string>> subscribed_topic_names;
    std::optional<std::string> subscribed_topic_regex;  // v1+
    std::optional<std::string> server_assignor;
    std::optional<std::vector<topic_partition_set>> topic_partitions_owned;

    template <typename F>
    void serde(F& f) {
        f(group_id);
        f(member_id);
        f(member_epoch);
        f(instance_id);
        f(rack_id);
        f(rebalance_timeout_ms);
        f(subscribed_topic_names);
        f(subscribed_topic_regex, since(1));
        f(server_assignor);
        f(topic_partitions_owned);
    }
};

struct consumer_group_heartbeat_response {
    using topic_partition_set = consumer_group_heartbeat_request::topic_partition_set;
    struct assignment {
        std::vector<topic_partition_set> topic_partitions;
        template <typename F>
        void serde(F& f) {
            f(topic_partitions);
        }
    };
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::optional<std::string> member_id;
    int32_t member_epoch = 0;
    int32_t heartbeat_interval_ms = 0;
    std::optional<assignment> assigned;  // null: unchanged

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code);
        f(error_message);
        f(member_id);
        f(member_epoch);
        f(heartbeat_interval_ms);
        f(assigned);
    }
};

struct consumer_group_describe_request {
    std::vector<std::string> group_ids;
    bool include_authorized_operations = false;
    template <typename F>
    void serde(F& f) {
        f(group_ids);
        f(include_authorized_operations);
    }
};

struct consumer_group_describe_response {
    struct topic_partition_set {
        uuid topic_id{};
        std::string topic_name;
        std::vector<int32_t> partitions;
        template <typename F>
        void serde(F& f) {
            f(topic_id);
            f(topic_name);
            f(partitions);
        }
    };
    struct assignment {
        std::vector<topic_partition_set> topic_partitions;
        template <typename F>
        void serde(F& f) {
            f(topic_partitions);
        }
    };
    struct member {
        std::string member_id;
        std::optional<std::string> instance_id;
        std::optional<std::string> rack_id;
        int32_t member_epoch = 0;
        std::string client_id;
        std::string client_host;
        std::vector<std::string> subscribed_topic_names;
        std::optional<std::string> subscribed_topic_regex;
        assignment current;
        assignment target;
        int8_t member_type = 1;  // v1+: 1, a consumer-protocol member
        template <typename F>
        void serde(F& f) {
            f(member_id);
            f(instance_id);
            f(rack_id);
            f(member_epoch);
            f(client_id);
            f(client_host);
            f(subscribed_topic_names);
            f(subscribed_topic_regex);
            f(current);
            f(target);
            f(member_type, since(1));
        }
    };
    struct group {
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        std::string group_id;
        std::string group_state;
        int32_t group_epoch = 0;
        int32_t assignment_epoch = 0;
        std::string assignor_name;
        std::vector<member> members;
        int32_t authorized_operations = INT32_MIN;
        template <typename F>
        void serde(F& f) {
            f(error_code);
            f(error_message);
            f(group_id);
            f(group_state);
            f(group_epoch);
            f(assignment_epoch);
            f(assignor_name);
            f(members);
            f(authorized_operations);
        }
    };
    int32_t throttle_time_ms = 0;
    std::vector<group> groups;
    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(groups);
    }
};

}  // namespace sluice::protocol
