#pragma once

// Routes of the HTTP server: method + path -> handler. A path is exact ("/v1/sql") or a
// prefix when it ends in "/*" ("/v1/expansions/*" matches "/v1/expansions/orders"; the
// request's path_suffix is then "orders"). An exact route wins over a prefix, a longer
// prefix over a shorter. A path that some route matches under another method answers
// 405 with Allow; a path no route matches answers 404. Thread-safe: routes may be added
// while requests are served.

#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sql/http/http_message.h"
#include "sql/http/http_response.h"

namespace sluice::sql {

// Runs on the connection's thread; must answer through `resp` exactly once.
using route_handler = std::function<void(const http::http_request& req, http::http_response& resp)>;

namespace http {

class router {
  public:
    // Adds a route, or replaces the handler of the same method and path.
    void add(std::string method, std::string path, route_handler h);

    struct match {
        std::shared_ptr<const route_handler> handler;  // null: see status
        std::string suffix;                            // for a prefix route
        int status = 404;                              // 404 or 405 when no handler
        std::string allow;                             // for 405: "GET, POST"
    };
    match find(std::string_view method, std::string_view path) const;

  private:
    struct route {
        std::string method;
        std::string path;  // without the "*" of a prefix
        bool prefix = false;
        std::shared_ptr<const route_handler> handler;
    };
    mutable std::shared_mutex _mu;
    std::vector<route> _routes;
};

}  // namespace http
}  // namespace sluice::sql
