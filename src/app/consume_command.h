#pragma once

#include <CLI/CLI.hpp>

namespace sluice::app {

// `sluice consume TOPIC`: records to stdout, from a point in the topic to its end, or
// on and on with --follow.
void add_consume_command(CLI::App& app, int& exit_code);

}  // namespace sluice::app
