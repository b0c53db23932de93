#include "shared/window_metrics.h"

#include "metrics/registry.h"

namespace sluice::shared {
namespace {

struct window_series {
    metrics::gauge& in_flight;
    metrics::histogram& room_wait;
    metrics::histogram& answered;
    metrics::counter& committed;
    metrics::counter& failed;
    metrics::counter& cancelled;
};

const window_series& series() {
    static auto& outcomes = metrics::global().counters(
        "sluice_shared_windows_total",
        "Shared mode: produce windows answered, by outcome: committed (the commit ran; a "
        "window whose appends were all cancelled commits nothing) or failed (its upload or "
        "commit failed: its appends answered KAFKA_STORAGE_ERROR)",
        {"outcome"});
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
        outcomes.with({"committed"}),
        outcomes.with({"failed"}),
        metrics::global().counter_of(
            "sluice_shared_window_appends_cancelled_total",
            "Shared mode: appends answered KAFKA_STORAGE_ERROR without being committed because "
            "an append of the same idempotent producer and partition failed in a window before "
            "theirs"),
    };
    return s;
}

double seconds(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

}  // namespace

void declare_window_metrics() { (void)series(); }

void count_window_closed(std::chrono::steady_clock::duration waited) {
    series().room_wait.observe(seconds(waited));
    series().in_flight.add(1);
}

void count_window_answered(bool committed, std::chrono::steady_clock::time_point closed,
                           size_t cancelled) {
    const auto& s = series();
    s.in_flight.add(-1);
    s.answered.observe(seconds(std::chrono::steady_clock::now() - closed));
    (committed ? s.committed : s.failed).inc();
    if (cancelled) s.cancelled.inc(cancelled);
}

}  // namespace sluice::shared
