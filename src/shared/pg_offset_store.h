#pragma once

// Committed offsets (catalog/offset_store.h) in the shared catalog's sluice_group_offsets
// table (docs/formats/shared-catalog.md, version 2).

#include <memory>

#include "catalog/offset_store.h"
#include "shared/pg_database.h"

namespace sluice::shared {

// Not thread-safe: one caller at a time (the broker's offset writer). Owns its connection.
class pg_offset_store final : public catalog::offset_store {
  public:
    // Connects; the catalog's schema must be in place (ensure_catalog_schema).
    static result<std::unique_ptr<pg_offset_store>> open(const pg_config& config);
    explicit pg_offset_store(std::unique_ptr<pg_database> db) : _db(std::move(db)) {}

    result<std::vector<catalog::stored_offset>> load() override;
    // One SERIALIZABLE transaction (run again on a serialization failure): the check that
    // the topic exists and the write cannot be separated by a topic's deletion.
    result<void> apply(std::span<const catalog::offset_write> writes) override;

  private:
    std::unique_ptr<pg_database> _db;
};

}  // namespace sluice::shared
