#include "log/log_metrics.h"

#include "metrics/registry.h"

namespace sluice::log {

void count_fsync(std::chrono::steady_clock::time_point started) {
    static auto& h = metrics::global().histogram_of(
        "sluice_fsync_duration_seconds",
        "Time of each fdatasync of a data or journal file and each directory fsync; its "
        "_count is the number of fsyncs");
    h.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

void count_journal_sync(size_t bytes) {
    static auto& syncs = metrics::global().counter_of(
        "sluice_journal_syncs_total",
        "Journal syncs (one write and fdatasync covering the small appends of a flush pass)");
    static auto& written = metrics::global().counter_of(
        "sluice_journal_bytes_total", "Bytes of entries written to the journal");
    syncs.inc();
    written.inc(bytes);
}

}  // namespace sluice::log
