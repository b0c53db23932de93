#pragma once

// What the commands that talk to a running broker share: connecting with the security
// flags (`--bootstrap`, `--command-config`, `-X`), error texts, topic metadata, times
// on the command line, and output as a table on a terminal or JSON (`--format json`).

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/admin_client.h"
#include "app/client_config.h"
#include "common/result.h"
#include "protocol/messages/metadata.h"
#include "sql/engine.h"

namespace sluice::app {

// Where a command connects and how.
struct broker_flags {
    std::string bootstrap = "127.0.0.1:9092";
    client_flags client;
};

// Adds --bootstrap/-b, --command-config and -X.
void add_broker_flags(CLI::App* cmd, broker_flags& flags);

// A connected, authenticated admin_client.
result<std::unique_ptr<admin_client>> connect_admin(const broker_flags& flags);

// "error: WHAT" on stderr; returns 1, the exit code of a failure that is no usage error.
int fail(const std::string& what);

// A Kafka error code's name, with the broker's message when it gave one.
std::string error_text(int16_t code, const std::optional<std::string>& msg = std::nullopt);

// Metadata for one topic, or every topic (nullopt), never creating one.
result<protocol::metadata_response> fetch_metadata(admin_client& c,
                                                   const std::optional<std::string>& topic);

// A time on the command line: milliseconds since the epoch, or an ISO-8601 UTC date
// and time "2024-05-01T12:00:00" (a trailing Z and fractional seconds allowed).
std::optional<int64_t> parse_time(const std::string& text);

enum class output_format { table, json };

// Adds --format table|json (CLI11 refuses any other word: a usage error).
void add_format_flag(CLI::App* cmd, std::string& format);
output_format format_of(const std::string& format);

// Rows under named columns: a psql-style table, or one JSON object per row and line
// (keys are the column names).
struct output_rows {
    std::vector<std::string> columns;
    std::vector<std::vector<sql::value>> rows;
};
std::string render(const output_rows& out, output_format f);

}  // namespace sluice::app
