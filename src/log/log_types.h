#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/types.h"
#include "protocol/record_batch.h"

namespace sluice::log {

// The catalog's id of a topic incarnation: a topic deleted and created again under the
// same name has another, so the journal never replays one's records into the other.
using topic_id = std::array<uint8_t, 16>;

// Per-topic settings, taken from the topic's configs.
struct log_config {
    int64_t segment_bytes = 1LL << 30;            // roll when the active segment would exceed this
    int64_t segment_ms = 7LL * 24 * 3600 * 1000;  // roll when the active segment is older
    // Kafka's message.max.bytes default: 1 MiB and a batch header's 12 bytes of log overhead.
    size_t max_message_bytes = (1 << 20) + 12;  // used by the caller for validation; kept here
    protocol::timestamp_type timestamp_type = protocol::timestamp_type::create_time;
    // CreateTime bounds around the broker's clock (produce checks them, as Kafka 4.x).
    int64_t timestamp_before_max_ms = std::numeric_limits<int64_t>::max();
    int64_t timestamp_after_max_ms = 3600LL * 1000;
    int32_t index_interval_bytes = 4096;  // sparse index density
    // Retention (log_manager::enforce_retention), read afresh at every pass.
    bool delete_enabled = true;                     // cleanup.policy contains "delete"
    int64_t retention_ms = 7LL * 24 * 3600 * 1000;  // -1: no time limit
    int64_t retention_bytes = -1;                   // per partition; -1: no size limit
    // Compaction (log_manager::enforce_compaction; docs/design/compaction-status.md).
    bool compact = false;  // cleanup.policy contains "compact"; produce then requires keys
    int64_t min_compaction_lag_ms = 0;                 // newer records stay uncompacted
    int64_t max_compaction_lag_ms = INT64_MAX;         // dirty records older: clean anyway
    double min_cleanable_dirty_ratio = 0.5;            // dirty bytes / cleanable bytes
    int64_t delete_retention_ms = 24LL * 3600 * 1000;  // tombstones kept this long
    // compression.type: the codec stored batches get (recompressed on append when the
    // producer's differs); nullopt for 'producer'. The level: compression.<codec>.level.
    std::optional<protocol::compression> compression;
    std::optional<int> compression_level;
    // Not a setting: the topic's catalog id, written with its journal entries.
    topic_id id{};
};

// What the producer-state check found for an idempotent batch (producer_state.h).
enum class sequence_verdict : uint8_t {
    append,            // the next batch of the producer (or its first): append it
    duplicate,         // a retry of one of the last five: answer with its first offsets
    out_of_order,      // OUT_OF_ORDER_SEQUENCE_NUMBER: a gap, or a new epoch not at 0
    invalid_epoch,     // INVALID_PRODUCER_EPOCH: older than the producer's epoch
    unknown_producer,  // UNKNOWN_PRODUCER_ID: not known here and not at sequence 0
    // Transaction markers only (partition_log::write_marker):
    // TRANSACTION_COORDINATOR_FENCED, a marker from an older coordinator epoch.
    coordinator_fenced
};

struct append_info {
    // Not append: nothing was appended; duplicate: the offsets are the first append's.
    sequence_verdict verdict = sequence_verdict::append;
    std::string reason;  // why a batch was refused
    offset_t base_offset = -1;
    offset_t last_offset = -1;
    timestamp_ms log_append_time = -1;  // -1 for CreateTime topics
    offset_t log_start_offset = 0;
};

struct read_result {
    bytes data;  // whole batches, concatenated, as stored
    offset_t high_watermark = 0;
    offset_t last_stable_offset = 0;
    offset_t log_start_offset = 0;
    offset_t log_end_offset = 0;
    // Each batch's append time, in the order of the batches in data (-1: not known), from
    // a store that keeps it with the batches (shared mode's batch index); empty from a
    // local log, whose append times are partition_log::append_times.
    std::vector<timestamp_ms> append_times;
};

// A run of records the broker appended at one time: those from first_offset up to the
// next run's first offset (partition_log::append_times).
struct append_time_run {
    offset_t first_offset = 0;
    timestamp_ms time = 0;  // broker clock, ms since the epoch; never decreases
    bool operator==(const append_time_run&) const = default;
};

struct offset_and_time {
    offset_t offset = -1;
    timestamp_ms timestamp = -1;
    auto operator<=>(const offset_and_time&) const = default;
};

}  // namespace sluice::log
