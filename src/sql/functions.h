#pragma once

// SQL functions the engine adds to SQLite.

#include <sqlite3.h>

#include "sql/engine.h"
#include "sql/statement_context.h"

namespace sluice::sql {

// sluice_last_scan(): a JSON object with the counters of what the previous statement's
// topic scans read ({"partitions_scanned": .., "segments_read": .., "batches_read": ..,
// "records_read": .., "bytes_read": ..}), to see predicate pushdown at work.
outcome<bool> register_functions(sqlite3* db, statement_context* ctx);

}  // namespace sluice::sql
