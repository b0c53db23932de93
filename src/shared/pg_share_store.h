#pragma once

// Share-partition state of share groups (group/share/) in the shared catalog's
// sluice_share_partitions and sluice_share_acquired tables (docs/formats/shared-catalog.md,
// version 7). Unlike the SQLite catalog's share_store it keeps the acquisition locks (the
// member and the lock's deadline, in wall-clock milliseconds), so that a share-partition
// served by another broker after a move keeps what was handed out until its lock lapses.

#include <memory>
#include <string>
#include <vector>

#include "group/share/coordinator.h"
#include "shared/pg_database.h"

namespace sluice::shared {

// Owns a connection, for one caller at a time off the reader threads (tests, tools);
// calls made in the shared log's reader jobs (every share-partition read and change of
// the broker's share groups, broker::share_work_queue) use that reader thread's
// connection instead (shared_log::reader_database), so they run side by side.
class pg_share_store final : public group::share::partition_store {
  public:
    // Connects; the catalog's schema must be in place (ensure_catalog_schema).
    static result<std::unique_ptr<pg_share_store>> open(const pg_config& config);
    explicit pg_share_store(std::unique_ptr<pg_database> db) : _db(std::move(db)) {}

    result<std::vector<group::share::stored_share_partition>> load(
        const std::string& group) override;
    // Each in one SERIALIZABLE transaction.
    result<void> save(const std::string& group, const group::share::tp& p,
                      const group::share::share_partition& s) override;
    result<void> erase(const std::string& group,
                       const std::vector<group::share::tp>& parts) override;
    bool shared() const override { return true; }
    // SERIALIZABLE, run again after a serialization failure: two brokers changing the
    // same share-partition at once never both succeed on the same state.
    result<void> update(const std::string& group, const group::share::tp& p,
                        const update_fn& fn) override;

  private:
    // The calling thread's connection: a reader thread's own, else _db.
    pg_database& db();

    std::unique_ptr<pg_database> _db;
};

}  // namespace sluice::shared
