#pragma once

// POST /v1/sql: runs the statements of the request body and answers the last one's
// result as JSON, CSV or NDJSON (docs/sql-http.md).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sql/engine.h"
#include "sql/http/http_message.h"
#include "sql/http/http_response.h"
#include "sql/http/result_format.h"
#include "sql/sql_text.h"

namespace sluice::sql::http {

struct sql_endpoint_options {
    // Output held back before the response commits to 200: an error within it is still
    // a proper 400. Beyond it the result streams and a later error ends the body
    // instead. 64 KiB holds the quick failures (syntax, unknown table, a limit hit
    // early) of any result while keeping per-request memory small.
    size_t commit_bytes = 64 * 1024;
    // Once streaming, output is flushed at least this often when rows trickle in.
    int flush_interval_ms = 200;
};

// What a request asks for, from its query string and Accept header.
struct sql_request_options {
    result_format format = result_format::json;
    std::optional<uint64_t> timeout_ms;
    std::optional<uint64_t> max_rows;
    std::vector<value> params;
};
// An error message for a 400, or empty.
std::string parse_sql_request_options(const http_request& req, sql_request_options& out);

// A `param=` value: a canonical decimal integer ("-12", not "012") that fits int64 is an
// INTEGER, a decimal number with a fraction or exponent a REAL, anything else TEXT.
value param_value(std::string_view s);

// The HTTP status for a failure before any output: 503 shutting_down, 403
// not_authorized (a policy denies a topic), 400 for everything else (the caller's
// statement, limits or cancellation).
int status_for(failure f);

// Runs as req.principal.
void handle_sql(engine& eng, const sql_endpoint_options& opts, const http_request& req,
                http_response& resp);

}  // namespace sluice::sql::http
