#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct offset_fetch_request {
    struct topic {
        std::string name;
        std::vector<int32_t> partition_indexes;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(partition_indexes);
        }
    };
    struct group {
        std::string group_id;
        // v9+ (KIP-848): the consumer-group member asking, checked against its epoch.
        std::optional<std::string> member_id;
        int32_t member_epoch = -1;
        std::optional<std::vector<topic>> topics;  // null: every topic the group committed
        template <typename F>
        void serde(F& f) {
            f(group_id);
            f(member_id, since(9));
            f(member_epoch, since(9));
            f(topics);
        }
    };
    std::string group_id;  // v0-7: the one group asked about; v8+ uses groups
    // v0-7; null (v2+) asks for every committed topic. A null is written as an empty
    // array in v0-1, and read back as one.
    std::optional<std::vector<topic>> topics;
    std::vector<group> groups;
    bool require_stable = false;  // v7+: offsets pending in a transaction are an error

    template <typename F>
    void serde(F& f) {
        f(group_id, range(0, 7));
        f(topics, range(0, 7), nullable(range(2, 7)));
        f(groups, since(8));
        f(require_stable, since(7));
    }
};

struct offset_fetch_response {
    // The same fields in v0-7 (under topics) and v8+ (under groups).
    struct partition {
        int32_t partition_index = 0;
        int64_t committed_offset = -1;  // -1: nothing committed
        int32_t committed_leader_epoch = -1;
        std::optional<std::string> metadata;  // as given to OffsetCommit
        int16_t error_code = 0;
        template <typename F>
        void serde(F& f) {
            f(partition_index);
            f(committed_offset);
            f(committed_leader_epoch, since(5));
            f(metadata);
            f(error_code);
        }
    };
    struct topic {
        std::string name;
        std::vector<partition> partitions;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(partitions);
        }
    };
    struct group {
        std::string group_id;
        std::vector<topic> topics;
        int16_t error_code = 0;
        template <typename F>
        void serde(F& f) {
            f(group_id);
            f(topics);
            f(error_code);
        }
    };
    int32_t throttle_time_ms = 0;
    std::vector<topic> topics;  // v0-7; v8+ uses groups
    int16_t error_code = 0;     // v2-7: a group-level error (e.g. NOT_COORDINATOR)
    std::vector<group> groups;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(3));
        f(topics, range(0, 7));
        f(error_code, range(2, 7));
        f(groups, since(8));
    }
};

}  // namespace sluice::protocol
