#pragma once

// Query results as JSON, CSV (RFC 4180) or NDJSON, written row by row so that a large
// result streams. Shared by the HTTP endpoint and the `sluice sql` command line, which
// re-renders what it receives with the same writers. The mapping of SQLite's values to
// each format is stated in docs/sql-http.md ("Values").

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.h"
#include "sql/engine.h"
#include "sql/json_text.h"

namespace sluice::sql::http {

enum class result_format { json, csv, ndjson };

// "json", "csv", "ndjson".
std::optional<result_format> parse_format(std::string_view name);
// The first media type of an Accept header that names a format (application/json,
// text/csv, application/x-ndjson, also application/ndjson); nullopt when none does.
std::optional<result_format> format_from_accept(std::string_view accept);
std::string_view content_type(result_format f);
std::string_view format_name(result_format f);

// ---- value encodings

// Shortest text that reads back as the same double, always with a '.' or an exponent
// so that it never reads back as an integer ("1.0", "1e+300"). Not for NaN or infinity.
std::string format_real(double d);
// INTEGER -> number, REAL -> number (NaN and infinities -> null), TEXT -> string,
// BLOB -> string when valid UTF-8, else {"base64": "..."}, NULL -> null.
void append_json_value(std::string& out, const value& v);
// The storage class of a value ("INTEGER", "REAL", "TEXT", "BLOB"); empty for NULL.
std::string_view storage_class(const value& v);

// {"error":{"kind":...,"sqlstate":...,"message":...}} (sqlstate left out when empty).
std::string error_json(std::string_view kind, std::string_view sqlstate, std::string_view message);
std::string error_json(const query_error& e);

struct result_summary {
    uint64_t row_count = 0;
    double elapsed_ms = 0;
};

// Writes one statement's result into `out` (the caller drains it as it likes). Calls:
// begin_rows, row*, then finish or fail; or no_rows then finish.
class result_writer {
  public:
    virtual ~result_writer() = default;
    // A column whose decl_type is empty takes the storage class of its value in the
    // first row (SQLite types values, not expressions), or no type when that is NULL.
    virtual void begin_rows(const std::vector<column>& cols) = 0;
    virtual void row(const std::vector<value>& r) = 0;
    // A statement that returns no rows: its leading keyword and the rows it changed.
    virtual void no_rows(std::string_view command, int64_t changes) = 0;
    virtual void finish(const result_summary& s) = 0;
    // The statement failed after begin_rows: ends the output with the error, in the
    // form each format documents.
    virtual void fail(const query_error& e, const result_summary& s) = 0;
};

std::unique_ptr<result_writer> make_result_writer(result_format f, std::string& out);

}  // namespace sluice::sql::http
