#pragma once

// Authorization of reads of the database's own tables on DuckDB (docs/sql.md, Engines):
// an expansion's target holds its topic's records, so reading it needs KafkaRead on the
// topic, as on the SQLite engine (sql::table_guard::source_topic). Checked on the bound
// plan of every statement (a planner extension: views, subqueries, CTEs and joins
// included), when it is prepared and again before a run once the policies changed
// (serving_session). Table functions that read a table's storage past that check
// (pragma_storage_info: its statistics), write to the file (checkpoint) or read files
// (read_parquet, read_csv, glob, ...: COPY's export directory is written, not read) are
// refused.
// Internal to src/sql/duck.

#include <atomic>

#include "sql/duck/topic_scan.h"

namespace duckdb {
class DBConfig;
}
namespace sluice::sql {
class table_guard;
}

namespace sluice::sql::duck {

// What the check needs, set before the database opens; the guard may come later (the
// expansions, which write into the database, open after it).
struct table_access {
    session_finder find;
    std::atomic<const table_guard*> guard{nullptr};
};

// Registers the check in `config` before the database opens; `access` must outlive it.
void add_table_access(duckdb::DBConfig& config, table_access& access);

}  // namespace sluice::sql::duck
