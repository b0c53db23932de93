#pragma once

// Group state (group/state_store.h) in the shared catalog: classic groups in
// sluice_groups, sluice_group_members and sluice_group_member_protocols, consumer groups
// (KIP-848) in sluice_consumer_groups and sluice_consumer_group_members
// (docs/formats/shared-catalog.md, version 2).

#include <memory>

#include "group/state_store.h"
#include "shared/group_fence.h"
#include "shared/pg_database.h"

namespace sluice::shared {

// Not thread-safe: one caller at a time (the broker's catalog writer). Owns its connection.
class pg_group_store final : public group::state_store {
  public:
    // Connects; the catalog's schema must be in place (ensure_catalog_schema).
    // With a fence, writes are made only for the groups whose coordinator epoch this
    // broker holds (group_fence.h).
    static result<std::unique_ptr<pg_group_store>> open(
        const pg_config& config, std::shared_ptr<group_fence> fence = nullptr);
    pg_group_store(std::unique_ptr<pg_database> db, std::shared_ptr<group_fence> fence)
        : _db(std::move(db)), _fence(std::move(fence)) {}

    result<std::vector<group::stored_group>> load() override;
    result<std::vector<group::stored_consumer_group>> load_consumer() override;
    // One SERIALIZABLE transaction: two brokers that both believe they coordinate a group
    // (while its coordinator moves) cannot interleave their records.
    result<std::set<std::string>> apply(std::span<const group::group_write> writes) override;

  private:
    std::unique_ptr<pg_database> _db;
    std::shared_ptr<group_fence> _fence;
};

}  // namespace sluice::shared
