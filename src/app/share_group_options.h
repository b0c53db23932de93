#pragma once

// `sluice serve` flags of share groups (group/share/, docs/configuration.md).

#include <CLI/CLI.hpp>

#include "group/share/coordinator.h"

namespace sluice::app {

void add_share_group_options(CLI::App& cmd, group::share::config& c);

}  // namespace sluice::app
