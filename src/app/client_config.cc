#include "app/client_config.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <string_view>

namespace sluice::app {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

// "KEY=VALUE" (a file also takes Java's "KEY: VALUE", `separators` ":="); false without
// a separator or a key.
bool split_property(std::string_view line, std::string_view separators, std::string& key,
                    std::string& value) {
    auto at = line.find_first_of(separators);
    if (at == std::string_view::npos) return false;
    key = trim(line.substr(0, at));
    value = trim(line.substr(at + 1));
    return !key.empty();
}

// One property into the config; `where` prefixes the error ("FILE:LINE" or "-X").
result<void> apply(client_config& c, const std::string& where, const std::string& key,
                   const std::string& value) {
    using p = client_config::protocol;
    if (key == "security.protocol") {
        static const std::map<std::string, p, std::less<>> names{
            {"PLAINTEXT", p::plaintext},
            {"SSL", p::ssl},
            {"SASL_PLAINTEXT", p::sasl_plaintext},
            {"SASL_SSL", p::sasl_ssl}};
        std::string upper = value;
        for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        auto it = names.find(upper);
        if (it == names.end())
            return {errc::invalid_argument,
                    fmt::format("{}: security.protocol '{}': PLAINTEXT, SSL, SASL_PLAINTEXT or "
                                "SASL_SSL",
                                where, value)};
        c.security = it->second;
    } else if (key == "sasl.mechanism" || key == "sasl.mechanisms") {  // librdkafka takes both
        if (value != "PLAIN" && value != "SCRAM-SHA-256" && value != "SCRAM-SHA-512")
            return {errc::invalid_argument,
                    fmt::format("{}: {} '{}': PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", where, key,
                                value)};
        c.sasl_mechanism = value;
    } else if (key == "sasl.username") {
        c.sasl_username = value;
    } else if (key == "sasl.password") {
        c.sasl_password = value;
    } else if (key == "ssl.ca.location") {
        c.ssl_ca = value;
    } else if (key == "ssl.certificate.location") {
        c.ssl_cert = value;
    } else if (key == "ssl.key.location") {
        c.ssl_key = value;
    } else if (key == "ssl.endpoint.identification.algorithm") {
        // librdkafka's default since 1.9, and what this client always does.
        if (value != "https")
            return {errc::invalid_argument,
                    fmt::format("{}: {} '{}': only https (the broker's certificate must name the "
                                "host of --bootstrap)",
                                where, key, value)};
    } else {
        return {errc::invalid_argument,
                fmt::format("{}: unknown property '{}' (known: security.protocol, sasl.mechanism, "
                            "sasl.username, sasl.password, ssl.ca.location, "
                            "ssl.certificate.location, ssl.key.location, "
                            "ssl.endpoint.identification.algorithm)",
                            where, key)};
    }
    return {};
}

result<void> read_file(client_config& c, const std::string& path) {
    std::ifstream in(path);
    if (!in)
        return {errc::not_found,
                fmt::format("--command-config {}: {}", path, std::strerror(errno))};
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        auto text = trim(line);
        if (text.empty() || text.front() == '#' || text.front() == '!') continue;
        const std::string where = fmt::format("{}:{}", path, n);
        std::string key, value;
        if (!split_property(text, "=:", key, value))
            return {errc::invalid_argument, where + ": expected KEY=VALUE"};
        if (auto r = apply(c, where, key, value); !r) return r;
    }
    return {};
}

// What the settings together need: a mechanism and a user for SASL, a key with a
// certificate.
result<void> check_complete(const client_config& c) {
    if (c.sasl()) {
        if (c.sasl_mechanism.empty())
            return {errc::invalid_argument,
                    "security.protocol SASL_*: set sasl.mechanism (PLAIN, SCRAM-SHA-256 or "
                    "SCRAM-SHA-512)"};
        if (c.sasl_username.empty())
            return {errc::invalid_argument, "security.protocol SASL_*: set sasl.username"};
    }
    if (c.ssl_cert.empty() != c.ssl_key.empty())
        return {errc::invalid_argument,
                "ssl.certificate.location and ssl.key.location go together"};
    return {};
}

}  // namespace

void add_client_flags(CLI::App* cmd, client_flags& flags) {
    cmd->add_option("--command-config", flags.command_config,
                    "Client properties file (KEY=VALUE lines, as for Kafka's tools) with "
                    "librdkafka's names: security.protocol, sasl.mechanism, sasl.username, "
                    "sasl.password, ssl.ca.location, ssl.certificate.location, ssl.key.location");
    cmd->add_option("-X", flags.overrides,
                    "One client property KEY=VALUE (repeatable), after --command-config's");
}

result<client_config> load_client_config(const client_flags& flags) {
    client_config c;
    if (!flags.command_config.empty()) {
        if (auto r = read_file(c, flags.command_config); !r) return r.err();
    }
    for (const auto& kv : flags.overrides) {
        std::string key, value;
        if (!split_property(kv, "=", key, value))
            return {errc::invalid_argument, "-X wants KEY=VALUE, got '" + kv + "'"};
        if (auto r = apply(c, "-X", key, value); !r) return r.err();
    }
    if (auto r = check_complete(c); !r) return r.err();
    return c;
}

}  // namespace sluice::app
