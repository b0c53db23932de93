#pragma once

// What the command line says when it cannot be parsed: the unknown command with the
// ones that exist, an unknown flag with the closest one, and exit code 2 for every
// usage error (README, "Commands"). CLI11's own texts ("A subcommand is required",
// exit codes 106 and 109) say less.

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace sluice::app {

// The exit code of a usage error (a command line that does not parse, a bad setting).
inline constexpr int usage_exit_code = 2;

// Prints why `args` (in command-line order) did not parse and returns the exit code:
// 0 for --help (printed as CLI11 prints it), usage_exit_code otherwise.
int report_parse_error(CLI::App& app, const CLI::ParseError& e,
                       const std::vector<std::string>& args);

// Levenshtein distance, for suggestions.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace sluice::app
