#include "console/console.h"

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "console/assets.h"
#include "security/gate.h"
#include "sql/http/http_server.h"
#include "sql/json_text.h"

namespace sluice::console {
namespace {

namespace http = sql::http;

const asset* find_asset(std::string_view name) {
    if (name.empty()) name = "index.html";
    for (const auto& a : assets())
        if (a.name == name) return &a;
    return nullptr;
}

bool accepts_gzip(const http::http_request& req) {
    auto h = req.header("accept-encoding");
    return h && h->find("gzip") != std::string_view::npos;
}

// The page loads only its own script and style, and talks only to this server.
constexpr std::string_view csp =
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "frame-ancestors 'none'";

void serve_asset(const http::http_request& req, http::http_response& resp) {
    const asset* a = find_asset(req.path_suffix);
    if (!a) {
        resp.send_error(404, "not_found", "no console file at " + req.path);
        return;
    }
    // Revalidated on every load (no-cache), so a new broker's console is seen at once;
    // an unchanged file costs a 304.
    http::header_list headers = {{"Cache-Control", "no-cache"},
                                 {"ETag", std::string(a->etag)},
                                 {"Vary", "Accept-Encoding"},
                                 {"X-Content-Type-Options", "nosniff"},
                                 {"Content-Security-Policy", std::string(csp)}};
    if (auto inm = req.header("if-none-match"); inm && *inm == a->etag) {
        resp.send(304, a->content_type, {}, headers);
        return;
    }
    if (accepts_gzip(req)) {
        headers.emplace_back("Content-Encoding", "gzip");
        resp.send(200, a->content_type, a->gzip, headers);
    } else {
        resp.send(200, a->content_type, a->data, headers);
    }
}

// {"user":"alice","authenticated":true,"certificate":false,"security":true,
//  "cluster":{"describe":true,"alter":false}}; "certificate": the user is the client
// certificate's name (mutual TLS), so there is nothing to log out of.
void whoami(const sql::http_server& server, const http::http_request& req,
            http::http_response& resp) {
    const security::gate* gate = server.gate();
    const security::resource cluster{security::resource_kind::cluster, {}};
    auto may = [&](security::action a) {
        return !gate || gate->allowed(req.principal, a, cluster);
    };
    const bool secured = gate && gate->authentication_required();
    std::string user;
    sql::append_json_string(user, req.principal.user);
    resp.send(200, "application/json",
              fmt::format("{{\"user\":{},\"authenticated\":{},\"certificate\":{},"
                          "\"security\":{},\"cluster\":{{\"describe\":{},\"alter\":{}}}}}\n",
                          user, req.principal.authenticated, req.principal_from_certificate,
                          secured, may(security::action::describe), may(security::action::alter)));
}

}  // namespace

void add_console_routes(sql::http_server& server) {
    server.add_route("GET", "/ui", [](const http::http_request&, http::http_response& resp) {
        resp.send(301, "text/plain; charset=utf-8", "/ui/\n", {{"Location", "/ui/"}});
    });
    server.add_route("GET", "/ui/*", serve_asset);
    server.add_route("GET", "/v1/whoami",
                     [&server](const http::http_request& req, http::http_response& resp) {
                         whoami(server, req, resp);
                     });
}

}  // namespace sluice::console
