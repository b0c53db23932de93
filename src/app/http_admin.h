#pragma once

// One call to a running broker's HTTP API, for the admin commands (`sluice expansion`,
// `sluice user`, `sluice policy`): the server flags, the exchange, and the broker's
// error printed as "<program>: <message>".

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "sql/http/sql_client.h"

namespace sluice::app {

// Exit codes of the admin commands: 0 success, 1 refused by the broker (or a bad
// argument), 2 no connection.
constexpr int exit_refused = 1;
constexpr int exit_connection = 2;

struct server_flags {
    std::string server = "127.0.0.1:8080";
    std::string auth_user;
    std::string tls_ca;
    std::string tls_cert, tls_key;  // mTLS
};

// --server, --auth, --tls-ca, --tls-cert and --tls-key on a command. Returns the --server option.
CLI::Option* add_server_flags(CLI::App* sub, server_flags& s);

// The reply when its status is 2xx; otherwise prints why and sets `code`.
std::optional<sql::http::http_reply> admin_call(std::string_view program, const server_flags& s,
                                                std::string_view method, const std::string& target,
                                                const std::string& body, int& code);

}  // namespace sluice::app
