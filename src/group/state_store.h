#pragma once

// Durable group state: what a restarted coordinator needs to resume every classic group
// (generation, protocol, leader, members and their assignments) without a rebalance, as
// Kafka's group metadata records let its coordinator do. The coordinator decides what to
// write and when (a stable generation, a member gone, the group empty or forgotten); a
// store only keeps it. Implementations: catalog::group_store (the embedded catalog,
// docs/formats/catalog.md, schema version 6); a shared one keeps the same records
// elsewhere.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "group/types.h"

namespace sluice::group {

struct stored_member {
    std::string member_id;
    std::optional<std::string> instance_id;
    std::string client_id;
    std::string client_host;
    int32_t session_timeout_ms = 0;
    int32_t rebalance_timeout_ms = 0;
    std::vector<protocol_entry> protocols;  // in the member's order of preference
    bytes assignment;                       // empty unless the group is Stable
    bool operator==(const stored_member&) const = default;
};

struct stored_group {
    std::string group_id;
    // Empty, PreparingRebalance (a member left or a generation is being formed: members
    // must rejoin) or Stable. A group completing a rebalance is stored as preparing one.
    group_state state = group_state::empty;
    std::optional<std::string> protocol_type;
    std::optional<std::string> protocol_name;
    int32_t generation = 0;
    std::string leader;                  // a member id; empty without members
    int64_t state_ms = 0;                // wall clock when the group entered this state
    std::vector<stored_member> members;  // in the order they joined
    bool operator==(const stored_group&) const = default;
};

// Partitions by topic name (a consumer group's assignments, KIP-848).
using partition_map = std::map<std::string, std::set<int32_t>>;
// As the catalog stores and SQL shows them: "topic:0,1,2;other:3", topics in name order
// (topic names never hold ':', ';' or ','); "" for none.
std::string format_partitions(const partition_map& m);
// nullopt when s is not in that form.
std::optional<partition_map> parse_partitions(std::string_view s);
// A consumer member's subscribed topics as stores keep them: "a,b,c" ("" for none).
std::string format_topics(const std::vector<std::string>& topics);
std::vector<std::string> parse_topics(std::string_view s);
// The name a store keeps for a group's state: "Stable", "PreparingRebalance" (a group
// completing a rebalance too) or "Empty" (a dead group too); group/types.h parse_state
// reads it back.
std::string_view stored_state_name(group_state s);

// A member of a consumer group (KIP-848, group/consumer/): what it subscribes to, its
// epochs and the partitions it owns, is revoking and is meant to get.
struct stored_consumer_member {
    std::string member_id;
    std::optional<std::string> instance_id;
    std::optional<std::string> rack_id;
    std::string client_id;
    std::string client_host;
    int32_t member_epoch = 0;  // -2: a static member that left for now, keeping its place
    int32_t previous_epoch = 0;
    int32_t rebalance_timeout_ms = 0;
    std::optional<std::string> server_assignor;
    std::vector<std::string> subscribed_topics;  // sorted
    std::optional<std::string> subscribed_regex;
    partition_map assigned;            // owned now
    partition_map pending_revocation;  // owned, being given up
    partition_map target;              // the group's target assignment for the member
    // A member speaking the classic protocol (after an online upgrade): the session
    // timeout and protocols of its last JoinGroup. nullopt: a consumer-protocol member.
    struct classic_metadata {
        int32_t session_timeout_ms = 0;
        std::vector<protocol_entry> protocols;  // in its order of preference
        bool operator==(const classic_metadata&) const = default;
    };
    std::optional<classic_metadata> classic;
    bool operator==(const stored_consumer_member&) const = default;
};

struct stored_consumer_group {
    std::string group_id;
    int32_t group_epoch = 0;
    int32_t assignment_epoch = 0;
    std::string assignor;                         // the assignor of the target assignment
    int64_t state_ms = 0;                         // wall clock of the last change
    std::vector<stored_consumer_member> members;  // ordered by member id
    bool operator==(const stored_consumer_group&) const = default;
};

struct group_write {
    enum class kind : uint8_t {
        put,             // replace the group's record (and every member) with `group`
        erase,           // forget group.group_id
        put_consumer,    // replace the consumer group's record with `consumer`
        erase_consumer,  // forget consumer.group_id
    };
    kind op = kind::put;
    stored_group group;
    stored_consumer_group consumer;
    bool is_consumer() const { return op == kind::put_consumer || op == kind::erase_consumer; }
    const std::string& group_id() const { return is_consumer() ? consumer.group_id : group.group_id; }
};

// Where group state is kept (classic and consumer groups alike). Not thread-safe: one caller at a
// time (the broker runs it on its catalog writer thread, off the event loop).
class state_store {
  public:
    virtual ~state_store() = default;
    // Every stored group, at start-up.
    virtual result<std::vector<stored_group>> load() = 0;
    // Every stored consumer group (KIP-848), at start-up.
    virtual result<std::vector<stored_consumer_group>> load_consumer() = 0;
    // All writes in one transaction, in order, durable when it returns. Returns the groups
    // whose writes were refused (skipped) because this broker no longer coordinates them
    // (shared mode's fencing, shared/group_fence.h; the embedded catalog never refuses).
    virtual result<std::set<std::string>> apply(std::span<const group_write> writes) = 0;
};

// What a request waiting on a write that failed is answered: NOT_COORDINATOR when another
// broker took the group over (errc::fenced, shared mode), COORDINATOR_NOT_AVAILABLE when
// the store failed. Both make the client look the coordinator up again.
inline error_code write_failure_code(const error& e) {
    return e.code == errc::fenced ? error_code::not_coordinator
                                  : error_code::coordinator_not_available;
}

// How the coordinator hands writes to a state_store without blocking its thread: writes
// are applied in submission order, and each done runs on the coordinator's thread once
// its write is durable (or failed).
class state_writer {
  public:
    using done_fn = std::function<void(result<void>)>;
    virtual ~state_writer() = default;
    virtual void write(group_write w, done_fn done) = 0;
};

}  // namespace sluice::group
