#pragma once

// What the serving layer refuses before DuckDB binds a statement, beside what
// duck/user_tables.h refuses (docs/sql.md, "Engines"). Internal to src/sql/duck.
//
// - PRAGMA, by its first word: DuckDB runs pragmas as it parses (PRAGMA database_list
//   shows the database file), before user_tables.h's refusal could see them. read_only.
// - Savepoints (SAVEPOINT, RELEASE [SAVEPOINT], ROLLBACK [WORK|TRANSACTION] TO): DuckDB has
//   none and its parser answers a syntax error; they answer not_supported (SQLSTATE 0A000,
//   PostgreSQL's feature_not_supported), which clients and ORMs tell apart from a mistake.
// - What shows the server's files (issue 21, as the SQLite engine refuses PRAGMA
//   database_list): DuckDB's duckdb_databases(), pragma_database_list (PRAGMA
//   database_list), duckdb_settings() and pg_settings (temp_directory, allowed_paths),
//   duckdb_temporary_files(), duckdb_extensions(), duckdb_secrets(), glob(), and
//   current_setting() of a setting naming a directory, path or file. read_only (42501),
//   in a query, its CTEs and subqueries, EXPLAIN, CREATE VIEW/TABLE AS and INSERT ...
//   SELECT.

#include <cstddef>
#include <optional>
#include <string_view>

#include "sql/engine.h"

namespace duckdb {
class SQLStatement;
}

namespace sluice::sql::duck {

// The SQLite engine's bounds on a statement's shape, kept on DuckDB with the same
// messages (program_limit, 54000): the SQL text's length, the terms of a compound SELECT
// (both walked recursively), the result's columns; DuckDB's own max_expression_depth
// (1000, as SQLite's) answers "Expression tree is too large".
constexpr size_t max_sql_text = 16 << 20;
constexpr size_t max_compound_terms = 500;
constexpr size_t max_result_columns = 2000;

// The error for SQL text over max_sql_text, a PRAGMA or a savepoint statement (by its
// leading words), or nullopt.
std::optional<query_error> text_refused(std::string_view sql);

// The error for a compound SELECT of more than max_compound_terms, or nullopt.
std::optional<query_error> compound_refused(const duckdb::SQLStatement& s);

// Why `s` may not run because it would show the server's files, or because it compares
// before a `->>` (`a = b ->> 'p'`, which DuckDB reads as `(a = b) ->> 'p'`, PostgreSQL
// and SQLite as `a = (b ->> 'p')`: 42601 asking for the parentheses), or nullopt.
std::optional<query_error> walk_refused(duckdb::SQLStatement& s);

}  // namespace sluice::sql::duck
