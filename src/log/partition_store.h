#pragma once

// What the broker's handlers, the SQL virtual tables and expansions use of one
// partition, whatever stores it (DESIGN.md "Storage"): validated batches appended with
// the idempotent producer check, whole batches read from an offset, the offsets that
// bound what a reader sees, lookups by timestamp and the aborted transactions of a
// range. Two implementations:
//   - log::partition_log (partition_log.h): segments on the local disk, single-node
//     mode, the default;
//   - shared::shared_partition (shared/shared_partition.h): batches in objects of an
//     S3-compatible store, offsets and the batch index in PostgreSQL (shared mode).
//
// Offsets: log start <= last stable offset <= high watermark <= log end. Reads see up to
// the high watermark (the last stable offset when `committed`).
//
// Threading: every method may be called from any thread. An append's completion runs on
// the caller's thread (local: before append returns) or on the implementation's own
// thread (shared: after the database commit); it must not block.
//
// Not here (each implementation has its own): transaction markers, DeleteRecords,
// DescribeProducers' producer table; local-only: broker append times and Fetch's
// zero-copy file slices.

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "log/log_types.h"
#include "log/producer_state.h"
#include "protocol/record_batch.h"

namespace sluice::log {

class partition_store {
  public:
    // An append's outcome: offsets assigned (or the first append's for a duplicate, or
    // the verdict that refused it); errors as the implementation says.
    using append_done = std::function<void(result<append_info>)>;

    partition_store() = default;
    partition_store(const partition_store&) = delete;
    partition_store& operator=(const partition_store&) = delete;

    virtual topic_partition id() const = 0;

    // `payload` holds the batches protocol::validate_batches returned (`batches`); it is
    // read (and may be rewritten: base offsets) during the call only. Offsets are
    // assigned after the log end; an idempotent batch is checked against its producer's
    // sequences first. `done` runs once the batches are readable: local, at once (its
    // durability is the log manager's when_durable); shared, once they are in the object
    // store and committed in the database (so durable).
    virtual void submit_append(std::span<uint8_t> payload,
                               const std::vector<protocol::validated_batch>& batches,
                               timestamp_ms now, append_done done) = 0;

    // Whole batches from the one holding `offset`, below the high watermark (the last
    // stable offset when `committed`), within max_bytes (the first batch regardless when
    // min_one). offset at or past that bound: empty. Outside [log start, log end]:
    // out_of_range.
    virtual result<read_result> read(offset_t offset, size_t max_bytes, bool min_one,
                                     bool committed = false) const = 0;

    virtual offset_t high_watermark() const = 0;  // first offset not readable
    virtual offset_t log_end_offset() const = 0;  // next offset to assign
    // First offset of the oldest ongoing transaction, or the high watermark.
    virtual offset_t last_stable_offset() const = 0;
    virtual offset_t log_start_offset() const = 0;  // ListOffsets EARLIEST

    // The aborted transactions with records in [from, to), by marker offset.
    virtual result<std::vector<aborted_txn>> aborted_transactions(offset_t from,
                                                                  offset_t to) const = 0;
    // First record at or below the high watermark, at or above the log start, with
    // timestamp >= ts.
    virtual result<std::optional<offset_and_time>> offset_for_timestamp(timestamp_ms ts) const = 0;
    // The (first) record with the largest timestamp, in [log start, high watermark).
    virtual result<std::optional<offset_and_time>> max_timestamp_offset() const = 0;

  protected:
    ~partition_store() = default;  // owners hold the implementation, never this
};

}  // namespace sluice::log
