#include "sql/functions.h"

#include <fmt/format.h>

#include "common/version.h"
#include "sql/dialect_functions.h"

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

void version_function(sqlite3_context* c, int, sqlite3_value**) {
    const auto text = version_text();
    sqlite3_result_text(c, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

}  // namespace

std::string version_text() { return version_text(fmt::format("SQLite {}", sqlite3_libversion())); }

std::string version_text(std::string_view engine) {
    // 15.0: the PostgreSQL version the pg listener reports (pg_options::server_version).
    return fmt::format("PostgreSQL 15.0 on x86_64-pc-linux-gnu, {} engine (Sluice {} {})", engine,
                       version(), build_commit());
}

outcome<bool> register_functions(sqlite3* db, statement_context* ctx) {
    int rc = sqlite3_create_function_v2(db, "sluice_last_scan", 0, SQLITE_UTF8, ctx, last_scan,
                                        nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK)
        return query_error{failure::internal,
                           fmt::format("sluice_last_scan: {}", sqlite3_errstr(rc))};
    // Deterministic: the same text for the life of the process.
    rc = sqlite3_create_function_v2(db, "version", 0, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                                    version_function, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK)
        return query_error{failure::internal, fmt::format("version: {}", sqlite3_errstr(rc))};
    return register_dialect_functions(db);
}

}  // namespace sluice::sql
