#pragma once

// A read-only virtual table whose rows a function computes when a scan starts: what the
// system tables are made of. Small tables only (the rows are held for the scan).

#include <sqlite3.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sql/engine.h"

namespace sluice::sql {

struct row_table_spec {
    std::string declaration;  // "CREATE TABLE x(topic TEXT, partitions INTEGER, ...)"
    std::function<outcome<std::vector<std::vector<value>>>()> rows;
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
