#pragma once

// SQL functions the engine adds to SQLite.

#include <sqlite3.h>

#include <string>
#include <string_view>

#include "sql/engine.h"
#include "sql/statement_context.h"

namespace sluice::sql {

// sluice_last_scan(): a JSON object with the counters of what the previous statement's
// topic scans read ({"partitions_scanned": .., "segments_read": .., "batches_read": ..,
// "records_read": .., "bytes_read": ..}), to see predicate pushdown at work.
// version(): PostgreSQL's form, whose leading "PostgreSQL 15.0" drivers parse, naming
// Sluice's version and commit, e.g. "PostgreSQL 15.0 on x86_64-pc-linux-gnu, SQLite 3.40.1
// engine (Sluice 0.1.0 0123456789ab)".
outcome<bool> register_functions(sqlite3* db, statement_context* ctx);

// What version() answers, on every SQL endpoint (the pg listener answers it without
// SQLite too).
std::string version_text();

// The same form for another engine: `engine` names it with its version ("DuckDB v1.5.6").
std::string version_text(std::string_view engine);

}  // namespace sluice::sql
