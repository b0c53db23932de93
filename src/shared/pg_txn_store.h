#pragma once

// Transaction state (txn/state_store.h) in the shared catalog's sluice_txn_metadata,
// sluice_txn_partitions, sluice_txn_groups and sluice_txn_offsets tables
// (docs/formats/shared-catalog.md, version 2; the records' change counter, version 10).

#include <memory>
#include <string>

#include "shared/group_fence.h"
#include "shared/pg_database.h"
#include "txn/state_store.h"

namespace sluice::shared {

// Not thread-safe: one caller at a time (the transaction coordinator). Owns its connection.
class pg_txn_store final : public txn::state_store {
  public:
    // Connects; the catalog's schema must be in place (ensure_catalog_schema). With a
    // fence, put_by_group checks this broker's coordinator epoch of the group.
    static result<std::unique_ptr<pg_txn_store>> open(const pg_config& config,
                                                      std::shared_ptr<group_fence> fence = nullptr);
    pg_txn_store(std::unique_ptr<pg_database> db, std::shared_ptr<group_fence> fence)
        : _db(std::move(db)), _fence(std::move(fence)) {}

    result<std::vector<txn::txn_metadata>> load() override;
    result<std::optional<txn::txn_metadata>> load_one(const std::string& transactional_id) override;
    // Each in one SERIALIZABLE transaction, conditional on the record's version
    // (state_store::put): UPDATE ... WHERE version = the version read. A put of the state
    // CompleteCommit over a record stored as PrepareCommit makes its pending offsets the
    // groups' committed offsets (sluice_group_offsets) in that transaction and announces
    // them (sluice_change_versions 'txn_offsets'): only the one put that wins the version
    // does, so a transaction completed by two coordinators commits its offsets once.
    result<bool> put(const txn::txn_metadata& t) override;
    // put, after locking the group's coordinator epoch row as every group write does
    // (group_fence::verify): errc::fenced, nothing written, when this broker no longer
    // holds it.
    result<bool> put_by_group(const txn::txn_metadata& t, const std::string& group_id) override;
    result<bool> erase(const std::string& transactional_id, int64_t version) override;

  private:
    std::unique_ptr<pg_database> _db;
    std::shared_ptr<group_fence> _fence;
};

}  // namespace sluice::shared
