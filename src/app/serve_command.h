#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace sluice::app {

// `sluice serve`: runs a broker until SIGTERM or SIGINT.
void add_serve_command(CLI::App& app, int& exit_code);

// The command line (without the program name) with `serve --config FILE` replaced by the
// TOML file's settings as flags, placed before the command line's own. Throws
// CLI::FileError or CLI::ConversionError for a missing or malformed file.
std::vector<std::string> with_config_file(std::vector<std::string> args);

}  // namespace sluice::app
