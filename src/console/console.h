#pragma once

// The web console (docs/console.md): its files under /ui/, served without credentials
// (they hold no data; every page reads through the API with the user's credentials),
// and GET /v1/whoami, which tells the console who is logged in and what the user may
// administer.

namespace sluice::sql {
class http_server;
}

namespace sluice::console {

void add_console_routes(sql::http_server& server);

}  // namespace sluice::console
