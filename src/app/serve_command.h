#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace sluice::app {

// `sluice serve`: runs a broker until SIGTERM or SIGINT.
void add_serve_command(CLI::App& app, int& exit_code);

// The command line (without the program name) with `serve --config FILE` replaced by the
// TOML file's settings as flags, placed before the command line's own. A flag that the
// command line gives (by its long or short name) replaces the file's setting, repeatable
// ones included; `serve` is the subcommand that knows the names. Throws CLI::FileError or
// CLI::ConversionError for a missing or malformed file.
std::vector<std::string> with_config_file(std::vector<std::string> args, const CLI::App& serve);

}  // namespace sluice::app
