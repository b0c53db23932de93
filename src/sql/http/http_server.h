#pragma once

// The broker's HTTP server (`sluice serve --http HOST:PORT`): POST /v1/sql and
// GET /v1/health, and the routes later features add. One thread per connection
// (net::blocking_server), HTTP/1.1 with keep-alive. docs/sql-http.md is the reference.

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "net/blocking_server.h"
#include "net/tls.h"
#include "sql/engine.h"
#include "sql/http/http_message.h"
#include "sql/http/router.h"
#include "sql/http/sql_endpoint.h"

namespace sluice::security {
class gate;
}

namespace sluice::sql {

struct http_options {
    // Connections with a request in (their first head read) at once. When all are taken,
    // a new client takes the slot of the connection idle the longest between requests,
    // and without one it is answered 503. Connections still sending their first head
    // are counted apart (four times as many), and the oldest of them gives way to a new
    // one.
    size_t max_connections = 64;
    // A connection idle between requests, or a request or response stalled, for this
    // long is closed, so that idle keep-alive clients do not hold threads forever.
    std::chrono::milliseconds io_timeout{60'000};
    // A request head (request line and headers) must be complete within this time: from
    // the connection's start for its first request (the TLS handshake included), from
    // its first byte for the next ones. Past it the client gets 408 and the connection
    // closes, so bytes trickled in under io_timeout cannot hold a slot.
    std::chrono::milliseconds header_timeout{10'000};
    http::parse_limits limits;
    http::sql_endpoint_options sql;
    // Set: HTTPS, a TLS handshake on every connection before its first request. When
    // the context asks for client certificates (mutual TLS), a verified certificate's
    // common name is the principal of requests that send no Basic credentials.
    std::shared_ptr<net::tls_context> tls;
    // Set: the broker's users and policies. When it requires authentication, every
    // request but GET /v1/health needs Basic credentials or a client certificate, both
    // accepted over HTTPS only (401 otherwise); routes read the principal from
    // http_request::principal. Must outlive the server.
    const security::gate* gate = nullptr;
    // GET and HEAD of these paths need no credentials even when the gate requires them
    // (health probes of load balancers and orchestrators; /metrics when so configured;
    // the console's files). An entry ending in "/*" is a prefix ("/ui/*").
    std::vector<std::string> anonymous_paths{"/v1/health"};
};

class http_server {
  public:
    static result<std::unique_ptr<http_server>> start(const net::host_port& addr, engine& eng,
                                                      http_options opts = {});
    ~http_server();  // stop()

    // Adds a route (method, exact path or a "/prefix/*"), before start or at any time;
    // thread-safe. See http/router.h for matching.
    void add_route(std::string method, std::string path, route_handler h);

    const net::host_port& address() const;
    // Whether it serves HTTPS; the gate routes check principals against (null: none).
    bool is_https() const { return _opts.tls != nullptr; }
    const security::gate* gate() const { return _opts.gate; }
    // Stops accepting, closes every connection (running statements are canceled) and
    // waits for their threads.
    void stop();

  private:
    http_server(engine& eng, http_options opts);
    // `first_head_timeout`: the first request head's deadline (shorter for a client
    // that came over the limit of starting connections).
    void serve(net::stream_socket& sock, std::chrono::milliseconds first_head_timeout);
    // `cert_user`: the connection's verified client certificate's common name.
    void dispatch(http::http_request& req, http::http_response& resp, bool tls,
                  const std::optional<std::string>& cert_user);
    // Sets req.principal from the request's credentials or the client certificate; false
    // after answering 401 when the gate requires a login and neither is valid.
    bool authenticate(http::http_request& req, http::http_response& resp, bool tls,
                      const std::optional<std::string>& cert_user) const;

    engine& _eng;
    http_options _opts;
    http::router _router;
    std::unique_ptr<net::blocking_server> _server;
};

// Answers an operation's error: 400 `invalid` (errc::invalid_argument), 404 `not_found`,
// 409 `already_exists`, 503 `busy` (errc::timed_out), otherwise 500 `internal`; the
// body is {"error": {"kind", "message"}}.
void send_error(http::http_response& resp, const error& e);

// Whether the request's principal may perform `a` on `r`. Without a gate, anyone may.
// False after answering 403 with a message naming the principal, the action and the
// resource (logged under `component`).
bool authorize(const http_server& server, const http::http_request& req, http::http_response& resp,
               security::action a, const security::resource& r, std::string_view component);

// The same on sluice:cluster, for routes that manage the cluster (expansions, users,
// policies).
bool authorize_cluster(const http_server& server, const http::http_request& req,
                       http::http_response& resp, security::action a, std::string_view component);

}  // namespace sluice::sql
