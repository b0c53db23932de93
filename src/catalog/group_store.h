#pragma once

// The group coordinator's durable state (group/state_store.h) in the catalog file's
// group_metadata, group_members and group_member_protocols tables (schema version 6), and
// consumer groups (KIP-848) in consumer_groups and consumer_group_members (version 8);
// docs/formats/catalog.md.

#include <filesystem>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "group/state_store.h"

namespace sluice::catalog {

namespace detail {
class db;
}

// Not thread-safe: one thread at a time (the broker's catalog writer).
class group_store final : public group::state_store {
  public:
    // Opens another connection to a catalog file that catalog::open() has already
    // created and migrated.
    static result<std::unique_ptr<group_store>> open(const std::filesystem::path& path);
    group_store(const group_store&) = delete;
    group_store& operator=(const group_store&) = delete;
    ~group_store() override;

    result<std::vector<group::stored_group>> load() override;
    result<std::vector<group::stored_consumer_group>> load_consumer() override;
    result<std::set<std::string>> apply(std::span<const group::group_write> writes) override;

  private:
    explicit group_store(std::unique_ptr<detail::db> d);
    std::unique_ptr<detail::db> _db;
};

}  // namespace sluice::catalog
