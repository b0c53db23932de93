#pragma once

#include <CLI/CLI.hpp>

namespace sluice::app {

// `sluice group list|describe|delete|reset-offsets`: consumer groups of a running
// broker, as Kafka's kafka-consumer-groups shows and changes them.
void add_group_commands(CLI::App& app, int& exit_code);

}  // namespace sluice::app
