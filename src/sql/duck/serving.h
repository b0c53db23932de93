#pragma once

// DuckDB behind the front ends' engine interface (sql/engine.h): what
// `sluice serve --sql-engine duckdb` serves the PostgreSQL listener, HTTP and `sluice sql`
// with (docs/sql.md, "Engines"). Statements speak DuckDB's SQL, which is PostgreSQL's
// dialect: the front ends send them untranslated (session::native_pg_dialect()).
//
// - kafka_topics."T" and system.X as with SQLite (duck/sluice_tables.h); authorization
//   per topic at bind and scan, the system tables filtered by the principal.
// - Read-only: statements other than queries, EXPLAIN and transaction control are refused
//   (read_only, 42501); users' own tables stay on the SQLite engine for now.
// - Bounds: DuckDB's memory_limit is the total of every session (--sql-memory), temp files
//   under <data_dir>/sql-duck-tmp up to --sql-temp-bytes; statement timeout and cancel
//   interrupt the connection (a watchdog thread); rows and value sizes are checked as
//   rows are stepped; results stream, a chunk (2048 rows) at a time.
// DuckDB's headers stay out of this one.

#include <memory>

#include "sql/engine.h"
#include "sql/sqlite_engine.h"

namespace sluice::sql::duck {

// Errors: internal (DuckDB refused the configuration, or the temp directory cannot be made).
outcome<std::unique_ptr<sql::engine>> open_serving_engine(const engine_options& opts);

}  // namespace sluice::sql::duck
