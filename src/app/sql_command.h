#pragma once

#include <CLI/CLI.hpp>

namespace sluice::app {

// `sluice sql [--server HOST:PORT] "SELECT ..."`: runs SQL on a broker's HTTP endpoint
// (docs/sql-http.md) and prints a table on a terminal, CSV when piped.
void add_sql_command(CLI::App& app, int& exit_code);

}  // namespace sluice::app
