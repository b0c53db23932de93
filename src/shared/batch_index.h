#pragma once

// The produce commit of shared mode: after a broker uploaded one object holding batches
// of many partitions, one transaction assigns their offsets and records where they lie
// (docs/formats/shared-catalog.md, "The produce commit").

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "shared/pg_database.h"

namespace sluice::shared {

struct batch_append {
    std::string topic_id;  // 32 hex digits
    int32_t partition = 0;
    int32_t record_count = 0;
    uint64_t byte_position = 0;  // in the object
    uint32_t byte_size = 0;
    int64_t max_timestamp_ms = 0;
    // Idempotent producers (producer_id >= 0): the batch's producer fields, checked in the
    // commit against sluice_producer_state as Kafka checks them.
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;
    int32_t base_sequence = -1;
    // Transactions: a batch of a transaction opens it in the partition (sluice_txn_open)
    // until the producer's marker, a control batch (marker 0 ABORT, 1 COMMIT) written with
    // the producer's epoch or a newer one, ends it; an ABORT adds it to sluice_txn_aborted.
    bool transactional = false;
    int8_t marker = -1;
    // LogAppendTime: max_timestamp_ms is the broker's append time, also stamped in the
    // batch's header; the commit raises it to the partition's last append time when that
    // is later (sluice_partitions.last_append_time_ms), so times never go back.
    bool log_append_time = false;
    // The broker's clock when it wrote the batch's window (ms since the epoch): stored as
    // the batch's append time (sluice_batches.append_time_ms, timestamp_broker in SQL),
    // raised like LogAppendTime to the partition's last append time so that it never
    // goes back along a partition. -1: not known (stored as -1).
    int64_t append_time_ms = -1;
};

// What the commit did with one batch.
enum class batch_verdict : uint8_t {
    appended,
    duplicate,         // a retry of one of the producer's last five: its first offsets
    out_of_order,      // a gap in the sequences, or a new epoch not at sequence 0
    invalid_epoch,     // older than the producer's epoch
    unknown_producer,  // (not given today: an unknown producer starts anywhere, as Kafka 4.3)
};

struct batch_outcome {
    batch_verdict verdict = batch_verdict::appended;
    int64_t base_offset = -1;  // appended or duplicate; -1 when refused
    int64_t last_offset = -1;
    std::string reason;            // when refused
    int64_t log_append_time = -1;  // appended LogAppendTime batches: the time stored
    int64_t append_time = -1;      // appended batches: the append time stored
};

struct object_commit {
    std::string object_key;
    uint64_t size = 0;
    int32_t broker_id = 0;
    std::vector<batch_append> batches;  // several may be of one partition, in order
    // > 0: the commit is fenced by the broker's registration (sluice_brokers): it commits
    // nothing (errc::in_use) unless broker_id is still registered as this incarnation with
    // a lease that has not passed. 0: not checked (tools, tests).
    int64_t broker_incarnation = 0;
};

// One transaction (read committed): locks the rows of the partitions concerned in key
// order (so that two brokers' commits over the same partitions queue rather than
// deadlock), checks idempotent batches against their producers' state (the partition's
// row lock serializes that too), gives each accepted batch the offsets after its
// partition's high watermark, inserts the object, the batch rows and the producers'
// state, moves the high watermarks and NOTIFYs commit_channel. Returns what became of
// each batch, in the order given; refused batches stay in the object unreferenced. A
// partition that does not exist fails it all (not_found); a fenced commit (a broker whose
// lease passed, see object_commit::broker_incarnation) fails it all (in_use).
//
// `timings`, when given, gets how long the parts of the transaction took (its last
// attempt's, when it ran again).
struct commit_timings {
    // From the transaction's start to the partitions' rows locked: mostly the wait for
    // other commits that hold them.
    std::chrono::steady_clock::duration lock{};
    // From there to the last statement before COMMIT: reads of producers and open
    // transactions, the inserts, the high watermarks, the NOTIFY.
    std::chrono::steady_clock::duration statements{};
    std::chrono::steady_clock::duration commit{};  // COMMIT
};
result<std::vector<batch_outcome>> commit_object(pg_database& db, const object_commit& commit,
                                                 commit_timings* timings = nullptr);

// The channel commit_object notifies; the payload is "TOPIC_ID:PARTITION:HIGH_WATERMARK"
// lines for the partitions it moved, or empty when they do not fit NOTIFY's 8000 bytes
// (then listeners read every partition they wait on afresh).
inline constexpr const char* commit_channel = "sluice_commits";

// A batch as read from its object made what its sluice_batches row says: the assigned
// base offset written in (the CRC does not cover it), and a LogAppendTime batch whose
// commit raised its time (batch_append::log_append_time) given that time, its CRC
// recomputed. Every reader of stored batches calls it (fetch, compaction).
void restore_batch(uint8_t* batch, size_t size, int64_t base_offset, int64_t max_timestamp_ms);

// Adds a topic and its partitions (empty, offsets from 0).
result<void> create_topic(pg_database& db, const std::string& topic_id, const std::string& name,
                          int32_t partitions);

}  // namespace sluice::shared
