#pragma once

// Transaction state (txn/state_store.h) in the shared catalog's sluice_txn_metadata,
// sluice_txn_partitions, sluice_txn_groups and sluice_txn_offsets tables
// (docs/formats/shared-catalog.md, version 2; the records' change counter, version 10).

#include <memory>
#include <string>

#include "shared/pg_database.h"
#include "txn/state_store.h"

namespace sluice::shared {

// Not thread-safe: one caller at a time (the transaction coordinator). Owns its connection.
class pg_txn_store final : public txn::state_store {
  public:
    // Connects; the catalog's schema must be in place (ensure_catalog_schema).
    static result<std::unique_ptr<pg_txn_store>> open(const pg_config& config);
    explicit pg_txn_store(std::unique_ptr<pg_database> db) : _db(std::move(db)) {}

    result<std::vector<txn::txn_metadata>> load() override;
    result<std::optional<txn::txn_metadata>> load_one(const std::string& transactional_id) override;
    // Each in one SERIALIZABLE transaction, conditional on the record's version
    // (state_store::put): UPDATE ... WHERE version = the version read.
    result<bool> put(const txn::txn_metadata& t) override;
    result<bool> erase(const std::string& transactional_id, int64_t version) override;

  private:
    std::unique_ptr<pg_database> _db;
};

}  // namespace sluice::shared
