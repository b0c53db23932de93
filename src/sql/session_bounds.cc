// What keeps one user's SQL from taking the broker down: SQLite's limits on each
// session's connection, the options that keep SQL away from the process (pointers,
// extensions), statements refused outright, and the errors of each bound
// (docs/operations.md#sql, docs/sql.md#limits-and-cancellation).

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <limits>

#include "sql/sql_text.h"
#include "sql/sqlite_session.h"

namespace sluice::sql {

namespace {

// The longest SQL text a statement may have. The HTTP endpoint takes 1 MiB bodies; over
// the PostgreSQL wire a multi-row INSERT may be longer. Parsing costs memory a few times
// the text's size, which the session's memory bound covers as well.
constexpr int max_sql_length = 16 << 20;

// SQLite's limits besides the length (which is --sql-max-value-bytes), set on every
// session so that they do not depend on how the library was built. Debian's build has
// these values as its maxima, except VARIABLE_NUMBER (250,000): a statement is bounded
// by its memory long before. VDBE_OP is left as built: a program's size is memory too.
struct limit_setting {
    int id;
    int value;
};
constexpr limit_setting fixed_limits[] = {
    {SQLITE_LIMIT_SQL_LENGTH, max_sql_length},
    {SQLITE_LIMIT_COLUMN, 2000},
    // Expressions and compound SELECTs are walked recursively on the session's thread.
    {SQLITE_LIMIT_EXPR_DEPTH, 1000},
    {SQLITE_LIMIT_COMPOUND_SELECT, 500},
    {SQLITE_LIMIT_FUNCTION_ARG, 127},
    {SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 50000},
    {SQLITE_LIMIT_TRIGGER_DEPTH, 1000},
    // No helper threads for sorts: their allocations would be charged to nobody.
    {SQLITE_LIMIT_WORKER_THREADS, 0},
};

// SQLite's messages for limits other than the length that it reports as SQLITE_ERROR.
constexpr const char* limit_messages[] = {
    "too many columns",          "Expression tree is too large", "too many terms in compound",
    "too many arguments on",     "LIKE or GLOB pattern too",     "too many SQL variables",
    "parser stack overflow",     "too many FROM clause terms",   "too many levels of trigger",
    "at most 64 tables in a join",
};

}  // namespace

void sqlite_session::restrict_connection() {
    sqlite3_limit(_db, SQLITE_LIMIT_LENGTH,
                  static_cast<int>(std::min<int64_t>(_src.opts->bounds.max_value_bytes,
                                                     std::numeric_limits<int>::max())));
    for (const auto& l : fixed_limits) sqlite3_limit(_db, l.id, l.value);
    int ignored = 0;
    // fts3_tokenizer(name, pointer) would register a tokenizer at any address; the
    // one-argument form, which returns a pointer, is refused by the authorizer
    // (refused_function).
    sqlite3_db_config(_db, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, &ignored);
    sqlite3_db_config(_db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, &ignored);
    // No deliberate corruption of a schema's file: writable_schema, journal_mode=OFF,
    // writes into shadow tables and sqlite_dbpage are refused.
    sqlite3_db_config(_db, SQLITE_DBCONFIG_DEFENSIVE, 1, &ignored);
    // trusted_schema stays on: every schema's file is written through these sessions
    // (no file from elsewhere is attached), and users' views over the topic tables
    // need it, the virtual tables not being marked innocuous.
}

std::string sqlite_session::refused_function(const char* name) {
    if (!name) return {};
    if (sqlite3_stricmp(name, "fts3_tokenizer") == 0)
        return "fts3_tokenizer() is not available: it hands out and takes process pointers";
    if (sqlite3_stricmp(name, "load_extension") == 0)
        return "load_extension() is not available: the broker loads no code from SQL";
    return {};
}

std::optional<query_error> sqlite_session::refuse_statement(std::string_view sql) {
    size_t i = skip_separators(sql);
    if (sqlite3_stricmp(next_word(sql, i).c_str(), "VACUUM") != 0) return std::nullopt;
    return query_error{failure::read_only,
                       "VACUUM is not available: it rewrites a schema's whole file under an "
                       "exclusive lock, which would stop the expansions writing into it"};
}

bool sqlite_session::no_space(int rc) const {
    // SQLITE_FULL, or an I/O error of a write the file system refused for want of space
    // (a -wal or -shm file it could not extend, a journal).
    if ((rc & 0xff) == SQLITE_FULL) return true;
    return (rc & 0xff) == SQLITE_IOERR && sqlite3_system_errno(_db) == ENOSPC;
}

std::optional<query_error> sqlite_session::resource_error(int rc,
                                                          const std::string& msg) const {
    auto e = bound_error(rc, msg);
    if (e && e->kind != failure::program_limit) log_refusal(*e, _ctx.principal());
    return e;
}

std::optional<query_error> sqlite_session::bound_error(int rc, const std::string& msg) const {
    const budget_refusal why = _account->refusal();
    switch (rc & 0xff) {
        case SQLITE_NOMEM:
            if (why == budget_refusal::total_memory || why == budget_refusal::session_memory)
                return refusal_error(why);
            return query_error{failure::memory_exhausted, "out of memory"};
        case SQLITE_FULL:
            if (why == budget_refusal::total_temp || why == budget_refusal::session_temp)
                return refusal_error(why);
            return query_error{failure::disk_full, msg};  // the data directory's disk
        case SQLITE_TOOBIG:
            if (msg.find("statement too long") != std::string::npos)
                return query_error{failure::program_limit,
                                   fmt::format("the SQL text is longer than {}",
                                               format_bytes(max_sql_length))};
            return refusal_error(budget_refusal::value_length);
        case SQLITE_IOERR:
            if (no_space(rc)) return query_error{failure::disk_full, msg};
            return std::nullopt;
        case SQLITE_ERROR:
            for (const char* m : limit_messages)
                if (msg.find(m) != std::string::npos)
                    return query_error{failure::program_limit, msg};
            return std::nullopt;
        default:
            return std::nullopt;
    }
}

}  // namespace sluice::sql
