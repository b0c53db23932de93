#pragma once

// The broker's HTTP server (`sluice serve --http HOST:PORT`): POST /v1/sql and
// GET /v1/health, and the routes later features add. One thread per connection
// (net::blocking_server), HTTP/1.1 with keep-alive. docs/sql-http.md is the reference.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "common/result.h"
#include "net/blocking_server.h"
#include "sql/engine.h"
#include "sql/http/http_message.h"
#include "sql/http/router.h"
#include "sql/http/sql_endpoint.h"

namespace sluice::sql {

struct http_options {
    size_t max_connections = 64;
    // A connection idle between requests, or a request or response stalled, for this
    // long is closed, so that idle keep-alive clients do not hold threads forever.
    std::chrono::milliseconds io_timeout{60'000};
    http::parse_limits limits;
    http::sql_endpoint_options sql;
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
    // Stops accepting, closes every connection (running statements are canceled) and
    // waits for their threads.
    void stop();

  private:
    http_server(engine& eng, http_options opts);
    void serve(net::stream_socket& sock);
    void dispatch(http::http_request& req, http::http_response& resp);

    engine& _eng;
    http_options _opts;
    http::router _router;
    std::unique_ptr<net::blocking_server> _server;
};

}  // namespace sluice::sql
