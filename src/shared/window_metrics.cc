#include "shared/window_metrics.h"

#include <array>
#include <vector>

#include "metrics/registry.h"

namespace sluice::shared {
namespace {

constexpr size_t phase_count = 7;

// Finer than metrics::duration_buckets() between 1 ms and 1 s, where windows' phases
// lie, so that a quantile read from the buckets is not a 2.5x guess.
std::vector<double> phase_buckets() {
    return {0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05,
            0.075,  0.1,   0.15,  0.2,   0.3,   0.5,    0.75, 1,     1.5,  2,    3,    5, 10};
}

struct window_series {
    metrics::gauge& in_flight;
    metrics::histogram& room_wait;
    metrics::histogram& answered;
    std::array<metrics::histogram*, phase_count> phases;  // by window_phase
    std::array<metrics::counter*, 2> outcomes;            // committed, failed
    metrics::counter& cancelled;
};

const window_series& series() {
    static const window_series s{
        metrics::global()
            .gauges("sluice_shared_windows_in_flight",
                    "Shared mode: produce windows closed and not yet answered (uploading, or "
                    "uploaded and waiting for their commit), at most --shared-windows-in-flight")
            .with({}),
        metrics::global().histogram_of(
            "sluice_shared_window_room_wait_seconds",
            "Shared mode: how long a due produce window waited for room before it closed "
            "(--shared-windows-in-flight windows were in flight); 0 when there was room"),
        metrics::global().histogram_of(
            "sluice_shared_window_seconds",
            "Shared mode: from a produce window's closing to its appends' answers (upload, "
            "the wait for the windows before it, commit)"),
        metrics::global()
            .histograms("sluice_shared_window_phase_seconds",
                        "Shared mode: the parts of a produce window's time from its closing to "
                        "its answers: build (the object), put (the upload), commit_wait (for the "
                        "windows before it), lock (the commit's start to its partitions' rows "
                        "locked), statements (the commit's others), commit (COMMIT), answer",
                        {"phase"}, phase_buckets())
            .each_of<phase_count>({"build", "put", "commit_wait", "lock", "statements", "commit",
                                   "answer"}),
        metrics::global()
            .counters("sluice_shared_windows_total",
                      "Shared mode: produce windows answered, by outcome: committed (the commit "
                      "ran; a window whose appends were all cancelled commits nothing) or failed "
                      "(its upload or commit failed: its appends answered KAFKA_STORAGE_ERROR)",
                      {"outcome"})
            .each_of<2>({"committed", "failed"}),
        metrics::global().counter_of(
            "sluice_shared_window_appends_cancelled_total",
            "Shared mode: appends answered KAFKA_STORAGE_ERROR without being committed because "
            "an append of the same idempotent producer and partition failed in a window before "
            "theirs"),
    };
    return s;
}

}  // namespace

void declare_window_metrics() { (void)series(); }

void count_window_closed(std::chrono::steady_clock::duration waited) {
    series().room_wait.observe(waited);
    series().in_flight.add(1);
}

void count_window_phase(window_phase phase, std::chrono::steady_clock::duration took) {
    series().phases.at(static_cast<size_t>(phase))->observe(took);
}

void count_window_answered(bool committed, std::chrono::steady_clock::time_point closed,
                           size_t cancelled) {
    const auto& s = series();
    s.in_flight.add(-1);
    s.answered.observe_since(closed);
    s.outcomes[committed ? 0 : 1]->inc();
    if (cancelled) s.cancelled.inc(cancelled);
}

}  // namespace sluice::shared
