#pragma once

// Idempotent producers' state in one partition, as Kafka's ProducerStateManager keeps
// it: for each producer id its epoch, the time of its last batch, and the sequence and
// offset ranges of its last five batches. check() decides what an incoming batch is
// (the next one, a retry, a gap, a stale epoch, an unknown producer); apply() records an
// appended batch. The partition calls both under its lock, so the check and the offset
// assignment are one step. The table is rebuilt from batch headers on load, from a
// snapshot (docs/formats/producer-snapshot.md) and the batches after it.
//
// Memory: one entry per producer that wrote to the partition within
// producer.id.expiration.ms; at most about 300 bytes each (five batches), nothing for a
// partition that never saw an idempotent batch.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "log/log_types.h"
#include "protocol/record_batch.h"

namespace sluice::log {

// Kafka keeps the last five batches of each producer (a producer has at most five
// requests in flight with idempotence), so any retry of one of them is recognized.
inline constexpr size_t producer_batches_kept = 5;

// A batch's last sequence: sequences wrap from 2^31 - 1 to 0, as in Kafka.
int32_t last_sequence(int32_t base_sequence, int32_t last_offset_delta);
// Whether `next` follows `last` (0 follows INT32_MAX).
bool in_sequence(int32_t last, int32_t next);

struct producer_batch {
    int32_t first_seq = 0;
    int32_t last_seq = 0;
    offset_t first_offset = 0;
    offset_t last_offset = 0;
};

struct producer_entry {
    int64_t producer_id = -1;
    int16_t epoch = -1;
    timestamp_ms last_timestamp = -1;  // the last batch's max_timestamp (DescribeProducers)
    // Broker time of the last batch (of the load, for batches found in the log), which
    // expiry goes by: producer timestamps may lie far in the past (replayed history) and
    // would expire a live producer at once.
    timestamp_ms last_seen = -1;
    // Oldest first, at most producer_batches_kept. Empty for a producer known only from
    // a transaction marker.
    std::vector<producer_batch> batches;
    // Transactions (KIP-98): the first offset of the producer's ongoing transaction in
    // this partition (-1: none), and the coordinator epoch of its last marker.
    offset_t txn_first_offset = -1;
    int32_t coordinator_epoch = -1;

    const producer_batch* last() const { return batches.empty() ? nullptr : &batches.back(); }
};

struct sequence_check {
    sequence_verdict verdict = sequence_verdict::append;
    producer_batch original;  // duplicate: the batch it repeats
    std::string reason;       // for the answer and the log, when refused
};

// A transaction that ended with an ABORT marker: its records lie in
// [first_offset, last_offset] (last_offset: the marker's). Fetch at read_committed hands
// these to clients, which drop the producer's records in the range.
struct aborted_txn {
    int64_t producer_id = -1;
    offset_t first_offset = 0;
    offset_t last_offset = 0;
    bool operator==(const aborted_txn&) const = default;
};

// Whether the batch with this header holds records of one of `aborted`'s transactions,
// as Kafka's consumer decides it: transactional, not a marker, of the producer, at an
// offset from the transaction's first to its ABORT marker.
bool in_aborted(const std::vector<aborted_txn>& aborted, const protocol::batch_header& h);

// What a transaction marker found (producer_state::check_marker / apply_marker).
struct marker_check {
    enum class kind : uint8_t {
        append,
        invalid_epoch,      // INVALID_PRODUCER_EPOCH: older than the producer's epoch
        coordinator_fenced  // TRANSACTION_COORDINATOR_FENCED: an older coordinator epoch
    };
    kind verdict = kind::append;
    std::string reason;
};

class producer_state {
  public:
    // What the batch with this header (producer_id >= 0) is, given the table.
    sequence_check check(const protocol::batch_header& h) const;
    // Records an appended batch whose offsets are [base, base + last_offset_delta],
    // seen at broker time `seen`.
    void apply(const protocol::batch_header& h, offset_t base, timestamp_ms seen);

    // Transaction markers. check_marker: whether a marker of this producer epoch and
    // coordinator epoch may be written (Kafka's checks). apply_marker: records the marker
    // at `offset`, ending the producer's ongoing transaction here; an abort is added to
    // the aborted-transaction index (with first offset = the marker's when no record of
    // the transaction is here, as Kafka does). The marker's epoch becomes the producer's
    // (a bumped epoch starts the sequence anew).
    marker_check check_marker(int64_t producer_id, int16_t epoch, int32_t coordinator_epoch) const;
    void apply_marker(int64_t producer_id, int16_t epoch, bool commit, int32_t coordinator_epoch,
                      offset_t offset, timestamp_ms seen);

    // The first offset of the oldest ongoing transaction (nullopt: none): the last stable
    // offset, unless the high watermark is lower.
    std::optional<offset_t> first_unstable_offset() const;
    // Aborted transactions overlapping [from, to): last_offset >= from, first_offset < to,
    // by marker offset.
    std::vector<aborted_txn> aborted_between(offset_t from, offset_t to) const;
    const std::vector<aborted_txn>& aborted() const { return _aborted; }
    // Ongoing transactions: (first offset, producer id), oldest first.
    const std::set<std::pair<offset_t, int64_t>>& ongoing() const { return _ongoing; }

    // Forgets producers whose last batch lies wholly below the log start (retention,
    // DeleteRecords), as Kafka does; their next batch is then from an unknown producer.
    // A producer with an ongoing transaction stays. Aborted transactions that end below
    // the log start go too.
    void evict_below(offset_t log_start);
    // Forgets the aborted transaction whose ABORT marker, at last_offset, compaction
    // removed (no record of it is left).
    void forget_aborted(int64_t producer_id, offset_t last_offset);
    // Forgets producers whose last batch came at least expiration_ms before now, except
    // those with an ongoing transaction (the coordinator times those out).
    void expire(timestamp_ms now, int64_t expiration_ms);
    // Forgets one producer when it expired (check() then sees it as unknown).
    void expire_one(int64_t producer_id, timestamp_ms now, int64_t expiration_ms);
    // Forgets every batch, transaction start and aborted transaction at or past `end` (a
    // load that found the log shorter).
    void truncate(offset_t end);

    const std::map<int64_t, producer_entry>& entries() const { return _entries; }
    bool empty() const { return _entries.empty(); }
    size_t memory_bytes() const;

    // The snapshot file's bytes (docs/formats/producer-snapshot.md, version 2): the table,
    // ongoing transactions and aborted-transaction index as of
    // `offset` (every batch below it applied), written at `now`.
    bytes encode(offset_t offset, timestamp_ms now) const;
    // Decodes a snapshot; returns the offset it covers. Errors: corrupt (magic, version,
    // CRC, framing).
    static result<std::pair<producer_state, offset_t>> decode(bytes_view data);

  private:
    void rebuild_ongoing();

    std::map<int64_t, producer_entry> _entries;
    std::set<std::pair<offset_t, int64_t>> _ongoing;  // (txn first offset, producer id)
    std::vector<aborted_txn> _aborted;                // by last_offset
};

}  // namespace sluice::log
