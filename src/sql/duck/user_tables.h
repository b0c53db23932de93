#pragma once

// What a DuckDB session may run, and on what (docs/sql.md, "Engines"). Internal to
// src/sql/duck.
//
// - Queries, EXPLAIN, transaction control, SET (the locked configuration refuses
//   DuckDB's own settings).
// - Users' own tables, as on the SQLite engine: CREATE/DROP/ALTER of schemas, tables,
//   views, indexes, sequences and types, INSERT/UPDATE/DELETE, in the serving database
//   (<data_dir>/sql-duck/sluice.duckdb, docs/formats/sql-duck.md) or in a session's temp
//   catalog. Not under policies (as on SQLite): any SQL user may read and write them.
// - Refused with read_only (42501): writes and DDL on the tables the broker writes
//   (expansion targets, their progress; sql::table_guard) and on schemas holding them,
//   writes and DDL in the engine's schemas
//   (kafka_topics, system, pg_catalog, information_schema) and in other catalogs, COPY,
//   ATTACH/DETACH, INSTALL/LOAD, PRAGMA, EXPORT/IMPORT, CALL, VACUUM, PREPARE/EXECUTE,
//   functions and macros, secrets. A new schema's name follows the SQLite engine's rules
//   (check_schema_name, sql/schema_names.h): otherwise invalid_parameter (22023).

#include <optional>

#include "duckdb.hpp"
#include "sql/engine.h"

namespace sluice::sql {
class table_guard;
}

namespace sluice::sql::duck {

// Why `s` may not run, or nullopt. `database` is the serving database's catalog name;
// `guard` (may be null) names the tables the broker writes there (expansion targets and
// their progress), which users' statements may not change.
std::optional<query_error> refused(const duckdb::SQLStatement& s, const std::string& database,
                                   const table_guard* guard);

}  // namespace sluice::sql::duck
