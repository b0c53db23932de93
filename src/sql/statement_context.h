#pragma once

// What the virtual tables of one session share with the statement running on it: the
// high watermarks the statement sees, and counters of what its scans read.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "common/types.h"

namespace sluice::sql {

// What scans of the topic tables read, for one statement (sluice_last_scan()).
struct scan_stats {
    int64_t partitions_scanned = 0;
    int64_t segments_read = 0;  // distinct segment files a scan read from
    int64_t batches_read = 0;
    int64_t records_read = 0;  // records decoded (not skipped by the offset range)
    int64_t bytes_read = 0;
};

class statement_context {
  public:
    // A statement starts: forget the previous one's snapshot; its counters become
    // last_scan().
    void begin_statement() {
        _hw.clear();
        _last = _current;
        _current = {};
    }
    // The high watermark the running statement sees for a partition: the first call for
    // a partition captures `current`, later ones in the same statement return it, so a
    // self-join sees one consistent cut. Invariant: only acknowledged (durable) offsets
    // below it are ever read.
    offset_t snapshot(const topic_partition& tp, offset_t current) {
        return _hw.try_emplace(tp, current).first->second;
    }
    scan_stats& current_scan() { return _current; }
    // The counters of the previous statement (the one before the running one).
    const scan_stats& last_scan() const { return _last; }

  private:
    std::map<topic_partition, offset_t> _hw;
    scan_stats _current;
    scan_stats _last;
};

}  // namespace sluice::sql
