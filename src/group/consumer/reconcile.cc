#include "group/consumer/reconcile.h"

#include <algorithm>

namespace sluice::group::consumer {

partition_map minus(const partition_map& a, const partition_map& b) {
    partition_map out;
    for (const auto& [t, ps] : a) {
        auto it = b.find(t);
        for (int32_t p : ps)
            if (it == b.end() || !it->second.count(p)) out[t].insert(p);
    }
    return out;
}

partition_map intersect(const partition_map& a, const partition_map& b) {
    partition_map out;
    for (const auto& [t, ps] : a) {
        auto it = b.find(t);
        if (it == b.end()) continue;
        for (int32_t p : ps)
            if (it->second.count(p)) out[t].insert(p);
    }
    return out;
}

bool overlaps(const partition_map& a, const partition_map& b) {
    return !intersect(a, b).empty();
}

namespace {

// Towards the target from what the member owns now (Kafka's computeNextAssignment).
// epoch: the member's epoch should it have to revoke; partitions it no longer owns (by
// its heartbeat's list) count as revoked already.
member_assignment next_assignment(const member_assignment& cur, int32_t epoch, int32_t target_epoch,
                                  const partition_map& target,
                                  const std::optional<partition_map>& owned,
                                  const owned_by_other_fn& owned_by_other) {
    member_assignment next;
    auto set_epoch = [&](int32_t e) {
        next.member_epoch = e;
        next.previous_epoch = e == cur.member_epoch ? cur.previous_epoch : cur.member_epoch;
    };
    partition_map kept = intersect(cur.assigned, target);
    partition_map revoke = minus(cur.assigned, target);
    partition_map wanted = minus(target, cur.assigned);
    bool unreleased = false;
    partition_map free;
    for (const auto& [t, ps] : wanted) {
        for (int32_t p : ps) {
            if (owned_by_other(t, p))
                unreleased = true;
            else
                free[t].insert(p);
        }
    }
    if (!revoke.empty() && (!owned || overlaps(*owned, revoke))) {
        // The member must say it revoked before it gets anything new.
        next.state = member_state::unrevoked_partitions;
        set_epoch(epoch);
        next.assigned = kept;
        next.pending_revocation = revoke;
        return next;
    }
    next.assigned = kept;
    for (const auto& [t, ps] : free) next.assigned[t].insert(ps.begin(), ps.end());
    set_epoch(target_epoch);
    next.state = unreleased ? member_state::unreleased_partitions : member_state::stable;
    return next;
}

}  // namespace

member_assignment reconcile(const member_assignment& cur, int32_t target_epoch,
                            const partition_map& target, const std::optional<partition_map>& owned,
                            const owned_by_other_fn& owned_by_other) {
    switch (cur.state) {
        case member_state::unrevoked_partitions:
            // Still revoking until a heartbeat lists what it owns without them.
            if (!owned || overlaps(*owned, cur.pending_revocation)) return cur;
            {
                member_assignment released = cur;
                released.pending_revocation.clear();
                return next_assignment(released, std::min(cur.member_epoch + 1, target_epoch),
                                       target_epoch, target, owned, owned_by_other);
            }
        case member_state::unreleased_partitions:
        case member_state::stable:
            if (cur.state == member_state::stable && cur.member_epoch == target_epoch) return cur;
            return next_assignment(cur, cur.member_epoch, target_epoch, target, owned,
                                   owned_by_other);
    }
    return cur;
}

}  // namespace sluice::group::consumer
