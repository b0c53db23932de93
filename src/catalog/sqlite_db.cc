#include "catalog/sqlite_db.h"

#include <fmt/format.h>

#include <utility>

namespace sluice::catalog::detail {

namespace {

// ENOSPC when SQLite failed for want of space (SQLITE_FULL, or an I/O error whose errno
// says so), else the errno SQLite saw: is_no_space() then tells a full disk.
int failure_errno(sqlite3* conn, int rc) {
    if ((rc & 0xff) == SQLITE_FULL) return ENOSPC;
    return (rc & 0xff) == SQLITE_IOERR ? sqlite3_system_errno(conn) : 0;
}

}  // namespace

statement::statement(statement&& o) noexcept
    : _conn(o._conn), _stmt(std::exchange(o._stmt, nullptr)) {}

statement::~statement() {
    sqlite3_finalize(_stmt);
}

// Binding only fails for an out-of-range index or out of memory; either surfaces again
// as an error from step(), so the return codes are not checked here.
statement& statement::bind(int i, std::string_view text) {
    sqlite3_bind_text64(_stmt, i, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    return *this;
}

statement& statement::bind(int i, int64_t v) {
    sqlite3_bind_int64(_stmt, i, v);
    return *this;
}

statement& statement::bind_null(int i) {
    sqlite3_bind_null(_stmt, i);
    return *this;
}

statement& statement::bind_blob(int i, std::span<const uint8_t> b) {
    sqlite3_bind_blob64(_stmt, i, b.data(), b.size(), SQLITE_TRANSIENT);
    return *this;
}

statement& statement::reset() {
    // The return code repeats the last step()'s error, already reported there.
    sqlite3_reset(_stmt);
    return *this;
}

result<bool> statement::step() {
    int rc = sqlite3_step(_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    // Callers check for duplicates first; this mapping covers a writer they cannot see.
    bool dup = rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE;
    return error{dup ? errc::already_exists : errc::io_error,
                 fmt::format("sqlite: {} (code {})", sqlite3_errmsg(_conn),
                             sqlite3_extended_errcode(_conn)),
                 failure_errno(_conn, rc)};
}

result<void> statement::run() {
    for (;;) {
        auto r = step();
        if (!r) return r.err();
        if (!*r) return {};
    }
}

int64_t statement::column_int64(int i) const {
    return sqlite3_column_int64(_stmt, i);
}

std::string statement::column_text(int i) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(_stmt, i));
    // Size is read after the text pointer, as SQLite's documentation requires.
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(_stmt, i))) : std::string();
}

std::span<const uint8_t> statement::column_blob(int i) const {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(_stmt, i));
    return {p, p ? static_cast<size_t>(sqlite3_column_bytes(_stmt, i)) : 0};
}

result<std::unique_ptr<db>> db::open(const std::filesystem::path& path) {
    sqlite3* conn = nullptr;
    // FULLMUTEX keeps the connection itself safe; the catalog serialises its own
    // multi-statement sequences with a mutex of its own.
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
    int rc = sqlite3_open_v2(path.c_str(), &conn, flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = conn ? sqlite3_errmsg(conn) : sqlite3_errstr(rc);
        sqlite3_close_v2(conn);
        return error{errc::io_error,
                     fmt::format("cannot open catalog database {}: {}", path.string(), msg)};
    }
    sqlite3_extended_result_codes(conn, 1);
    keep_wal_files(conn, "main");
    // Statement journals and sorts in memory: the catalog's statements are small, and a
    // temporary file is one more write a full disk refuses (docs/operations.md).
    sqlite3_exec(conn, "PRAGMA temp_store = MEMORY", nullptr, nullptr, nullptr);
    return std::unique_ptr<db>(new db(conn));
}

void keep_wal_files(sqlite3* conn, const char* schema) {
    int on = 1;
    (void)sqlite3_file_control(conn, schema, SQLITE_FCNTL_PERSIST_WAL, &on);
}

db::~db() {
    sqlite3_close_v2(_conn);
}

result<void> db::exec(const std::string& sql) {
    char* msg = nullptr;
    int rc = sqlite3_exec(_conn, sql.c_str(), nullptr, nullptr, &msg);
    if (rc == SQLITE_OK) return {};
    std::string text = msg ? msg : sqlite3_errstr(rc);
    sqlite3_free(msg);
    return error{errc::io_error, fmt::format("sqlite: {} (code {})", text, rc),
                 failure_errno(_conn, rc)};
}

result<statement> db::prepare(std::string_view sql) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(_conn, sql.data(), static_cast<int>(sql.size()), &s, nullptr);
    if (rc != SQLITE_OK) {
        return error{errc::io_error,
                     fmt::format("sqlite: cannot prepare '{}': {}", sql, sqlite3_errmsg(_conn))};
    }
    return statement(_conn, s);
}

result<int64_t> db::query_int(std::string_view sql) {
    auto st = prepare(sql);
    if (!st) return st.err();
    auto row = st->step();
    if (!row) return row.err();
    if (!*row) return error{errc::io_error, fmt::format("sqlite: '{}' returned no row", sql)};
    return st->column_int64(0);
}

result<std::string> db::query_text(std::string_view sql) {
    auto st = prepare(sql);
    if (!st) return st.err();
    auto row = st->step();
    if (!row) return row.err();
    if (!*row) return error{errc::io_error, fmt::format("sqlite: '{}' returned no row", sql)};
    return st->column_text(0);
}

std::string db::errmsg() const {
    return sqlite3_errmsg(_conn);
}
int db::extended_errcode() const {
    return sqlite3_extended_errcode(_conn);
}

result<write_txn> write_txn::begin(db& d) {
    auto r = d.exec("BEGIN IMMEDIATE");
    if (!r) return r.err();
    return write_txn(&d);
}

write_txn::~write_txn() {
    // Nothing to report to from a destructor; a failed rollback leaves the transaction
    // to be rolled back when the connection closes.
    if (_db) (void)_db->exec("ROLLBACK");
}

result<void> write_txn::commit() {
    auto r = _db->exec("COMMIT");
    // On a failed COMMIT SQLite may keep the transaction open; the destructor rolls back.
    if (r) _db = nullptr;
    return r;
}

}  // namespace sluice::catalog::detail
