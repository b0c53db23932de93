#pragma once

// PostgreSQL types of SQLite values: which type OID a result column announces, how a
// value is written in the text and binary formats of that type, and how a bound
// parameter becomes a value. The mapping is documented in docs/sql-pg.md.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sql/engine.h"
#include "sql/pg/pg_messages.h"

namespace sluice::sql::pg {

// Type OIDs (PostgreSQL's pg_type.dat; stable across versions).
namespace oid {
inline constexpr uint32_t unspecified = 0;
inline constexpr uint32_t boolean = 16;
inline constexpr uint32_t bytea = 17;
inline constexpr uint32_t name = 19;
inline constexpr uint32_t int8 = 20;
inline constexpr uint32_t int2 = 21;
inline constexpr uint32_t int4 = 23;
inline constexpr uint32_t text = 25;
inline constexpr uint32_t oid = 26;
inline constexpr uint32_t json = 114;
inline constexpr uint32_t float4 = 700;
inline constexpr uint32_t float8 = 701;
inline constexpr uint32_t unknown = 705;
inline constexpr uint32_t bpchar = 1042;
inline constexpr uint32_t varchar = 1043;
inline constexpr uint32_t date = 1082;
inline constexpr uint32_t timestamp = 1114;
inline constexpr uint32_t timestamptz = 1184;
inline constexpr uint32_t int2_array = 1005;
inline constexpr uint32_t numeric = 1700;
inline constexpr uint32_t jsonb = 3802;
}  // namespace oid

// The OID a declared column type maps to, after SQLite's affinity rules (a name with
// INT is an integer, CHAR/CLOB/TEXT text, BLOB bytea, REAL/FLOA/DOUB float8, BOOL
// bool); nullopt when the name says nothing (empty, NUMERIC, DATE, JSON, ...): the
// column is then typed by its values.
std::optional<uint32_t> oid_for_decl_type(std::string_view decl_type);
// RowDescription's type modifier of a column the engine declared `decl_type`: numeric's
// precision and scale as PostgreSQL packs them (((p << 16) | s) + 4) for NUMERIC(p,s);
// -1 (none) for the others.
int32_t type_modifier_for_decl(std::string_view decl_type);
// The OID of a value's storage class; nullopt for NULL.
std::optional<uint32_t> oid_for_value(const value& v);
// The engine's name of a parameter type a client declared by OID; unspecified for 0 and
// for types the engine has no name for (they are typed by the statement, or as text).
param_type param_type_of(uint32_t type_oid);
// RowDescription's type size: the width of fixed-size types, -1 for varlena.
int16_t type_size(uint32_t type_oid);

// PostgreSQL's text output of a float8 (shortest round-trip; NaN, Infinity).
std::string format_float8(double d);
// numeric's binary format from its text (`-12.50`): int16 digit count, weight, sign and
// display scale, then the base-10000 digits. False when the text is not a plain decimal.
bool append_numeric_binary(std::string& out, std::string_view text);
// bytea's hex format: \x followed by two lower-case hex digits per byte.
std::string bytea_hex(std::string_view raw);

// Appends one DataRow cell (int32 length, -1 for NULL, then the bytes) for a column
// announced as `type_oid` in `format` (0 text, 1 binary). A value of another storage
// class is converted for the announced type (docs/sql-pg.md); false when it cannot
// be in binary (e.g. the text 'abc' in an int8 column), with `err` saying why.
bool append_cell(std::string& out, const value& v, uint32_t type_oid, int16_t format,
                 pg_error& err);
// The text format of a value (not NULL) in a column announced as `type_oid`.
std::string text_cell(const value& v, uint32_t type_oid);

// A bound parameter (nullopt: NULL) of type `type_oid` (0: unspecified) in `format`.
// Errors: 22P02 (bad text), 22P03 (bad binary), 0A000 (binary of a type we do not
// decode).
struct param_result {
    value v;
    std::optional<pg_error> error;
};
param_result decode_param(std::optional<std::string_view> data, uint32_t type_oid, int16_t format,
                          int index);

}  // namespace sluice::sql::pg
