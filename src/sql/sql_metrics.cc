#include "sql/sql_metrics.h"

#include "metrics/registry.h"

namespace sluice::sql {

void count_query(std::chrono::steady_clock::time_point started, query_outcome outcome) {
    static auto& queries = metrics::global().counters(
        "sluice_sql_queries_total",
        "SQL statements run (pg, http, CLI), by outcome: done, failed or canceled",
        {"outcome"});
    static auto& done = queries.with({"done"});
    static auto& failed = queries.with({"failed"});
    static auto& canceled = queries.with({"canceled"});
    static auto& duration = metrics::global().histogram_of(
        "sluice_sql_query_duration_seconds",
        "Time from a SQL statement's first step to its end (rows streamed included)");
    switch (outcome) {
        case query_outcome::done: done.inc(); break;
        case query_outcome::failed: failed.inc(); break;
        case query_outcome::canceled: canceled.inc(); break;
    }
    duration.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

}  // namespace sluice::sql
