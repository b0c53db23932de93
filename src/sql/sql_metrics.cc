#include "sql/sql_metrics.h"

#include <array>

#include "metrics/registry.h"

namespace sluice::sql {
namespace {

struct sql_series {
    std::array<metrics::counter*, 3> outcomes;  // by query_outcome
    metrics::histogram& duration;
};

const sql_series& series() {
    static const sql_series s{
        metrics::global()
            .counters("sluice_sql_queries_total",
                      "SQL statements run (pg, http, CLI), by outcome: done, failed or canceled",
                      {"outcome"})
            .each_of<3>({"done", "failed", "canceled"}),
        metrics::global().histogram_of(
            "sluice_sql_query_duration_seconds",
            "Time from a SQL statement's first step to its end (rows streamed included)")};
    return s;
}

}  // namespace

void declare_metrics() { (void)series(); }

void count_query(std::chrono::steady_clock::time_point started, query_outcome outcome) {
    const auto& s = series();
    s.outcomes.at(static_cast<size_t>(outcome))->inc();
    s.duration.observe_since(started);
}

}  // namespace sluice::sql
