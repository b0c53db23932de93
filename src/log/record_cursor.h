#pragma once

// Reads one partition's records in offset order over [start, end), for readers on
// other threads than the event loop (SQL scans, expansions): whole batches through one
// reused buffer in large preads, records decoded in place, and each record's broker
// append time only when asked for. No partition lock is held during the reads.

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "common/result.h"
#include "log/log_types.h"
#include "log/producer_state.h"
#include "protocol/record_reader.h"

namespace sluice::log {

class partition_log;
class file;

class record_cursor {
  public:
    // One read: large enough that a scan is a stream of big sequential reads, small
    // enough that reading a few records costs little.
    static constexpr size_t read_chunk_bytes = 1 << 20;

    // What the reads did, added up over every range this cursor read.
    struct counters {
        int64_t segments_read = 0;  // distinct data files read from, one after another
        int64_t batches_read = 0;   // batches holding at least one record of a range
        int64_t bytes_read = 0;
        int64_t records_read = 0;
    };

    // Reads `log` over [start, end) from now on. The log must outlive the reading.
    // Control batches (transaction markers) are never returned.
    void open(const partition_log* log, offset_t start, offset_t end);
    // The same as a READ_COMMITTED consumer sees it: also skips the records of aborted
    // transactions (the caller keeps `end` at or below the last stable offset).
    // Errors: as partition_log::aborted_transactions.
    result<void> open_committed(const partition_log* log, offset_t start, offset_t end);
    // Forgets the range (the buffer stays, for the next one: a range of the same log that
    // it holds is read from it).
    void close();
    bool is_open() const { return _log != nullptr; }

    // The next record of the range into record(): false at its end. Records that
    // retention or DeleteRecords removed meanwhile are skipped; a compressed batch is
    // decompressed once, when its first record is asked for. Errors: io_error, corrupt
    // (malformed records, or a batch that does not decompress), not_found (the topic was
    // deleted).
    result<bool> next();
    const protocol::record_ref& record() const { return _rec; }
    // Instead of next(), for a count: how many of the range's records the next batch holds
    // (never 0: nullopt at the range's end, and then is_open() is false), skipping the same
    // batches and records as next(). A batch wholly in the range is counted from its
    // header, without decompressing or decoding it; one the range cuts is decoded.
    // Errors: as next().
    result<std::optional<int64_t>> next_count();
    // The batch holding record().
    const protocol::batch_header& batch() const { return _header; }
    // record()'s broker append time; the first call reads the append times of the
    // whole range.
    result<timestamp_ms> append_time();
    // Where the range ends, and the first offset not read yet.
    offset_t end() const { return _end; }
    offset_t next_offset() const { return _next_record; }

    counters& stats() { return _stats; }

  private:
    static constexpr size_t npos = static_cast<size_t>(-1);

    result<bool> read_chunk();
    // The next batch holding records of the range into _header; then open_records()
    // decodes it (next_batch() does both).
    result<bool> seek_batch();
    result<void> open_records();
    result<bool> next_batch();
    // Where in _buf the batch to read `start` from begins, when the buffer holds it
    // whole; npos when it must be read.
    size_t find_buffered(offset_t start) const;

    const partition_log* _log = nullptr;
    // The log _buf was read from: a range opened on it again starts from the buffer when
    // the buffer holds it (point lookups of a join read a batch once, not once a row).
    const partition_log* _buf_log = nullptr;
    offset_t _start = 0;
    offset_t _end = 0;
    offset_t _next_read = 0;    // where the next read starts
    offset_t _next_record = 0;  // after the last record returned
    bytes _buf;
    size_t _buf_used = 0;  // bytes of _buf holding data
    size_t _batch_at = 0;  // position of the current batch in _buf
    const file* _last_file = nullptr;
    protocol::batch_header _header;
    bool _in_batch = false;   // _batch_at is the batch last read
    bytes _plain;             // a compressed batch's records, decompressed
    uint64_t _buf_reads = 0;  // reads into _buf so far
    // The batch _plain holds: (_buf_reads when read, its position in _buf).
    std::pair<uint64_t, size_t> _plain_of{0, npos};
    std::optional<protocol::record_reader> _records;
    protocol::record_ref _rec;
    bool _rec_pending = false;          // _rec was read but is past the range: not returned yet
    std::vector<aborted_txn> _aborted;  // of the range (open_committed), by marker offset
    std::optional<std::vector<append_time_run>> _times;
    size_t _time_at = 0;
    counters _stats;
};

}  // namespace sluice::log
