#pragma once

// The expansions' HTTP API on the broker's HTTP listener (docs/expansions.md):
//   POST   /v1/expansions           create (JSON body), 201 with the expansion
//   GET    /v1/expansions           {"expansions": [...]}
//   GET    /v1/expansions/T         one, by target
//   DELETE /v1/expansions/T[?drop_target=true]
// Errors answer {"error": {"kind", "message"}} with 400, 404, 409, 503 or 500.

#include <string>

#include "expansion/service.h"

namespace sluice::sql {
class http_server;
}

namespace sluice::expansion {

void add_http_routes(sql::http_server& server, service& svc);

// An expansion as the API shows it (one JSON object).
std::string status_json(const status& s);

}  // namespace sluice::expansion
