#pragma once

// The produce windows' series on GET /metrics (docs/operations.md, shared mode): how many
// windows are between closing and answering, how long a closed window waited for room
// (--shared-windows-in-flight reached) and how long it took to be answered, how windows
// ended, and the appends cancelled behind a failed window (window_pipeline.h).

#include <chrono>
#include <cstddef>

namespace sluice::shared {

// Makes the series, so that they show from the first scrape.
void declare_window_metrics();
// A window closed after waiting `waited` for room; it is in flight until window_answered.
void count_window_closed(std::chrono::steady_clock::duration waited);
// The window closed at `closed` answered its appends: committed (its commit ran) or
// failed (its upload or commit did); `cancelled` of its appends were cancelled.
void count_window_answered(bool committed, std::chrono::steady_clock::time_point closed,
                           size_t cancelled);

}  // namespace sluice::shared
