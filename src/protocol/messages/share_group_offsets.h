#pragma once

// The share group offset APIs (KIP-932): DescribeShareGroupOffsets (API 90, v0-v1; v1
// adds Lag, KIP-1226), AlterShareGroupOffsets (91, v0) and DeleteShareGroupOffsets (92,
// v0). Flexible in every version.

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct describe_share_group_offsets_request {
    struct topic {
        std::string topic_name;
        std::vector<int32_t> partitions;
        template <typename F>
        void serde(F& f) {
            f(topic_name);
            f(partitions);
        }
    };
    struct group {
        std::string group_id;
        std::optional<std::vector<topic>> topics;  // null: every partition with state
        template <typename F>
        void serde(F& f) {
            f(group_id);
            f(topics);
        }
    };
    std::vector<group> groups;
    template <typename F>
    void serde(F& f) {
        f(groups);
    }
};

struct describe_share_group_offsets_response {
    struct partition {
        int32_t partition_index = 0;
        int64_t start_offset = -1;  // -1: the group has no state for it
        int32_t leader_epoch = -1;
        int64_t lag = -1;  // v1
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(start_offset);
            f(leader_epoch);
            f(lag, since(1));
            f(error_code);
            f(error_message);
        }
    };
    struct topic {
        std::string topic_name;
        uuid topic_id{};
        std::vector<partition> partitions;
        template <typename F>
        void serde(F& f) {
            f(topic_name);
            f(topic_id);
            f(partitions);
        }
    };
    struct group {
        std::string group_id;
        std::vector<topic> topics;
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        template <typename F>
        void serde(F& f) {
            f(group_id);
            f(topics);
            f(error_code);
            f(error_message);
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

struct alter_share_group_offsets_request {
    struct partition {
        int32_t partition_index = 0;
        int64_t start_offset = 0;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(start_offset);
        }
    };
    struct topic {
        std::string topic_name;
        std::vector<partition> partitions;
        template <typename F>
        void serde(F& f) {
            f(topic_name);
            f(partitions);
        }
    };
    std::string group_id;
    std::vector<topic> topics;
    template <typename F>
    void serde(F& f) {
        f(group_id);
        f(topics);
    }
};

struct alter_share_group_offsets_response {
    struct partition {
        int32_t partition_index = 0;
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(error_code);
            f(error_message);
        }
    };
    struct topic {
        std::string topic_name;
        uuid topic_id{};
        std::vector<partition> partitions;
        template <typename F>
        void serde(F& f) {
            f(topic_name);
            f(topic_id);
            f(partitions);
        }
    };
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::vector<topic> responses;
    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code);
        f(error_message);
        f(responses);
    }
};

struct delete_share_group_offsets_request {
    struct topic {
        std::string topic_name;
        template <typename F>
        void serde(F& f) {
            f(topic_name);
        }
    };
    std::string group_id;
    std::vector<topic> topics;
    template <typename F>
    void serde(F& f) {
        f(group_id);
        f(topics);
    }
};

struct delete_share_group_offsets_response {
    struct topic {
        std::string topic_name;
        uuid topic_id{};
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        template <typename F>
        void serde(F& f) {
            f(topic_name);
            f(topic_id);
            f(error_code);
            f(error_message);
        }
    };
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::vector<topic> responses;
    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code);
        f(error_message);
        f(responses);
    }
};

}  // namespace sluice::protocol
