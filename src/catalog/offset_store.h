#pragma once

// Committed offsets of consumer groups. The group coordinator keeps the live copy in
// memory; a store is what survives a restart. Implementations: local_offset_store (the
// catalog file's group_offsets table, docs/formats/catalog.md) and shared::pg_offset_store
// (the shared catalog, docs/formats/shared-catalog.md).

#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace sluice::catalog {

namespace detail {
class db;
}

struct stored_offset {
    std::string group_id;
    std::string topic;
    int32_t partition = 0;
    int64_t offset = -1;
    int32_t leader_epoch = -1;
    std::optional<std::string> metadata;
    int64_t commit_ms = 0;
    int64_t expire_ms = -1;  // -1: expires by the broker's retention rule
};

struct offset_write {
    enum class kind : uint8_t {
        commit,              // insert or replace the row
        erase,               // delete group_id/topic/partition
        erase_if_unchanged,  // delete it only if its commit_ms is still row.commit_ms
        erase_group,         // delete every row of group_id
    };
    kind op = kind::commit;
    stored_offset row;
    // A write of the group's coordinator, fenced in shared mode by the group's coordinator
    // epoch (shared/group_fence.h); false for a transaction coordinator's offsets, which
    // its own record's version orders.
    bool by_coordinator = true;
};

// The groups whose writes a store refused because this broker no longer coordinates them
// (shared mode's fencing; the embedded catalog never refuses one). Their writes were
// skipped; the others' were made.
using fenced_groups = std::set<std::string>;

// Where committed offsets are kept. Not thread-safe: one caller at a time (the broker's
// offset writer).
class offset_store {
  public:
    virtual ~offset_store() = default;
    // Every stored offset, at start-up.
    virtual result<std::vector<stored_offset>> load() = 0;
    // All writes in one transaction, in order, durable when it returns. A commit for a
    // topic the catalog no longer has is dropped: a topic deleted while the commit was
    // queued leaves no offsets behind.
    virtual result<fenced_groups> apply(std::span<const offset_write> writes) = 0;
};

// In the catalog file.
class local_offset_store final : public offset_store {
  public:
    // Opens a second connection to a catalog file that catalog::open() has already
    // created and migrated.
    static result<std::unique_ptr<local_offset_store>> open(const std::filesystem::path& path);
    local_offset_store(const local_offset_store&) = delete;
    local_offset_store& operator=(const local_offset_store&) = delete;
    ~local_offset_store() override;

    result<std::vector<stored_offset>> load() override;
    result<fenced_groups> apply(std::span<const offset_write> writes) override;

  private:
    explicit local_offset_store(std::unique_ptr<detail::db> d);
    std::unique_ptr<detail::db> _db;
};

}  // namespace sluice::catalog
