#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace sluice::app {

// "sluice 0.1.0 (commit 0123456789ab)": what `sluice --version`, `sluice version` and
// the broker's start-up log say.
std::string version_line();

// `sluice version` and `sluice --version`.
void add_version_command(CLI::App& app, int& exit_code);

}  // namespace sluice::app
