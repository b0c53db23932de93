#pragma once

// `sluice serve --config FILE`: a TOML file of settings whose keys are serve's long
// flag names (docs/configuration.md). The file is parsed strictly: a syntax error, an
// unknown key or a value of the wrong type is an error naming the file and line, found
// before the broker touches anything.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "common/result.h"

namespace sluice::app {

// The command line (without the program name) with `serve --config FILE` replaced by the
// file's settings as flags, placed before the command line's own. A flag that the
// command line gives (by its long or short name) replaces the file's setting, repeatable
// ones included; `serve` is the subcommand that knows the names. Errors read
// "FILE:LINE:COLUMN: reason".
result<std::vector<std::string>> with_config_file(std::vector<std::string> args, CLI::App& serve);

}  // namespace sluice::app
