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
    // Oldest first, at most producer_batches_kept.
    std::vector<producer_batch> batches;

    const producer_batch* last() const { return batches.empty() ? nullptr : &batches.back(); }
};

struct sequence_check {
    sequence_verdict verdict = sequence_verdict::append;
    producer_batch original;  // duplicate: the batch it repeats
    std::string reason;       // for the answer and the log, when refused
};

class producer_state {
  public:
    // What the batch with this header (producer_id >= 0) is, given the table.
    sequence_check check(const protocol::batch_header& h) const;
    // Records an appended batch whose offsets are [base, base + last_offset_delta],
    // seen at broker time `seen`.
    void apply(const protocol::batch_header& h, offset_t base, timestamp_ms seen);

    // Forgets producers whose last batch lies wholly below the log start (retention,
    // DeleteRecords), as Kafka does; their next batch is then from an unknown producer.
    void evict_below(offset_t log_start);
    // Forgets producers whose last batch came at least expiration_ms before now.
    void expire(timestamp_ms now, int64_t expiration_ms);
    // Forgets one producer when it expired (check() then sees it as unknown).
    void expire_one(int64_t producer_id, timestamp_ms now, int64_t expiration_ms);
    // Forgets every batch at or past `end` (a load that found the log shorter).
    void truncate(offset_t end);

    const std::map<int64_t, producer_entry>& entries() const { return _entries; }
    bool empty() const { return _entries.empty(); }
    size_t memory_bytes() const;

    // The snapshot file's bytes (docs/formats/producer-snapshot.md): the table as of
    // `offset` (every batch below it applied), written at `now`.
    bytes encode(offset_t offset, timestamp_ms now) const;
    // Decodes a snapshot; returns the offset it covers. Errors: corrupt (magic, version,
    // CRC, framing).
    static result<std::pair<producer_state, offset_t>> decode(bytes_view data);

  private:
    std::map<int64_t, producer_entry> _entries;
};

}  // namespace sluice::log
