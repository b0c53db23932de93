#pragma once

// `sluice serve` flags of the SQL resource bounds (sql/budget.h, docs/operations.md#sql).

#include <CLI/CLI.hpp>

#include <string>

#include "sql/budget.h"

namespace sluice::app {

// Refuses a setting that only the removed SQLite engine had: any value when `value` is
// empty, else that value only; the error says what to do `instead`.
CLI::Validator removed_with_sqlite_engine(std::string value, std::string instead);

void add_sql_bound_options(CLI::App& cmd, sql::resource_bounds& b);

}  // namespace sluice::app
