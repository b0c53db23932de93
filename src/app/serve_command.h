#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace sluice::app {

// `sluice serve`: runs a broker until SIGTERM or SIGINT.
void add_serve_command(CLI::App& app, int& exit_code);

}  // namespace sluice::app
