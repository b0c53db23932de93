#pragma once

// Crash recovery of partition logs. After an unclean shutdown only the last segment of
// a partition can hold a torn write (a segment is fsynced before the next one is
// created), so the last segment is scanned batch by batch, framing and CRC checked,
// and cut at the first batch that is not whole and valid; indexes are rebuilt from the
// scan. Sealed segments keep their data; an index that is missing or disagrees with
// its data is rebuilt. What recovery finds goes to a recovery_reporter (as LevelDB's
// log::Reader::Reporter) and into a repair_summary for the one log line per partition.
// See docs/formats/segment.md ("Recovery").

#include <atomic>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "log/segment.h"

namespace sluice::log {

class recovery_reporter {
  public:
    virtual ~recovery_reporter() = default;
    // `bytes` bytes from byte `position` of `file` were cut off; the log now ends at
    // log_end_offset.
    virtual void truncated(const fs::path& file, int64_t position, int64_t bytes,
                           offset_t log_end_offset, const std::string& reason) = 0;
    // An index file was missing or disagreed with its data and was rebuilt.
    virtual void index_rebuilt(const fs::path& file, const std::string& reason) = 0;
    // Damage recovery does not repair (inside a sealed segment); the data stays as is.
    virtual void corruption(const fs::path& file, const std::string& reason) = 0;
    // No append-time entry covered offsets [from, to) (the file was missing, damaged, or
    // lost its tail in an OS crash): they got estimates (docs/formats/append-time-index.md).
    virtual void append_times_estimated(const fs::path& /*file*/, offset_t /*from*/,
                                        offset_t /*to*/, const std::string& /*reason*/) {}
};

// A reporter that ignores everything (the summary still records it).
class null_reporter final : public recovery_reporter {
  public:
    void truncated(const fs::path&, int64_t, int64_t, offset_t, const std::string&) override {}
    void index_rebuilt(const fs::path&, const std::string&) override {}
    void corruption(const fs::path&, const std::string&) override {}
};

// Counts events, for the start-up summary; the one line per partition comes from the
// repair_summary, so this reporter does not log.
class counting_reporter final : public recovery_reporter {
  public:
    void truncated(const fs::path&, int64_t, int64_t bytes, offset_t, const std::string&) override {
        ++truncations;
        bytes_truncated += bytes;
    }
    void index_rebuilt(const fs::path&, const std::string&) override { ++indexes_rebuilt; }
    void corruption(const fs::path&, const std::string&) override { ++corruptions; }
    void append_times_estimated(const fs::path&, offset_t, offset_t, const std::string&) override {
        ++append_time_estimates;
    }

    std::atomic<int64_t> truncations{0};
    std::atomic<int64_t> bytes_truncated{0};
    std::atomic<int64_t> indexes_rebuilt{0};
    std::atomic<int64_t> corruptions{0};
    std::atomic<int64_t> append_time_estimates{0};
};

struct repair_summary {
    int64_t bytes_truncated = 0;
    offset_t log_end_offset = 0;
    int indexes_rebuilt = 0;
    int corruptions = 0;
    // Index or append-time files that could not be written back (a full disk, say): the
    // segment serves from the copy in memory, written again at its next save.
    int unsaved = 0;
    std::vector<std::string> notes;  // one per action, for the log line

    bool repaired() const { return !notes.empty(); }
    // Records were cut off or left unreadable: what the log line gives at WARN. Rebuilt
    // indexes and estimated append times lose nothing (INFO, in the start-up summary).
    bool lost_data() const { return bytes_truncated > 0 || corruptions > 0; }
    // What deserves a WARN line of its own.
    bool worth_warning() const { return lost_data() || unsaved > 0; }
    std::string describe() const;
};

// A partition directory's segments and durable log start offset.
struct partition_files {
    std::vector<segment_file_info> segments;  // by base offset
    offset_t log_start = -1;                  // from log-start-offset; -1: none (or ignored)
};

// Lists a partition directory and reads its log-start-offset file. A damaged file is
// reported as corruption, moved aside (log_start_damaged_name) and ignored: the log then
// starts at its first segment, as before any deletion. Then finishes a segment deletion
// a crash interrupted (docs/formats/data-dir.md, "Deleting segments"): segments lying
// wholly below the log start offset (the next one begins at or below it) are removed,
// oldest first, and so are index files left without their data file below the first
// segment. The last segment always stays.
result<partition_files> open_partition_files(const fs::path& dir, recovery_reporter& rep,
                                             repair_summary& sum);

// Opens the last segment of a partition for appending: repairs a torn header of an
// empty segment, loads the indexes (rebuilt when missing or disagreeing), then scans
// the data after the last index entry (all of it when `full`), verifying every batch,
// and cuts the file at the first bad or torn batch. Sets the segment's end offset. Then
// loads its append times (recover_append_times with trust_tail; estimates bounded by
// `prev_time`, the previous segment's last append time or no_timestamp, and `now`). In
// full mode the data and append-time files are fsynced, since all of it is durable from
// now on.
result<void> recover_last_segment(segment& seg, bool full, int32_t interval_bytes, timestamp_ms now,
                                  timestamp_ms prev_time, bool trust_tail, recovery_reporter& rep,
                                  repair_summary& sum);

// (lo, hi) for append-time estimates of one segment: the last append time before it and
// a bound above its own (no_timestamp: unknown). Asked only when some offsets may lack an
// entry; it may load what the estimate needs (the offset index).
using estimate_bounds_fn = std::function<result<std::pair<timestamp_ms, timestamp_ms>>()>;

// Loads a segment's append times (docs/formats/append-time-index.md, "Recovery"): keeps
// the valid entries of its file below data_end, gives every batch no entry covers an
// estimate, and writes back what changed (reported, with a note in `sum`). Reads the
// data from the first uncovered offset (through the offset index when loaded).
// trust_tail: the file was written by a broker that stopped cleanly or only crashed
// itself in this boot of the OS, so every write reached the page cache and appends after
// the last entry were in its millisecond: an undamaged last entry extends to data_end.
result<void> recover_append_times(segment& seg, offset_t data_end, const estimate_bounds_fn& bounds,
                                  bool trust_tail, recovery_reporter& rep, repair_summary& sum);

// The last append time a segment file states without loading it (no_timestamp when it
// cannot tell).
timestamp_ms last_append_time_on_file(const fs::path& dir, offset_t base);

// Loads a sealed segment's indexes, rebuilding them from the data when missing or
// disagreeing. The segment's end offset must be set (the next segment's base).
result<void> ensure_sealed_indexes(segment& seg, int32_t interval_bytes, recovery_reporter& rep,
                                   repair_summary& sum);

// Recovery of every segment of one partition directory after an unclean shutdown.
// same_boot: the broker that wrote it ran in this boot of the OS (a process crash, so
// the page cache kept every write; see recover_append_times).
result<repair_summary> recover_partition(const fs::path& dir, int32_t interval_bytes,
                                         fd_cache& cache, bool same_boot, recovery_reporter& rep);

}  // namespace sluice::log
