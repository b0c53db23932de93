#include "app/http_admin.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cstdio>

namespace sluice::app {

CLI::Option* add_server_flags(CLI::App* sub, server_flags& s) {
    auto* server = sub->add_option("--server,-s", s.server,
                                   "The broker's HTTP address (serve --http): HOST:PORT, "
                                   "http://HOST:PORT or https://HOST:PORT");
    server->capture_default_str();
    sub->add_option("--auth", s.auth_user,
                    "Log in as this user (HTTPS only); the password is read from $SLUICE_PASSWORD");
    sub->add_option("--tls-ca", s.tls_ca, "PEM file of the CA that signed the broker's certificate");
    sub->add_option("--tls-cert", s.tls_cert,
                    "PEM file of a client certificate, for a broker that asks for one (mTLS)");
    sub->add_option("--tls-key", s.tls_key, "PEM file of the --tls-cert certificate's key");
    return server;
}

std::optional<sql::http::http_reply> admin_call(std::string_view program, const server_flags& s,
                                                std::string_view method, const std::string& target,
                                                const std::string& body, int& code) {
    namespace http = sql::http;
    auto server = http::parse_server_flags(s.server, s.auth_user, s.tls_ca, s.tls_cert, s.tls_key);
    if (!server) {
        std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(),
                     server.err().message.c_str());
        code = exit_refused;
        return std::nullopt;
    }
    auto r = http::http_call(server->address, method, target, body, server->opts);
    if (auto* e = std::get_if<http::client_error>(&r)) {
        std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(),
                     e->message.c_str());
        code = exit_connection;
        return std::nullopt;
    }
    auto reply = std::get<http::http_reply>(std::move(r));
    if (reply.status >= 200 && reply.status < 300) return reply;
    std::string message = fmt::format("HTTP {}", reply.status);
    simdjson::dom::parser p;
    std::string_view m;
    if (!p.parse(reply.body)["error"]["message"].get(m)) message = std::string(m);
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(),
                 message.c_str());
    code = exit_refused;
    return std::nullopt;
}

}  // namespace sluice::app
