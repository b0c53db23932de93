#pragma once

// Reads one partition's records in offset order over [start, end) through the
// partition-log interface (partition_store::read), whatever stores the partition: what
// SQL scans use in shared mode, where partitions are batches in objects
// (shared/shared_log.h). Whole batches come in reads of read_chunk_bytes; control
// batches (transaction markers) and the records of aborted transactions are never
// returned, as a READ_COMMITTED consumer sees the partition. Records that retention or
// DeleteRecords removed meanwhile are skipped. The current batch's append time is the
// store's (read_result::append_times: shared mode's batch index; record_cursor reads
// those of a local log).

#include <cstdint>
#include <optional>
#include <vector>

#include "common/result.h"
#include "log/log_types.h"
#include "log/partition_store.h"
#include "protocol/record_reader.h"

namespace sluice::log {

class store_cursor {
  public:
    static constexpr size_t read_chunk_bytes = 1 << 20;

    // What the reads did, added up over every range this cursor read.
    struct counters {
        int64_t batches_read = 0;  // batches holding at least one record of a range
        int64_t bytes_read = 0;
        int64_t records_read = 0;
    };

    // Reads `log` over [start, end) from now on (end at or below its last stable
    // offset). The log must outlive the reading. Errors: as aborted_transactions.
    result<void> open(const partition_store* log, offset_t start, offset_t end);
    void close();
    bool is_open() const { return _log != nullptr; }

    // The next record of the range into record(): false at its end. Errors: the
    // partition's (not_found: its topic was deleted), corrupt.
    result<bool> next();
    // next() counted, for count(*): how many records the range has next, nullopt at its
    // end. A batch wholly in the range is counted from its header (its records are neither
    // decompressed nor decoded), one the range cuts record by record. Errors: as next().
    result<std::optional<int64_t>> next_count();
    const protocol::record_ref& record() const { return _rec; }
    const protocol::batch_header& batch() const { return _header; }
    // When the broker appended the current record's batch (ms since the epoch); nullopt
    // when the store did not say.
    std::optional<timestamp_ms> append_time() const {
        return _append_time >= 0 ? std::optional(_append_time) : std::nullopt;
    }

    counters& stats() { return _stats; }
    // Every offset below it was read or skipped (past the range's end once next() said
    // false at its end; short of it when a read of the partition found nothing more).
    offset_t read_up_to() const { return _next_read; }

  private:
    result<bool> next_batch();
    result<bool> seek_batch();
    result<void> open_records();
    result<bool> read_more();

    const partition_store* _log = nullptr;
    offset_t _start = 0;
    offset_t _end = 0;
    offset_t _next_read = 0;
    bytes _buf;
    size_t _at = 0;                    // the next batch's position in _buf
    size_t _batch_at = 0;              // the current batch's
    std::vector<timestamp_ms> _times;  // the append times of _buf's batches, in order
    size_t _batch_index = 0;           // the next batch's index in _times
    timestamp_ms _append_time = -1;    // the current batch's
    bytes _plain;                      // a compressed batch's records, decompressed
    protocol::batch_header _header;
    std::optional<protocol::record_reader> _records;
    protocol::record_ref _rec;
    std::vector<aborted_txn> _aborted;
    counters _stats;
};

}  // namespace sluice::log
