#pragma once

#include <CLI/CLI.hpp>

namespace sluice::app {

// `sluice produce TOPIC`: one record per line of stdin.
void add_produce_command(CLI::App& app, int& exit_code);

}  // namespace sluice::app
