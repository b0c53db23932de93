#pragma once

// KIP-848's incremental reconciliation of one member towards its target assignment
// (Kafka's CurrentAssignmentBuilder): a member first gives up what its target no longer
// holds, keeping its epoch until it says it has; it gets a new partition only once no
// other member owns or is revoking it, so a partition never has two owners.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "group/state_store.h"

namespace sluice::group::consumer {

enum class member_state : uint8_t {
    stable,                // owns its whole target at the target's epoch
    unrevoked_partitions,  // must revoke pending_revocation before moving on
    unreleased_partitions  // at the target epoch, waiting for others to release partitions
};

struct member_assignment {
    member_state state = member_state::stable;
    int32_t member_epoch = 0;
    int32_t previous_epoch = 0;
    partition_map assigned;
    partition_map pending_revocation;
    bool operator==(const member_assignment&) const = default;
};

// Whether (topic, partition) is owned (assigned or being revoked) by a member other than
// the one reconciled.
using owned_by_other_fn = std::function<bool(const std::string& topic, int32_t partition)>;

// The member's next state. owned: what its heartbeat says it owns (nullopt: not sent).
member_assignment reconcile(const member_assignment& current, int32_t target_epoch,
                            const partition_map& target, const std::optional<partition_map>& owned,
                            const owned_by_other_fn& owned_by_other);

// a - b and a & b.
partition_map minus(const partition_map& a, const partition_map& b);
partition_map intersect(const partition_map& a, const partition_map& b);
bool overlaps(const partition_map& a, const partition_map& b);

}  // namespace sluice::group::consumer
