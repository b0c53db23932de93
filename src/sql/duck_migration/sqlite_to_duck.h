#pragma once

// The one-time copy of the SQLite engine's tables into the DuckDB engine's database, so
// that a broker whose data directory the SQLite engine served shows the same tables when
// it starts with `--sql-engine duckdb` (docs/sql.md, "Switching engines";
// docs/formats/sql-duck-migration.md).
//
// What is copied: every table of <data_dir>/sql/main.db (schema main) and of
// <data_dir>/sql/schemas/<name>.db (schema <name>): columns, types (map_declared), NOT
// NULL, literal defaults, the primary key, and every row; the expansions' targets with
// their progress rows, so that the expansions go on from where they stopped on SQLite.
// Not copied (logged, each named): views, triggers, indexes, UNIQUE/CHECK/FOREIGN KEY
// constraints, virtual tables, and a table whose name the DuckDB database holds already.
//
// Crash-safe: everything, with the marker saying it was done, commits in one DuckDB
// transaction; a crash before the commit leaves the DuckDB file as it was and the next
// start copies again. The SQLite files are only read.
//
// DuckDB's headers stay out of this one.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sluice::sql::duck_migration {

// The version of the marker (`sqlite_migration_format` in _sluice_meta).
inline constexpr int marker_version = 1;

// The DuckDB types the copy makes columns of. `dynamic`: a column SQLite declared without
// a type, whose values decide (BIGINT, DOUBLE, VARCHAR, BLOB: the first that holds them).
enum class duck_type {
    bigint,
    double_,
    boolean,
    varchar,
    blob,
    date,
    timestamp,
    timestamptz,
    time,
    dynamic
};

// DuckDB's name of the type ("BIGINT", ...; "ANY" for dynamic).
std::string_view type_name(duck_type t);

// DuckDB's type for a column SQLite declared `declared` (e.g. "VARCHAR(40)", "INT",
// "TIMESTAMPTZ"): PostgreSQL's and SQLite's well-known names by name (BOOLEAN, DATE,
// TIMESTAMP, TIMESTAMPTZ, TIME, BYTEA, JSON), then SQLite's affinity rules
// (https://www.sqlite.org/datatype3.html, 3.1): INT → BIGINT; CHAR, CLOB, TEXT → VARCHAR;
// BLOB → BLOB; none → dynamic; REAL, FLOA, DOUB → DOUBLE; anything else (NUMERIC,
// DECIMAL) → DOUBLE, as SQLite stores those values.
duck_type map_declared(std::string_view declared);

// One SQLite value (sqlite3_column_type's classes).
struct sqlite_value {
    enum class kind { null, integer, real, text, blob } k = kind::null;
    int64_t i = 0;
    double r = 0;
    std::string_view bytes;  // text or blob
};

// Whether DuckDB's `t` holds `v` without loss: BIGINT an integer; DOUBLE a real or an
// integer a double holds exactly; BOOLEAN the integers 0 and 1; VARCHAR UTF-8 text or a
// number (as its text); BLOB anything (numbers as their text); DATE, TIMESTAMP,
// TIMESTAMPTZ, TIME text DuckDB reads as one. NULL fits every type. A user's column whose
// values do not all fit its type becomes VARCHAR, or BLOB when they are not all text.
bool fits(duck_type t, const sqlite_value& v);

struct report {
    bool ran = false;  // false: nothing to copy (no SQLite files), or copied already
    int tables = 0;
    int64_t rows = 0;
    int progress_rows = 0;
    std::vector<std::string> notes;  // what was not copied as it was, and why
};

// Copies the SQLite engine's tables under data_dir/sql into the DuckDB database `file`
// (made when absent) unless its marker says it was done. Runs before the engine opens
// the file. memory_limit_bytes: DuckDB's memory bound while it runs. Errors: io_error (a
// file cannot be read, DuckDB refused a statement: nothing was committed), unsupported
// (a SQLite file's expansion progress has a format this build does not know).
result<report> migrate(const std::filesystem::path& data_dir, const std::filesystem::path& file,
                       uint64_t memory_limit_bytes);

}  // namespace sluice::sql::duck_migration
