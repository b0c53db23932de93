#pragma once

// The produce windows' series on GET /metrics (docs/operations.md, shared mode): how many
// windows are between closing and answering, how long a closed window waited for room
// (--shared-windows-in-flight reached), how long it took to be answered and what that
// time was made of (its phases), how windows ended, and the appends cancelled behind a
// failed window (window_pipeline.h).

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace sluice::shared {

// The parts of a window's time from its closing to its answers, in order
// (sluice_shared_window_phase_seconds{phase}); docs/operations.md says what each holds.
enum class window_phase : uint8_t {
    build,        // the object made from the window's batches
    put,          // the object store's PUT, its retries included
    commit_wait,  // uploaded, waiting for the commits of the windows before it
    lock,         // the commit transaction's start to its partitions' rows locked
    statements,   // the commit's other statements, before COMMIT
    commit,       // COMMIT
    answer,       // committed to every append answered
};

// Makes the series, so that they show from the first scrape.
void declare_window_metrics();
// A window closed after waiting `waited` for room; it is in flight until window_answered.
void count_window_closed(std::chrono::steady_clock::duration waited);
void count_window_phase(window_phase phase, std::chrono::steady_clock::duration took);
// The window closed at `closed` answered its appends: committed (its commit ran) or
// failed (its upload or commit did); `cancelled` of its appends were cancelled.
void count_window_answered(bool committed, std::chrono::steady_clock::time_point closed,
                           size_t cancelled);

}  // namespace sluice::shared
