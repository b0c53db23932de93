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
#include <optional>
#include <span>
#include <string>
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
    std::string leader;  // a member id; empty without members
    int64_t state_ms = 0;  // wall clock when the group entered this state
    std::vector<stored_member> members;  // in the order they joined
    bool operator==(const stored_group&) const = default;
};

struct group_write {
    enum class kind : uint8_t {
        put,    // replace the group's record (and every member) with `group`
        erase,  // forget group.group_id
    };
    kind op = kind::put;
    stored_group group;
};

// Where group state is kept. Not thread-safe: one caller at a time (the broker runs it
// on its catalog writer thread, off the event loop).
class state_store {
  public:
    virtual ~state_store() = default;
    // Every stored group, at start-up.
    virtual result<std::vector<stored_group>> load() = 0;
    // All writes in one transaction, in order, durable when it returns.
    virtual result<void> apply(std::span<const group_write> writes) = 0;
};

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
