#include "sql/functions.h"

#include <fmt/format.h>

namespace sluice::sql {

namespace {

void last_scan(sqlite3_context* c, int, sqlite3_value**) {
    const auto* ctx = static_cast<statement_context*>(sqlite3_user_data(c));
    const auto& s = ctx->last_scan();
    const auto json = fmt::format(
        R"({{"partitions_scanned":{},"segments_read":{},"batches_read":{},"records_read":{},"bytes_read":{}}})",
        s.partitions_scanned, s.segments_read, s.batches_read, s.records_read, s.bytes_read);
    sqlite3_result_text(c, json.data(), static_cast<int>(json.size()), SQLITE_TRANSIENT);
}

}  // namespace

outcome<bool> register_functions(sqlite3* db, statement_context* ctx) {
    int rc = sqlite3_create_function_v2(db, "sluice_last_scan", 0, SQLITE_UTF8, ctx, last_scan,
                                        nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK)
        return query_error{failure::internal,
                           fmt::format("sluice_last_scan: {}", sqlite3_errstr(rc))};
    return true;
}

}  // namespace sluice::sql
