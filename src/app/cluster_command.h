#pragma once

#include <CLI/CLI.hpp>

namespace sluice::app {

// `sluice cluster info`: the cluster id, controller and brokers of a running broker.
void add_cluster_commands(CLI::App& app, int& exit_code);

// `sluice topic alter-config NAME --set KEY=VALUE --delete KEY`, under `topic`.
void add_topic_alter_config(CLI::App* topic, int& exit_code);

}  // namespace sluice::app
