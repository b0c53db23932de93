#pragma once

// Share groups (KIP-932): ShareGroupHeartbeat (API 76), ShareGroupDescribe (77),
// ShareFetch (78) and ShareAcknowledge (79). Flexible in every version; the versions
// Kafka 4.2+ clients send (76/77 v1, 78/79 v1-v2).

#include <optional>
#include <string>
#include <vector>

#include "protocol/messages/consumer_group.h"
#include "protocol/serde.h"

namespace sluice::protocol {

// Topic ids with partitions, as the consumer group messages carry them.
using share_topic_partitions = consumer_group_heartbeat_request::topic_partition_set;

struct share_group_heartbeat_request {
    std::string group_id;
    std::string member_id;
    int32_t member_epoch = 0;  // 0 joins, -1 leaves
    std::optional<std::string> rack_id;
    std::optional<std::vector<std::string>> subscribed_topic_names;  // null: unchanged
    template <typename F>
    void serde(F& f) {
        f(group_id);
        f(member_id);
        f(member_epoch);
        f(rack_id);
        f(subscribed_topic_names);
    }
};

// The same fields as ConsumerGroupHeartbeat's and ConsumerGroupDescribe's.
using share_group_heartbeat_response = consumer_group_heartbeat_response;
using share_group_describe_request = consumer_group_describe_request;

struct share_group_describe_response {
    struct topic_partitions {
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
        std::vector<topic_partitions> assigned;
        template <typename F>
        void serde(F& f) {
            f(assigned);
        }
    };
    struct member {
        std::string member_id;
        std::optional<std::string> rack_id;
        int32_t member_epoch = 0;
        std::string client_id;
        std::string client_host;
        std::vector<std::string> subscribed_topic_names;
        assignment current;
        template <typename F>
        void serde(F& f) {
            f(member_id);
            f(rack_id);
            f(member_epoch);
            f(client_id);
            f(client_host);
            f(subscribed_topic_names);
            f(current);
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

// A topic of a ShareFetch/ShareAcknowledge request or response: its id and partitions.
template <typename Partition>
struct share_topic {
    uuid topic_id{};
    std::vector<Partition> partitions;
    template <typename F>
    void serde(F& f) {
        f(topic_id);
        f(partitions);
    }
};

struct acknowledgement_batch {
    int64_t first_offset = 0;
    int64_t last_offset = 0;                // inclusive
    std::vector<int8_t> acknowledge_types;  // one for the whole range, or one per offset
    template <typename F>
    void serde(F& f) {
        f(first_offset);
        f(last_offset);
        f(acknowledge_types);
    }
};

struct share_fetch_request {
    struct partition {
        int32_t partition_index = 0;
        int32_t partition_max_bytes = 0;  // v0 only
        std::vector<acknowledgement_batch> acknowledgement_batches;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(partition_max_bytes, range(0, 0));
            f(acknowledgement_batches);
        }
    };
    using topic = share_topic<partition>;
    std::optional<std::string> group_id;
    std::optional<std::string> member_id;
    int32_t share_session_epoch = 0;  // 0 opens a share session, -1 closes it
    int32_t max_wait_ms = 0;
    int32_t min_bytes = 0;
    int32_t max_bytes = 0x7fffffff;
    int32_t max_records = 0;        // v1+
    int32_t batch_size = 0;         // v1+
    int8_t share_acquire_mode = 0;  // v2+: 0 batch-optimized, 1 record-limit
    bool is_renew_ack = false;      // v2+
    std::vector<topic> topics;
    std::vector<share_topic_partitions> forgotten_topics_data;
    template <typename F>
    void serde(F& f) {
        f(group_id);
        f(member_id);
        f(share_session_epoch);
        f(max_wait_ms);
        f(min_bytes);
        f(max_bytes);
        f(max_records, since(1));
        f(batch_size, since(1));
        f(share_acquire_mode, since(2));
        f(is_renew_ack, since(2));
        f(topics);
        f(forgotten_topics_data);
    }
};

struct share_leader {
    int32_t leader_id = -1;
    int32_t leader_epoch = -1;
    template <typename F>
    void serde(F& f) {
        f(leader_id);
        f(leader_epoch);
    }
};

struct share_node_endpoint {
    int32_t node_id = 0;
    std::string host;
    int32_t port = 0;
    std::optional<std::string> rack;
    template <typename F>
    void serde(F& f) {
        f(node_id);
        f(host);
        f(port);
        f(rack);
    }
};

struct share_fetch_response {
    struct acquired_records {
        int64_t first_offset = 0;
        int64_t last_offset = 0;
        int16_t delivery_count = 0;
        template <typename F>
        void serde(F& f) {
            f(first_offset);
            f(last_offset);
            f(delivery_count);
        }
    };
    struct partition {
        int32_t partition_index = 0;
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        int16_t acknowledge_error_code = 0;
        std::optional<std::string> acknowledge_error_message;
        share_leader current_leader;
        protocol::records records;
        std::vector<acquired_records> acquired;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(error_code);
            f(error_message);
            f(acknowledge_error_code);
            f(acknowledge_error_message);
            f(current_leader);
            f(records);
            f(acquired);
        }
    };
    using topic = share_topic<partition>;
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    std::optional<std::string> error_message;
    int32_t acquisition_lock_timeout_ms = 0;  // v1+
    std::vector<topic> responses;
    std::vector<share_node_endpoint> node_endpoints;
    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code);
        f(error_message);
        f(acquisition_lock_timeout_ms, since(1));
        f(responses);
        f(node_endpoints);
    }
};

struct share_acknowledge_request {
    struct partition {
        int32_t partition_index = 0;
        std::vector<acknowledgement_batch> acknowledgement_batches;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(acknowledgement_batches);
        }
    };
    using topic = share_topic<partition>;
    std::optional<std::string> group_id;
    std::optional<std::string> member_id;
    int32_t share_session_epoch = 0;
    bool is_renew_ack = false;  // v2+
    std::vector<topic> topics;
    template <typename F>
    void serde(F& f) {
        f(group_id);
        f(member_id);
        f(share_session_epoch);
        f(is_renew_ack, since(2));
        f(topics);
    }
};

struct share_acknowledge_response {
    struct partition {
        int32_t partition_index = 0;
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        share_leader current_leader;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(error_code);
            f(error_message);
            f(current_leader);
        }
    };
    using topic = share_topic<partition>;
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    std::optional<std::string> error_message;
    int32_t acquisition_lock_timeout_ms = 0;  // v2+
    std::vector<topic> responses;
    std::vector<share_node_endpoint> node_endpoints;
    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code);
        f(error_message);
        f(acquisition_lock_timeout_ms, since(2));
        f(responses);
        f(node_endpoints);
    }
};

}  // namespace sluice::protocol
