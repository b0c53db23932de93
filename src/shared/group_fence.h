#pragma once

// Coordinator epochs of groups in the shared catalog's sluice_group_coordinators table
// (docs/shared-mode.md#fencing-group-writes, docs/formats/shared-catalog.md, version 12).
//
// Kafka fences a group's old coordinator with the epoch of the log partition that holds
// the group's records: once another broker leads it, the old one's appends fail. Shared
// mode's group records are rows, so each group has an epoch row instead. A broker takes
// a group's row (epoch + 1, its id) before it reads the group's state from the database,
// in a transaction of its own that commits first; every write of the group's state or
// committed offsets locks the row (SELECT ... FOR SHARE) in the write's transaction and
// is made only if the row still holds the epoch this broker took. So a write queued at
// the old coordinator either commits before the new one took the row (and the new one's
// read, which starts after, sees it) or finds the new epoch and is refused: the caller
// answers NOT_COORDINATOR and forgets the group. A group no broker has taken yet (a new
// group: no row) is taken at epoch 1 by the first write of the broker that made it.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>

#include "common/result.h"
#include "shared/pg_database.h"

namespace sluice::shared {

// The epochs this broker holds, by group. Thread-safe: the cluster poll takes groups, the
// offset writer's stores check them.
class group_fence {
  public:
    // take() connects to `db` at its first call.
    group_fence(int32_t broker_id, pg_config db) : _broker_id(broker_id), _config(std::move(db)) {}
    int32_t broker_id() const { return _broker_id; }

    std::optional<int64_t> held(const std::string& group_id) const;
    // Forgets the epoch: the group's writes from here are refused until it is taken again.
    void drop(const std::string& group_id);

    // One caller at a time (the cluster poll), on a connection of its own. One READ
    // COMMITTED transaction, committed before the caller reads the groups' state: every group the catalog knows of (state, offsets or an epoch row) for which
    // placed_here(group) holds is taken, unless this broker already holds its row at the
    // epoch it remembers (then nothing changes). Returns the groups taken afresh: what
    // this broker had of them in memory is stale.
    result<std::set<std::string>> take(const std::function<bool(const std::string&)>& placed_here);

    // What a write transaction found for its groups.
    struct check {
        std::set<std::string> fenced;            // not held here: their writes are skipped
        std::map<std::string, int64_t> claimed;  // new groups taken at epoch 1
        std::map<std::string, int64_t> seen;     // the epochs held of the fenced ones
    };
    // Inside a write's transaction (any isolation): locks the rows of `groups` and says
    // which this broker no longer holds. Call settle() once the transaction committed.
    result<check> verify(pg_transaction& tx, const std::set<std::string>& groups) const;
    // After the write committed: holds the new groups, forgets the fenced ones.
    void settle(const check& c);

  private:
    const int32_t _broker_id;
    const pg_config _config;
    std::unique_ptr<pg_database> _take_db;  // take()'s
    mutable std::mutex _mu;
    std::map<std::string, int64_t> _held;  // guarded by _mu
};

// A write of groups' records: one SERIALIZABLE transaction that verifies `groups` with
// `fence` (nullptr: no check, as for a transaction coordinator's offsets, which are not a
// group coordinator's writes) and runs `body` with the groups found fenced, whose writes
// it must skip. Returns those groups.
result<std::set<std::string>> fenced_write(
    pg_database& db, group_fence* fence, const std::set<std::string>& groups,
    const std::function<result<void>(pg_transaction&, const std::set<std::string>&)>& body);

// fenced_write of a batch, as the offset and group stores make theirs: `group_of(w)` names
// the group whose epoch write w needs (nullptr: none, w is never skipped), `apply_one(tx,
// w)` makes w. Makes the writes in order, skipping those of fenced groups; returns the
// fenced groups. No writes: no transaction.
template <typename Write, typename GroupOf, typename ApplyOne>
result<std::set<std::string>> fenced_apply(pg_database& db, group_fence* fence,
                                           std::span<const Write> writes, GroupOf group_of,
                                           ApplyOne apply_one) {
    std::set<std::string> groups;
    if (writes.empty()) return groups;
    for (const auto& w : writes)
        if (const std::string* g = group_of(w)) groups.insert(*g);
    return fenced_write(db, fence, groups,
                        [&](pg_transaction& tx, const std::set<std::string>& fenced) {
                            for (const auto& w : writes) {
                                const std::string* g = group_of(w);
                                if (g && fenced.count(*g)) continue;
                                if (auto r = apply_one(tx, w); !r) return r;
                            }
                            return result<void>{};
                        });
}

}  // namespace sluice::shared
