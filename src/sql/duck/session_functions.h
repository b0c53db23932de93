#pragma once

// Functions of a session's own state.
// Internal to src/sql/duck.
// - sluice_last_scan(): a JSON object with the counters of what the previous statement's
//   scans of the topic tables read (partitions_scanned, segments_read, batches_read,
//   records_read, bytes_read). The counters move
//   from the session's scan_counters to its statement_context when a statement starts
//   (serving_session::start_statement).
// - version(): PostgreSQL's form naming DuckDB and Sluice, in place of
//   DuckDB's own, on every front end.

#include "sql/duck/topic_scan.h"

namespace duckdb {
class DatabaseInstance;
}

namespace sluice::sql::duck {

// Registers sluice_last_scan and version() in db's system catalog; find gives a connection's session.
void register_session_functions(duckdb::DatabaseInstance& db, session_finder find);

}  // namespace sluice::sql::duck
