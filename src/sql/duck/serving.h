#pragma once

// DuckDB behind the front ends' engine interface (sql/engine.h): what `sluice serve`
// serves the PostgreSQL listener, HTTP and `sluice sql` with (docs/sql.md). Statements
// speak DuckDB's SQL, which is PostgreSQL's dialect: the front ends send them untranslated.
//
// - kafka_topics."T" and system.X (duck/sluice_tables.h); authorization per topic at bind
//   and scan, the system tables filtered by the principal.
// - Users' own schemas and tables in the engine's database (duck/user_tables.h), the
//   expansions' targets among them, guarded (engine_options::guard).
// - Bounds: DuckDB's memory_limit is the total of every session (--sql-memory), temp files
//   under <data_dir>/sql-duck-tmp up to --sql-temp-bytes; statement timeout and cancel
//   interrupt the connection (a watchdog thread); rows and value sizes are checked as
//   rows are stepped; results stream, a chunk (2048 rows) at a time. DuckDB runs every
//   session's statements on --sql-threads threads (by default one per core).
// DuckDB's headers stay out of this one.

#include <filesystem>
#include <memory>

#include "sql/engine.h"
#include "sql/engine_options.h"

namespace sluice::sql::duck {

class engine;

// The engine's database file under the data directory: users' own tables and the
// expansions' columnar targets (docs/formats/sql-duck.md).
std::filesystem::path serving_database_file(const std::filesystem::path& data_dir);

// Errors: internal (DuckDB refused the configuration, or the temp directory cannot be made).
// The database is serving_database_file(opts.data_dir).
outcome<std::unique_ptr<sql::engine>> open_serving_engine(const engine_options& opts);

// The same in two steps, for `sluice serve`: the database first, in `file` (empty: in
// memory), before the expansions open, which write their columnar targets into it
// (database()); then the engine serving it, whose opts.guard names those targets.
// export_dir: where COPY (query) TO 'file' may write (an absolute, existing directory);
// empty: COPY is refused.
outcome<std::shared_ptr<duck::engine>> open_serving_database(
    const engine_options& opts, const std::filesystem::path& file,
    const std::filesystem::path& export_dir = {});
outcome<std::unique_ptr<sql::engine>> open_serving_engine(const engine_options& opts,
                                                          std::shared_ptr<duck::engine> db);

}  // namespace sluice::sql::duck
