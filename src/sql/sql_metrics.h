#pragma once

// SQL's counters in the process's metrics registry (docs/operations.md): statements
// run, by outcome, and their time, whichever front end (pg, http, CLI) ran them.

#include <chrono>

namespace sluice::sql {

// Makes the families known (shown at 0) before their first statement.
void declare_metrics();

enum class query_outcome {  // in the order of sql_metrics.cc's labels
    done,      // stepped to its end
    failed,    // an error (syntax, a limit, a denial, a timeout...)
    canceled,  // reset or dropped before its end (the client stopped reading)
};

// A statement that began its first step at `started`: sluice_sql_queries_total{outcome}
// and sluice_sql_query_duration_seconds.
void count_query(std::chrono::steady_clock::time_point started, query_outcome outcome);

}  // namespace sluice::sql
