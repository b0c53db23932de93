#pragma once

#include <CLI/CLI.hpp>

namespace sluice::app {

// `sluice expansion create|list|drop`: manages a running broker's expansions through
// its HTTP API (docs/expansions.md).
void add_expansion_commands(CLI::App& app, int& exit_code);

}  // namespace sluice::app
