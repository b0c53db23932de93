#pragma once

// PostgreSQL's types as the PostgreSQL front end announces result columns (pg/types.h)
// and the engine's pg_catalog lists them (duck/pg_types.h): one table for both.

#include <cstdint>
#include <string_view>
#include <vector>

namespace sluice::sql {

// A PostgreSQL type as the catalog shows it.
struct pg_type_info {
    int64_t oid;
    const char* name;    // pg_type.typname: "int8"
    const char* format;  // format_type(): "bigint"
    int64_t len;         // typlen: bytes, -1 varlena, -2 C string
    const char* category;
    int64_t array_oid;  // its array type, 0 when none
};
// The types the catalog lists (pg_type).
const std::vector<pg_type_info>& pg_types();
// The type OID of a result column the engine declared `decl` (its declared types:
// INTEGER, REAL, NUMERIC[(p,s)], BOOLEAN, TEXT, BLOB, JSON, TIMESTAMPTZ, _INT2;
// docs/sql-pg.md), 0 when
// the name says nothing.
int64_t pg_oid_for_decl(std::string_view decl);

}  // namespace sluice::sql
