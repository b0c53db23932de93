#pragma once

// `sluice serve` flags of the SQL resource bounds (sql/budget.h, docs/operations.md#sql).

#include <CLI/CLI.hpp>

#include "sql/budget.h"

namespace sluice::app {

void add_sql_bound_options(CLI::App& cmd, sql::resource_bounds& b);

}  // namespace sluice::app
