#include "app/sql_bounds_options.h"

#include <cstdint>
#include <limits>

namespace sluice::app {

void add_sql_bound_options(CLI::App& cmd, sql::resource_bounds& b) {
    // A session needs some memory to run anything at all (its parse, its page cache).
    constexpr uint64_t min_memory = uint64_t{1} << 20;
    constexpr uint64_t max_bytes = uint64_t{1} << 50;
    cmd.add_option("--sql-session-memory", b.session_memory,
                   "Bytes of memory the statements of one SQL session may hold in SQLite (in "
                   "effect per statement); beyond, the statement fails with SQLSTATE 53200")
        ->check(CLI::Range(min_memory, max_bytes))
        ->capture_default_str();
    cmd.add_option("--sql-memory", b.total_memory,
                   "Bytes of memory every SQL session together may hold in SQLite; beyond, "
                   "statements fail with SQLSTATE 53200 (HTTP 503). The catalog and expansions "
                   "are not counted")
        ->check(CLI::Range(min_memory, max_bytes))
        ->capture_default_str();
    cmd.add_option("--sql-max-value-bytes", b.max_value_bytes,
                   "Longest string or blob a SQL statement may make or read (SQLite's "
                   "SQLITE_LIMIT_LENGTH); beyond, SQLSTATE 54000")
        ->check(CLI::Range(int64_t{1024}, int64_t{std::numeric_limits<int32_t>::max()}))
        ->capture_default_str();
    cmd.add_option("--sql-session-temp-bytes", b.session_temp,
                   "Bytes of temporary files (sorts, temporary tables) one SQL session may have, "
                   "in <data-dir>/sql-tmp; beyond, the statement fails with SQLSTATE 53400")
        ->check(CLI::Range(uint64_t{64} << 10, max_bytes))
        ->capture_default_str();
    cmd.add_option("--sql-temp-bytes", b.total_temp,
                   "Bytes of temporary files every SQL session together may have; beyond, "
                   "SQLSTATE 53400 (HTTP 503)")
        ->check(CLI::Range(uint64_t{64} << 10, max_bytes))
        ->capture_default_str();
    cmd.add_option("--sql-threads", b.threads,
                   "Threads the DuckDB engine (the default --sql-engine) runs statements on, every "
                   "session's together; 0: one per core. The SQLite engine runs each statement "
                   "on its session's thread")
        ->check(CLI::Range(uint32_t{0}, uint32_t{1024}))
        ->capture_default_str();
}

}  // namespace sluice::app
