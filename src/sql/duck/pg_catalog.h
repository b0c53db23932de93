#pragma once

// PostgreSQL's catalog spellings that DuckDB lacks or answers differently, for the tools
// that read the catalog (psql's meta-commands, JDBC's DatabaseMetaData, SQLAlchemy's
// inspector; docs/sql.md, "Engines"). DuckDB's own pg_catalog views are used wherever they
// are right; what is overridden is here. Internal to src/sql/duck.
//
// - Text, before DuckDB parses (its parser reads `OPERATOR(pg_catalog.~)` as an operator
//   named pg_catalog and drops the `~`): `OPERATOR(pg_catalog.op)` becomes `op`, and
//   `COLLATE pg_catalog.default` (psql's, a no-op) is dropped, and so is the pg_catalog of
//   a cast's type (`::pg_catalog.text`, which DuckDB's parser refuses). Outside string literals,
//   quoted identifiers and comments; the text keeps its length (blanks in place), so
//   statement offsets stay valid.
// - Parsed statements: `x::regclass` is pg_catalog.regclassin(x) for text (the relation's
//   OID, "relation ... does not exist" when there is none) and x itself for an OID;
//   `x::regclass::text` is pg_catalog.regclassout(...), the relation's name; `::oid` is
//   BIGINT; `pg_catalog.f(...)` is `f(...)` when f is not in pg_catalog (DuckDB would
//   read a method call of a column pg_catalog); `~` and `!~` search, as PostgreSQL's;
//   `LIKE` and `ILIKE` escape with a backslash, as PostgreSQL's do by default.
//   `pg_database`, `pg_namespace` and `information_schema.schemata` read this file's table
//   macros: DuckDB's pg_database lacks psql's columns, its pg_namespace leaves out
//   pg_catalog and information_schema, and its schemata lists every attached database's
//   schemas.
// - Macros in pg_catalog: format_type(oid, typmod) over PostgreSQL's type OIDs (DuckDB's
//   answers for its own), pg_encoding_to_char, to_regclass, regclassin, regclassout.

#include <string>
#include <string_view>

#include "duckdb.hpp"

namespace duckdb {
class SQLStatement;
}

namespace sluice::sql::duck {

// Rewrites `OPERATOR(pg_catalog.op)`, `COLLATE pg_catalog.default` and
// `::pg_catalog.type` in sql, in place.
void pg_operator_text(std::string& sql);

// Rewrites a parsed statement (of the SQL text `text`): its regclass and oid casts, its
// references to the overridden catalog relations, and `~` and `!~` to PostgreSQL's
// regular expression search (DuckDB's parser makes them regexp_full_match, a match of the
// whole string; left alone when the text calls regexp_full_match itself).
void pg_catalog_statement(duckdb::SQLStatement& s, std::string_view text);

// Registers the macros in db's system catalog; before any session opens.
void register_pg_catalog(duckdb::DatabaseInstance& db);

}  // namespace sluice::sql::duck
