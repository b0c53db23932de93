#pragma once

// PostgreSQL's size functions on DuckDB, for psql's \dt+, \di+ and \l+ (docs/sql-pg.md,
// "On the DuckDB engine"), in the system catalog's pg_catalog:
// - pg_table_size, pg_relation_size and pg_total_relation_size of a table: the bytes of
//   the database file's blocks that hold its checkpointed data (DuckDB keeps a table's
//   columns in blocks of the file; rows not yet checkpointed are in the write-ahead log
//   and count for nothing); NULL for the rest (indexes, views, topics, system tables), of
//   which DuckDB reports no size.
// - pg_database_size: the database file's blocks.
// - pg_size_pretty: PostgreSQL's units and rounding (DuckDB's is format_bytes, KiB).
// Internal to src/sql/duck.

namespace duckdb {
class ExtensionLoader;
}

namespace sluice::sql::duck {

void register_pg_sizes(duckdb::ExtensionLoader& loader);

}  // namespace sluice::sql::duck
