#include "sql/sql_metrics.h"

#include "metrics/registry.h"

namespace sluice::sql {
namespace {

struct sql_series {
    metrics::counter& done;
    metrics::counter& failed;
    metrics::counter& canceled;
    metrics::histogram& duration;
};

const sql_series& series() {
    static auto& queries = metrics::global().counters(
        "sluice_sql_queries_total",
        "SQL statements run (pg, http, CLI), by outcome: done, failed or canceled", {"outcome"});
    static const sql_series s{
        queries.with({"done"}), queries.with({"failed"}), queries.with({"canceled"}),
        metrics::global().histogram_of(
            "sluice_sql_query_duration_seconds",
            "Time from a SQL statement's first step to its end (rows streamed included)")};
    return s;
}

}  // namespace

void declare_metrics() { (void)series(); }

void count_query(std::chrono::steady_clock::time_point started, query_outcome outcome) {
    const auto& s = series();
    switch (outcome) {
        case query_outcome::done: s.done.inc(); break;
        case query_outcome::failed: s.failed.inc(); break;
        case query_outcome::canceled: s.canceled.inc(); break;
    }
    s.duration.observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

}  // namespace sluice::sql
