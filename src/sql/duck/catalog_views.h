#pragma once

// Sluice's tables in the catalog that PostgreSQL tools read, on DuckDB (docs/sql.md,
// "Engines"). DuckDB's pg_catalog (pg_namespace, pg_class, pg_attribute, pg_tables) and
// information_schema (schemata, tables, columns) are views over its catalog functions
// duckdb_schemas(), duckdb_tables() and duckdb_columns(). Those are replaced by wrappers
// that give the original's rows, then:
// - the schemas kafka_topics and system, a table per topic the session's principal may
//   describe or read (statement_context::may_see_topic, as the SQLite engine lists them)
//   and the system tables, with their columns, read afresh by every statement: a topic
//   created or deleted is seen by the next one, and nothing is created per session;
// - information_schema.columns' data_type in PostgreSQL's words (text, bigint, bytea).
// Topics' OIDs are stable (a hash of the name), the same in every session.
//
// And what would show the data directory's path is hidden: duckdb_databases()' path,
// PRAGMA database_list's file (read from it), duckdb_settings()' values of the settings naming
// directories or paths, duckdb_temporary_files()' path, duckdb_extensions()' install path
// are NULL (and duckdb_extensions()' error, which names its directory, replaced);
// current_setting() of those settings is refused (42501). current_user, session_user and
// current_role are the session's principal's user, as on SQLite (DuckDB's say 'duckdb').
// Internal to src/sql/duck.

#include "duckdb.hpp"
#include "sql/duck/sluice_tables.h"

namespace sluice::sql::duck {

// Replaces the functions in db's system catalog; before any session opens. src's pointers
// must outlive db.
void register_catalog_views(duckdb::DatabaseInstance& db, const table_sources& src,
                            session_finder find);

}  // namespace sluice::sql::duck
