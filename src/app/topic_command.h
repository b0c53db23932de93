#pragma once

#include <CLI/CLI.hpp>

namespace sluice::app {

// `sluice topic create|list|describe|delete`: topic administration over the Kafka
// protocol against a running broker.
void add_topic_commands(CLI::App& app, int& exit_code);

}  // namespace sluice::app
