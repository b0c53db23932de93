#pragma once

// Durable transaction state: every transactional id's producer id and epoch, its
// transaction's state, partitions, groups and pending offsets. The coordinator decides
// what to write and when (before each answer that depends on it); a store only keeps it.
// Implementations: catalog::txn_store (the embedded catalog, docs/formats/catalog.md,
// schema version 8); the shared mode keeps the same records in its database.

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "txn/types.h"

namespace sluice::txn {

// Not thread-safe: one caller at a time (the coordinator, on the broker's loop thread).
class state_store {
  public:
    virtual ~state_store() = default;
    // Every stored transactional id, at start-up.
    virtual result<std::vector<txn_metadata>> load() = 0;
    // One id's record (nullopt: none stored): shared mode's coordinators, which share the
    // store with the other brokers', read an id afresh before they act on it.
    virtual result<std::optional<txn_metadata>> load_one(const std::string& transactional_id) {
        auto all = load();
        if (!all) return all.err();
        for (auto& t : *all)
            if (t.transactional_id == transactional_id) return std::optional(std::move(t));
        return std::optional<txn_metadata>{};
    }
    // Replaces the id's whole record (partitions, groups and offsets too) in one
    // transaction, durable when it returns, if the stored record is still the one t was
    // made from: t.version is the version read (0: none was stored), and the record is
    // stored with version t.version + 1. false, writing nothing, when another writer
    // changed (or created, or erased) the record since: the caller reads it again and
    // decides again. The embedded catalog has one writer (its broker's coordinator) and
    // does not check.
    // A put that moves a record from PrepareCommit to CompleteCommit may also make the
    // pending offsets the groups' committed offsets in the same transaction (shared mode:
    // then however many coordinators complete one transaction, its offsets land once).
    virtual result<bool> put(const txn_metadata& t) = 0;
    // put, made by the coordinator of `group_id` for a TxnOffsetCommit. Shared mode makes
    // it only while this broker still holds the group's coordinator epoch
    // (shared/group_fence.h), and otherwise writes nothing and fails with errc::fenced.
    virtual result<bool> put_by_group(const txn_metadata& t, const std::string& group_id) {
        (void)group_id;
        return put(t);
    }
    // Erases the id's record if it is still at `version`; false otherwise, as put.
    virtual result<bool> erase(const std::string& transactional_id, int64_t version) = 0;
};

}  // namespace sluice::txn
