#pragma once

// The pg_catalog relations that psql's `\d NAME` and `\di` read and DuckDB's views answer
// differently from PostgreSQL, as table macros in the system catalog's pg_catalog
// (docs/design/sql-engine.md, "Not done yet"). pg_catalog.cc's pass over the parsed
// statement reads a reference to one of these relations from its macro instead.
//
// - pg_class: relforcerowsecurity, relam (heap for tables, btree for indexes), and a row
//   per index a PRIMARY KEY or UNIQUE constraint has (named as PostgreSQL names them,
//   `<table>_pkey` and `<table>_<columns>_key`; DuckDB lists no index for them).
// - pg_attribute: atttypid as PostgreSQL's type OIDs (DuckDB gives its own type ids) and
//   a numeric's atttypmod as PostgreSQL's.
// - pg_index: a row per index with indkey (1-based column numbers), the constraints' too;
//   indkey::text and indoption::text are int2vector's text, `1 2` (pg_catalog.h).
// - pg_constraint: PostgreSQL's names, conkey 1-based (an int2[]), conindid; without
//   DuckDB's NOT NULL rows (PostgreSQL 15 keeps those in pg_attribute).
// - pg_proc: the functions of the system catalog (its main schema's too) in pg_catalog,
//   with PostgreSQL's type OIDs, without the catalog's and the serving layer's helpers.
// - pg_am: heap and btree; pg_roles: the one role, sluice.
// - pg_description: a row per comment (COMMENT ON) of a relation, column or function,
//   under pg_class's or pg_proc's OID (DuckDB's has a row per object, under the
//   database's); obj_description and col_description read it.
// - pg_stats: empty (DuckDB's statistics are not ANALYZE's), with PostgreSQL's columns.
// - Relations of things Sluice has not (row security policies, extended statistics,
//   publications, inheritance): empty, with PostgreSQL's columns.
// Functions: pg_get_indexdef, pg_get_expr with its `pretty` argument,
// pg_get_function_result and pg_get_function_arguments, information_schema's
// _pg_expandarray, array_upper; pg_get_statisticsobjdef_columns, pg_relation_is_publishable
// and pg_get_serial_sequence answer for none (there are no statistics objects,
// publications or PostgreSQL sequences).

#include <span>

#include "duckdb.hpp"

namespace duckdb {
class ExtensionLoader;
struct DefaultMacro;
}

namespace sluice::sql::duck {

// A relation of pg_catalog read from a table macro of the same schema instead.
struct pg_relation {
    const char* name;   // in pg_catalog
    const char* macro;  // in pg_catalog, without parameters
};

std::span<const pg_relation> pg_relations();

// Registers the table macro pg_catalog.name(), of no parameters, in the system catalog.
void relation_macro(duckdb::ExtensionLoader& loader, const char* name, const char* sql);
// Registers a scalar macro of one or more overloads (by number of parameters, one name).
void overloaded_macro(duckdb::ExtensionLoader& loader,
                      std::span<const duckdb::DefaultMacro> overloads);

// Registers the table macros and functions in the system catalog.
void register_pg_relations(duckdb::ExtensionLoader& loader);

}  // namespace sluice::sql::duck
