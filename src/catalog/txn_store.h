#pragma once

// The transaction coordinator's durable state (txn/state_store.h) in the catalog file's
// txn_metadata, txn_partitions, txn_groups and txn_offsets tables
// (docs/formats/catalog.md, schema version 8).

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "txn/state_store.h"

namespace sluice::catalog {

namespace detail {
class db;
}

// Not thread-safe: one thread at a time (the broker's loop thread).
class txn_store final : public txn::state_store {
  public:
    // Opens another connection to a catalog file that catalog::open() has already
    // created and migrated.
    static result<std::unique_ptr<txn_store>> open(const std::filesystem::path& path);
    txn_store(const txn_store&) = delete;
    txn_store& operator=(const txn_store&) = delete;
    ~txn_store() override;

    result<std::vector<txn::txn_metadata>> load() override;
    // Unconditional (one writer): always true once stored.
    result<bool> put(const txn::txn_metadata& t) override;
    result<bool> erase(const std::string& transactional_id, int64_t version) override;

  private:
    explicit txn_store(std::unique_ptr<detail::db> d);
    result<void> erase_rows(const std::string& id);
    std::unique_ptr<detail::db> _db;
};

}  // namespace sluice::catalog
