#pragma once

// What a compaction pass keeps of a partition's records (Kafka's log cleaner rules), one
// piece of code for single-node mode's cleaner (partition_log_compaction.cc) and shared
// mode's compaction job (shared/maintenance/compact.cc):
//   - a keyed record goes when a later record of its key lies in the dirty part;
//   - a tombstone (null value) goes once an earlier pass has seen it (it lies below the
//     dirty start, in the clean part) and delete.retention.ms passed since its time;
//   - aborted transactions' batches go whole; a transaction marker stays while its
//     transaction has a record left, then gets its delete horizon (KIP-534) and goes at
//     the first pass after it (an ABORT marker with its aborted-transaction entry);
//   - batches named in producer_last (each idempotent producer's last batch, which
//     single-node mode rebuilds its producer state from) stay whole.
// A pass calls note_latest() for every batch of the dirty part in offset order, then
// filter() for every batch of the part it rewrites, in offset order.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "log/producer_state.h"
#include "protocol/record_batch.h"

namespace sluice::log {

class record_selector {
  public:
    struct inputs {
        offset_t log_start = 0;
        offset_t dirty_start = 0;  // below it: records an earlier pass has seen
        std::set<offset_t> producer_last;
        std::vector<aborted_txn> aborted;
        int64_t delete_retention_ms = 0;
        timestamp_ms now = 0;
    };

    explicit record_selector(inputs in) : _in(std::move(in)) {}

    // Notes the latest offset of each key in one batch (records at or past dirty_start;
    // markers and aborted batches supersede nothing).
    void note_latest(const protocol::batch_header& h, bytes_view batch);

    // What filter() did with one batch.
    struct verdict {
        int64_t removed = 0;   // records dropped
        bool changed = false;  // kept but rewritten (a marker's delete horizon)
    };
    // Appends what stays of the batch to `out` (nothing when nothing stays).
    result<verdict> filter(const protocol::batch_header& h, bytes_view batch, bytes& out);

    // The ABORT markers filter() dropped (producer, marker offset): their aborted-
    // transaction entries go with them.
    const std::vector<std::pair<int64_t, offset_t>>& dropped_aborts() const {
        return _dropped_aborts;
    }
    const inputs& settings() const { return _in; }

  private:
    result<verdict> keep_marker(const protocol::batch_header& h, bytes_view batch, bytes& out);

    inputs _in;
    std::unordered_map<std::string, offset_t> _latest;  // key -> latest offset
    // Per producer, whether the transaction being read keeps a record.
    std::map<int64_t, bool> _txn_kept;
    std::vector<std::pair<int64_t, offset_t>> _dropped_aborts;
};

// The time a record counts as written: the broker's on LogAppendTime batches.
timestamp_ms record_time(const protocol::batch_header& h, const protocol::record_view& r);

}  // namespace sluice::log
