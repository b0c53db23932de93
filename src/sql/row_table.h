#pragma once

// A read-only virtual table whose rows a function computes when a scan starts: what the
// system tables and the catalog are made of. Small tables only (the rows are held for
// the scan). An equality on a column (a join's key) skips the other rows.

#include <sqlite3.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sql/engine.h"

namespace sluice::sql {

struct row_table_spec {
    std::string declaration;  // "CREATE TABLE x(topic TEXT, partitions INTEGER, ...)"
    std::function<outcome<std::vector<std::vector<value>>>()> rows;
    // When set, the rows are kept for as long as it returns the same number (the
    // catalog's: for one statement), so that a join scanning the table again and again
    // computes them once. Without it every scan computes them afresh.
    std::function<uint64_t()> generation;
};

// Registers the module on `db` and creates schema.<name> for each spec. Once per
// connection and module name: each schema of row tables registers its own module.
outcome<bool> create_row_tables(sqlite3* db, const std::string& schema,
                                std::map<std::string, row_table_spec> specs,
                                const std::string& module = "sluice_rows");

// Runs one of the engine's own statements (no rows); the error names the statement.
outcome<bool> exec_sql(sqlite3* db, const std::string& sql);

// Sets SQLite's result from a value (for xColumn).
void set_result(sqlite3_context* c, const value& v);

}  // namespace sluice::sql
