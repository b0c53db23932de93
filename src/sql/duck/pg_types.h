#pragma once

// pg_type as PostgreSQL has it, on DuckDB (docs/sql-pg.md, "On the DuckDB engine"): the
// rows of the types the catalog shows (sql::pg_types(), sql/pg_type_table.h), under
// PostgreSQL's OIDs, which pg_attribute's atttypid, format_type and the wire's
// RowDescription use. DuckDB's own pg_type has its type ids and no row for text, so a
// join of pg_attribute with pg_type (JDBC's getColumns) lost the columns of those types.
// Read from the table macro pg_catalog.pg_type_rows() (pg_relations.h lists it).
// Internal to src/sql/duck.

namespace duckdb {
class ExtensionLoader;
}

namespace sluice::sql::duck {

// Registers pg_catalog.pg_type_rows() in the system catalog.
void register_pg_types(duckdb::ExtensionLoader& loader);

}  // namespace sluice::sql::duck
