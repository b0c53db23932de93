#pragma once

// What the serving layer does to a parsed statement before DuckDB binds it, so that it
// answers as the SQLite engine and PostgreSQL do (docs/sql.md, "Engines"). Internal to
// src/sql/duck.
// - The JSON functions (->>, ->, json_extract*, json_*) read a BLOB first argument (a
//   topic's key or value) as UTF-8 text: their first argument goes through
//   sluice_json_text(x), which binds to x itself, or to x as text when x is a BLOB (NULL
//   when not UTF-8). DuckDB would otherwise take the BLOB for a JSON string.
// - The select list's unnamed columns are named as PostgreSQL names them (count(*) is
//   `count`, 1 + 1 `?column?`), not by DuckDB's whole expression (duck/pg_names.h).
// - Several ->> of one value in a SELECT's projection parse it once per row
//   (duck/json_paths.h).

#include <string>
#include <string_view>

#include "duckdb.hpp"

namespace duckdb {
class SQLStatement;
}

namespace sluice::sql::duck {

void shape_statement(duckdb::SQLStatement& s);

// Registers sluice_json_text in db's system catalog.
void register_json_text(duckdb::DatabaseInstance& db);

// A hint for a statement DuckDB could not parse or bind (`offset` written unquoted, a
// millisecond time given to a time function, ->>'s text in arithmetic), from the
// statement and DuckDB's message; or empty.
std::string error_hint(std::string_view sql, std::string_view message);

}  // namespace sluice::sql::duck
