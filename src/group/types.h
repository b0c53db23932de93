#pragma once

// The group coordinator's vocabulary: what a join, sync or commit carries in and out,
// independent of the protocol version that carried it.

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.h"
#include "protocol/error_code.h"

namespace sluice::group {

// The coordinator implements Kafka's group protocol, whose outcomes are Kafka's error
// codes; DESIGN.md lets group depend on protocol, so they are used as the result type
// rather than mapped from a private enum one to one.
using protocol::error_code;

// Broker settings (docs/configuration.md), Kafka's names in comments.
struct config {
    // group.initial.rebalance.delay.ms, Kafka's (and Redpanda's) default: clients' own
    // tests of cooperative rebalancing expect consumers started within 3 s of each other
    // to share the first generation. `make run` passes a shorter one.
    int32_t initial_rebalance_delay_ms = 3000;
    int32_t min_session_timeout_ms = 6000;                         // group.min.session.timeout.ms
    int32_t max_session_timeout_ms = 1800000;                      // group.max.session.timeout.ms
    int32_t max_group_size = std::numeric_limits<int32_t>::max();  // group.max.size
    int64_t offsets_retention_ms = int64_t{7} * 24 * 3600 * 1000;  // offsets.retention.minutes
    size_t offset_metadata_max_bytes = 4096;                       // offset.metadata.max.bytes
    // Consumer groups (KIP-848, group/consumer/):
    int32_t consumer_session_timeout_ms = 45000;    // group.consumer.session.timeout.ms
    int32_t consumer_heartbeat_interval_ms = 5000;  // group.consumer.heartbeat.interval.ms
    // group.consumer.assignors: the server-side assignors offered; the first is the default.
    std::vector<std::string> consumer_assignors = {"uniform", "range"};
    // group.consumer.migration.policy: whether a classic group becomes a consumer group
    // when a consumer-protocol member joins it (upgrade), and back when the last one
    // leaves (downgrade): bidirectional, upgrade, downgrade or disabled.
    std::string consumer_migration_policy = "bidirectional";
    bool migration_upgrade() const {
        return consumer_migration_policy == "bidirectional" ||
               consumer_migration_policy == "upgrade";
    }
    bool migration_downgrade() const {
        return consumer_migration_policy == "bidirectional" ||
               consumer_migration_policy == "downgrade";
    }
};

enum class group_state { empty, preparing_rebalance, completing_rebalance, stable, dead };

// Kafka's names ("Stable", "PreparingRebalance", ...), as DescribeGroups and ListGroups
// print them.
std::string_view state_name(group_state s);
// Case-insensitive, as Kafka's ListGroups states filter.
std::optional<group_state> parse_state(std::string_view name);

struct protocol_entry {
    std::string name;
    bytes metadata;
    bool operator==(const protocol_entry&) const = default;
};

struct join_request {
    std::string group_id;
    std::string member_id;                   // empty on a first join
    std::optional<std::string> instance_id;  // group.instance.id: static membership
    std::string client_id;
    std::string client_host;
    int32_t session_timeout_ms = 0;
    int32_t rebalance_timeout_ms = 0;
    std::string protocol_type;
    std::vector<protocol_entry> protocols;  // in the member's order of preference
    // JoinGroup v4+: a first join is answered MEMBER_ID_REQUIRED with the id to use.
    bool require_known_member_id = false;
    // JoinGroup v9+: the answer can tell a leader to skip the assignor (KIP-814).
    bool supports_skip_assignment = false;
};

struct join_result {
    error_code error = error_code::none;
    int32_t generation = -1;
    std::optional<std::string> protocol_type;
    std::optional<std::string> protocol_name;
    std::string leader;
    std::string member_id;
    struct member {
        std::string member_id;
        std::optional<std::string> instance_id;
        bytes metadata;  // for the selected protocol
    };
    std::vector<member> members;  // only in the leader's result
    // A static leader that rejoined a stable group: it leads, but must not reassign.
    bool skip_assignment = false;
};

struct sync_request {
    std::string group_id;
    std::string member_id;
    std::optional<std::string> instance_id;
    int32_t generation = -1;
    std::optional<std::string> protocol_type;  // SyncGroup v5+: checked when present
    std::optional<std::string> protocol_name;
    std::vector<std::pair<std::string, bytes>> assignments;  // from the leader only
};

struct sync_result {
    error_code error = error_code::none;
    std::optional<std::string> protocol_type;
    std::optional<std::string> protocol_name;
    bytes assignment;
};

using join_callback = std::function<void(const join_result&)>;
using sync_callback = std::function<void(const sync_result&)>;

// Which member a heartbeat, leave or commit speaks for.
struct member_ref {
    std::string member_id;
    std::optional<std::string> instance_id;
    int32_t generation = -1;
};

struct committed_offset {
    int64_t offset = -1;
    int32_t leader_epoch = -1;
    std::optional<std::string> metadata;
    int64_t commit_ms = 0;   // wall clock when the broker accepted it
    int64_t expire_ms = -1;  // from OffsetCommit v2-v4 retention_time_ms; -1: the default
};

struct offset_entry {
    topic_partition tp;
    committed_offset value;
};

struct member_description {
    std::string member_id;
    std::optional<std::string> instance_id;
    std::string client_id;
    std::string client_host;
    bytes metadata;  // for the selected protocol (empty while none is selected)
    bytes assignment;
};

struct group_description {
    std::string group_id;
    group_state state = group_state::dead;
    int32_t generation = 0;  // not in DescribeGroups; system.groups shows it
    std::string protocol_type;
    std::string protocol_name;
    std::vector<member_description> members;
};

struct group_listing {
    std::string group_id;
    std::string protocol_type;
    group_state state = group_state::empty;
};

}  // namespace sluice::group
