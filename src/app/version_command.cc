#include "app/version_command.h"

#include <fmt/format.h>

#include <cstdio>

#include "common/version.h"

namespace sluice::app {

std::string version_line() {
    return fmt::format("sluice {} (commit {})", version(), build_commit());
}

void add_version_command(CLI::App& app, int& exit_code) {
    app.set_version_flag("--version", version_line(), "Print the version and commit, then exit");
    auto* cmd = app.add_subcommand("version", "Print the version and the commit it was built from");
    cmd->callback([&exit_code] {
        std::printf("%s\n", version_line().c_str());
        exit_code = 0;
    });
}

}  // namespace sluice::app
