#include "app/sql_bounds_options.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

namespace sluice::app {

CLI::Validator removed_with_sqlite_engine(std::string value, std::string instead) {
    return {[value = std::move(value), instead = std::move(instead)](std::string& given) {
                if (!value.empty() && given != value) return std::string();
                return "the SQLite SQL engine was removed, DuckDB is the only one: " + instead +
                       ". A data directory the SQLite engine served moves its tables and "
                       "expansion targets into DuckDB by itself on the first start (docs/sql.md, "
                       "\"The SQLite engine was removed\")";
            },
            "", "removed_with_sqlite_engine"};
}

void add_sql_bound_options(CLI::App& cmd, sql::resource_bounds& b) {
    // A session needs some memory to run anything at all (its parse, its page cache).
    constexpr uint64_t min_memory = uint64_t{1} << 20;
    constexpr uint64_t max_bytes = uint64_t{1} << 50;
    cmd.add_option("--sql-session-memory", b.session_memory,
                   "Bytes of memory the statements of one SQL session may hold outside DuckDB's "
                   "buffer pool, which spills instead (in effect per statement); beyond, the "
                   "statement fails with SQLSTATE 53200")
        ->check(CLI::Range(min_memory, max_bytes))
        ->capture_default_str();
    cmd.add_option("--sql-memory", b.total_memory,
                   "Bytes of memory every SQL session together may hold (DuckDB's memory_limit); beyond, "
                   "statements fail with SQLSTATE 53200 (HTTP 503). The catalog and expansions "
                   "are not counted")
        ->check(CLI::Range(min_memory, max_bytes))
        ->capture_default_str();
    cmd.add_option("--sql-max-value-bytes", b.max_value_bytes,
                   "Longest string or blob a SQL statement may make or read; beyond, SQLSTATE "
                   "54000")
        ->check(CLI::Range(int64_t{1024}, int64_t{std::numeric_limits<int32_t>::max()}))
        ->capture_default_str();
    // The SQLite engine's bound of one session's temporary files; DuckDB bounds their total.
    cmd.add_option("--sql-session-temp-bytes")
        ->type_name("UINT")
        ->description("Removed with the SQLite engine: DuckDB bounds the temporary files of "
                      "every SQL session together (--sql-temp-bytes)")
        ->check(removed_with_sqlite_engine(
            "", "drop this setting: --sql-temp-bytes bounds every session's together"));
    cmd.add_option("--sql-temp-bytes", b.total_temp,
                   "Bytes of temporary files every SQL session together may have; beyond, "
                   "SQLSTATE 53400 (HTTP 503)")
        ->check(CLI::Range(uint64_t{64} << 10, max_bytes))
        ->capture_default_str();
    cmd.add_option("--sql-threads", b.threads,
                   "Threads DuckDB runs SQL statements on, every session's together; 0: one per "
                   "core")
        ->check(CLI::Range(uint32_t{0}, uint32_t{1024}))
        ->capture_default_str();
}

}  // namespace sluice::app
