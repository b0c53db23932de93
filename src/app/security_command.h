#pragma once

#include <CLI/CLI.hpp>

namespace sluice::app {

// `sluice user add|passwd|remove|list` and `sluice policy put|get|delete|attach|detach|
// list`: on a running broker (--server, its HTTP address, as an admin) or on a stopped
// broker's data directory (--data-dir), which is how the first admin is created
// (docs/security.md).
void add_security_commands(CLI::App& app, int& exit_code);

}  // namespace sluice::app
