#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "app/cluster_command.h"
#include "app/config_file.h"
#include "app/consume_command.h"
#include "app/expansion_command.h"
#include "app/group_command.h"
#include "app/produce_command.h"
#include "app/security_command.h"
#include "app/serve_command.h"
#include "app/sql_command.h"
#include "app/topic_command.h"
#include "app/usage_errors.h"
#include "app/version_command.h"

int main(int argc, char** argv) {
    try {
        // Named here, since CLI11 takes the program's name only from argv, which it does not see.
        CLI::App app{"Sluice: a Kafka-compatible event broker whose topics are also SQL tables",
                     "sluice"};
        app.require_subcommand(1);
        int exit_code = 0;
        sluice::app::add_version_command(app, exit_code);
        sluice::app::add_serve_command(app, exit_code);
        sluice::app::add_topic_commands(app, exit_code);
        sluice::app::add_group_commands(app, exit_code);
        sluice::app::add_produce_command(app, exit_code);
        sluice::app::add_consume_command(app, exit_code);
        sluice::app::add_cluster_commands(app, exit_code);
        sluice::app::add_sql_command(app, exit_code);
        sluice::app::add_expansion_commands(app, exit_code);
        sluice::app::add_security_commands(app, exit_code);
        std::vector<std::string> args(argv + 1, argv + argc);
        auto with_file =
            sluice::app::with_config_file(std::move(args), *app.get_subcommand("serve"));
        if (!with_file) {
            std::fprintf(stderr, "sluice serve: --config: %s\n", with_file.err().message.c_str());
            return sluice::app::usage_exit_code;
        }
        args = std::move(*with_file);
        try {
            // CLI11 takes them last first; the originals stay for the error message.
            app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
        } catch (const CLI::ParseError& e) {
            return sluice::app::report_parse_error(app, e, args);
        }
        return exit_code;
    } catch (const std::exception& e) {
        // Only the unrecoverable gets here (STYLE.md); say what it was and fail.
        std::fprintf(stderr, "sluice: fatal: %s\n", e.what());
        return 1;
    }
}
