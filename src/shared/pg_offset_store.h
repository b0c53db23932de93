#pragma once

// Committed offsets (catalog/offset_store.h) in the shared catalog's sluice_group_offsets
// table (docs/formats/shared-catalog.md, version 2).

#include <memory>

#include "catalog/offset_store.h"
#include "shared/group_fence.h"
#include "shared/pg_database.h"

namespace sluice::shared {

// Not thread-safe: one caller at a time (the broker's offset writer). Owns its connection.
class pg_offset_store final : public catalog::offset_store {
  public:
    // Connects; the catalog's schema must be in place (ensure_catalog_schema).
    // With a fence, the group coordinator's writes (offset_write::by_coordinator) are
    // made only for the groups whose coordinator epoch this broker holds (group_fence.h).
    static result<std::unique_ptr<pg_offset_store>> open(
        const pg_config& config, std::shared_ptr<group_fence> fence = nullptr);
    pg_offset_store(std::unique_ptr<pg_database> db, std::shared_ptr<group_fence> fence)
        : _db(std::move(db)), _fence(std::move(fence)) {}

    result<std::vector<catalog::stored_offset>> load() override;
    // One SERIALIZABLE transaction (run again on a serialization failure): the check that
    // the topic exists and the write cannot be separated by a topic's deletion, nor the
    // fence's check by another broker taking the group.
    result<catalog::fenced_groups> apply(std::span<const catalog::offset_write> writes) override;

  private:
    std::unique_ptr<pg_database> _db;
    std::shared_ptr<group_fence> _fence;
};

}  // namespace sluice::shared
