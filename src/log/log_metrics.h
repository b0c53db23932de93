#pragma once

// Storage's counters in the process's metrics registry (docs/operations.md): fsyncs
// and their latency, journal writes.

#include <chrono>
#include <cstddef>

namespace sluice::log {

// Makes the families known (shown at 0) before their first event.
void declare_metrics();

// An fdatasync or a directory fsync that began at `started` (whatever its outcome):
// sluice_fsync_duration_seconds.
void count_fsync(std::chrono::steady_clock::time_point started);
// A journal sync that wrote `bytes` of entries: sluice_journal_syncs_total,
// sluice_journal_bytes_total.
void count_journal_sync(size_t bytes);

}  // namespace sluice::log
