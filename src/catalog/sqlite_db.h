#pragma once

// Thin RAII wrappers over SQLite's C API, private to the catalog. Nothing here throws:
// every failure comes back as a result<> carrying SQLite's own message.

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"

namespace sluice::catalog::detail {

class db;

// Keeps a WAL database's -wal and -shm files when the last connection closes (SQLite's
// SQLITE_FCNTL_PERSIST_WAL): opening the database again, at the next start, then needs no
// new file and no new block, so it works on a full disk (docs/operations.md).
void keep_wal_files(sqlite3* conn, const char* schema);

// One prepared statement. step() returns true while rows remain.
class statement {
  public:
    statement(statement&&) noexcept;
    statement& operator=(statement&&) = delete;
    statement(const statement&) = delete;
    ~statement();

    // Parameters are 1-based, as in SQLite.
    statement& bind(int i, std::string_view text);
    statement& bind(int i, int64_t v);
    statement& bind_blob(int i, std::span<const uint8_t> b);
    statement& bind_null(int i);

    // Ready to run again; bindings are kept until rebound.
    statement& reset();

    // A violated PRIMARY KEY or UNIQUE constraint is errc::already_exists; any other
    // failure is errc::io_error.
    result<bool> step();
    // Runs to completion, for statements that return no rows.
    result<void> run();

    int64_t column_int64(int i) const;
    std::string column_text(int i) const;
    std::span<const uint8_t> column_blob(int i) const;

  private:
    friend class db;
    statement(sqlite3* conn, sqlite3_stmt* s) : _conn(conn), _stmt(s) {}
    sqlite3* _conn;
    sqlite3_stmt* _stmt;
};

class db {
  public:
    static result<std::unique_ptr<db>> open(const std::filesystem::path& path);
    db(const db&) = delete;
    db& operator=(const db&) = delete;
    ~db();

    // Runs one or more statements that return no rows.
    result<void> exec(const std::string& sql);
    result<statement> prepare(std::string_view sql);
    // The first column of the first row, as an integer (for PRAGMA reads).
    result<int64_t> query_int(std::string_view sql);
    result<std::string> query_text(std::string_view sql);

    // Last error of this connection, for messages.
    std::string errmsg() const;
    int extended_errcode() const;

  private:
    explicit db(sqlite3* c) : _conn(c) {}
    sqlite3* _conn;
};

// A write transaction: BEGIN IMMEDIATE takes the write lock up front, so a read-then-write
// sequence cannot fail half way with SQLITE_BUSY. Rolls back unless commit() succeeded.
class write_txn {
  public:
    static result<write_txn> begin(db& d);
    write_txn(write_txn&& o) noexcept : _db(o._db) { o._db = nullptr; }
    write_txn& operator=(write_txn&&) = delete;
    ~write_txn();
    result<void> commit();

  private:
    explicit write_txn(db* d) : _db(d) {}
    db* _db;
};

}  // namespace sluice::catalog::detail
