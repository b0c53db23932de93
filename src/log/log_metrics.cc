#include "log/log_metrics.h"

#include "metrics/registry.h"

namespace sluice::log {
namespace {

struct log_series {
    metrics::histogram& fsync;
    metrics::counter& journal_syncs;
    metrics::counter& journal_bytes;
};

const log_series& series() {
    static const log_series s{
        metrics::global().histogram_of(
            "sluice_fsync_duration_seconds",
            "Time of each fdatasync of a data or journal file and each directory fsync; its "
            "_count is the number of fsyncs"),
        metrics::global().counter_of(
            "sluice_journal_syncs_total",
            "Journal syncs (one write and fdatasync covering the small appends of a flush pass)"),
        metrics::global().counter_of("sluice_journal_bytes_total",
                                     "Bytes of entries written to the journal"),
    };
    return s;
}

}  // namespace

void declare_metrics() { (void)series(); }

void count_fsync(std::chrono::steady_clock::time_point started) {
    series().fsync.observe_since(started);
}

void count_journal_sync(size_t bytes) {
    series().journal_syncs.inc();
    series().journal_bytes.inc(bytes);
}

}  // namespace sluice::log
