#pragma once

// How a command that speaks Kafka reaches its broker: `--command-config FILE` (a
// properties file, as Kafka's tools take) and `-X KEY=VALUE`, with the property names
// librdkafka and kcat use. docs/security.md lists them.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "common/result.h"

namespace sluice::app {

struct client_config {
    enum class protocol { plaintext, ssl, sasl_plaintext, sasl_ssl };
    protocol security = protocol::plaintext;
    std::string sasl_mechanism;  // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
    std::string sasl_username, sasl_password;
    std::string ssl_ca;             // empty: the system's CAs
    std::string ssl_cert, ssl_key;  // a client certificate (mutual TLS)

    bool tls() const { return security == protocol::ssl || security == protocol::sasl_ssl; }
    bool sasl() const {
        return security == protocol::sasl_plaintext || security == protocol::sasl_ssl;
    }
};

// The flags as given, turned into a client_config by load_client_config().
struct client_flags {
    std::string command_config;          // --command-config FILE
    std::vector<std::string> overrides;  // -X KEY=VALUE, after the file's
};

// Adds --command-config and -X to a command.
void add_client_flags(CLI::App* cmd, client_flags& flags);

// The file's properties, then the -X ones; an unknown property, a malformed line
// ("FILE:LINE: ...") or an incomplete setting (SASL without a user) is an error.
result<client_config> load_client_config(const client_flags& flags);

}  // namespace sluice::app
