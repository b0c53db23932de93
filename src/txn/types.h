#pragma once

// A transactional id's state as the transaction coordinator keeps it and a state_store
// stores it (docs/formats/catalog.md, table txn_metadata and its children).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.h"

namespace sluice::txn {

// Kafka's transaction states (TransactionState.scala), minus Dead and PrepareEpochFence
// which only live inside Kafka's coordinator while a write is pending.
//   Empty --add--> Ongoing --EndTxn/timeout--> PrepareCommit | PrepareAbort
//   Prepare* --markers durable--> CompleteCommit | CompleteAbort --add--> Ongoing
enum class txn_state : uint8_t {
    empty,
    ongoing,
    prepare_commit,
    prepare_abort,
    complete_commit,
    complete_abort,
};
std::string_view state_name(txn_state s);  // Kafka's names: "Ongoing", "PrepareCommit", ...
std::optional<txn_state> parse_state(std::string_view s);
inline bool is_prepare(txn_state s) {
    return s == txn_state::prepare_commit || s == txn_state::prepare_abort;
}

// An offset committed inside a transaction (TxnOffsetCommit): pending until the
// transaction commits (then it becomes the group's committed offset) or aborts (dropped).
struct pending_offset {
    std::string group_id;
    topic_partition tp;
    int64_t offset = -1;
    int32_t leader_epoch = -1;
    std::optional<std::string> metadata;
    int64_t commit_ms = 0;
    bool operator==(const pending_offset&) const = default;
};

// The producer epoch at which an epoch is exhausted: Kafka rotates the producer id
// rather than reach Short.MAX_VALUE (TransactionMetadata.isEpochExhausted), so that the
// markers of the last transaction can still carry a bumped epoch.
inline constexpr int16_t max_epoch = INT16_MAX;
inline bool epoch_exhausted(int16_t e) {
    return e >= max_epoch - 1;
}

struct txn_metadata {
    std::string transactional_id;
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;
    // KIP-360: the id and epoch before the last bump, so that a retried InitProducerId or
    // (TV2) EndTxn is recognised instead of fencing its own producer. -1 when none.
    int64_t last_producer_id = -1;
    int16_t last_producer_epoch = -1;
    // TV2, while a transaction whose epoch is exhausted ends: the producer id it moves
    // to once the markers (with the old id) are durable. -1 otherwise.
    int64_t next_producer_id = -1;
    int32_t timeout_ms = 0;
    txn_state state = txn_state::empty;
    // Whether the current (or last) transaction ends with EndTxn v5+ (transaction
    // version 2: the epoch is bumped at every end).
    bool tv2 = false;
    std::vector<topic_partition> partitions;  // sorted, unique
    std::vector<std::string> groups;          // sorted, unique (AddOffsetsToTxn)
    std::vector<pending_offset> offsets;      // TxnOffsetCommit, latest per (group, tp)
    int64_t start_ms = -1;                    // wall clock when the transaction became Ongoing
    int64_t update_ms = 0;                    // wall clock of the last change
    // The stored record's change counter (shared mode; 0: not stored yet). A write made
    // from this record succeeds only while the stored one still has this version
    // (state_store::put), and stores version + 1.
    int64_t version = 0;
    bool operator==(const txn_metadata&) const = default;

    bool has_partition(const topic_partition& tp) const;
    bool has_group(const std::string& g) const;
    void add_partition(const topic_partition& tp);
    void add_group(const std::string& g);
    void put_offset(pending_offset o);
};

}  // namespace sluice::txn
