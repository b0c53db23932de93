#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "app/expansion_command.h"
#include "app/serve_command.h"
#include "app/sql_command.h"
#include "app/topic_command.h"

int main(int argc, char** argv) {
    try {
        CLI::App app{"Sluice: a Kafka-compatible event broker whose topics are also SQL tables"};
        app.require_subcommand(1);
        int exit_code = 0;
        sluice::app::add_serve_command(app, exit_code);
        sluice::app::add_topic_commands(app, exit_code);
        sluice::app::add_sql_command(app, exit_code);
        sluice::app::add_expansion_commands(app, exit_code);
        CLI11_PARSE(app, argc, argv);
        return exit_code;
    } catch (const std::exception& e) {
        // Only the unrecoverable gets here (STYLE.md); say what it was and fail.
        std::fprintf(stderr, "sluice: fatal: %s\n", e.what());
        return 1;
    }
}
