#pragma once

// Share-partition state of share groups (group/share/) in the catalog file's
// share_partitions table (docs/formats/catalog.md, schema version 10).

#include <filesystem>
#include <memory>
#include <vector>

#include "common/result.h"
#include "group/share/coordinator.h"

namespace sluice::catalog {

namespace detail {
class db;
}

// Not thread-safe: one thread at a time (the broker's loop thread).
class share_store final : public group::share::partition_store {
  public:
    // Opens another connection to a catalog file that catalog::open() has already
    // created and migrated.
    static result<std::unique_ptr<share_store>> open(const std::filesystem::path& path);
    share_store(const share_store&) = delete;
    share_store& operator=(const share_store&) = delete;
    ~share_store() override;

    result<std::vector<group::share::stored_share_partition>> load(
        const std::string& group) override;
    // One row, committed (synchronous = FULL) before it returns.
    result<void> save(const std::string& group, const group::share::tp& p,
                      const group::share::share_partition& s) override;
    // The rows of these partitions of the group, deleted in one transaction.
    result<void> erase(const std::string& group,
                       const std::vector<group::share::tp>& parts) override;

  private:
    explicit share_store(std::unique_ptr<detail::db> d);
    std::unique_ptr<detail::db> _db;
};

}  // namespace sluice::catalog
