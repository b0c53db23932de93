#pragma once

// The shared catalog's database connection (docs/shared-mode.md): a PostgreSQL-compatible
// server reached with libpq. Statements take parameters ($1, $2, ...) as text, never
// spliced into SQL. Work runs in transactions at a stated isolation level; a transaction
// that the server aborted for a serialization failure (SQLSTATE 40001) or a deadlock
// (40P01), or whose connection was lost before COMMIT, is run again from the start after
// a backoff, reconnecting as needed, until a deadline. A connection lost during COMMIT
// leaves the outcome unknown: that is reported, not retried.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

struct pg_conn;    // libpq's PGconn
struct pg_result;  // libpq's PGresult

namespace sluice::shared {

enum class isolation_level { read_committed, repeatable_read, serializable };

struct pg_config {
    std::string url;  // postgresql://USER[:PASSWORD]@HOST:PORT/DBNAME[?PARAMS]
    std::chrono::milliseconds connect_timeout{5000};
    // All attempts of one call: reconnections and transactions run again.
    std::chrono::milliseconds retry_deadline{30000};
    std::chrono::milliseconds backoff_initial{20};
    std::chrono::milliseconds backoff_max{1000};
};

using pg_param = std::optional<std::string>;  // std::nullopt is SQL NULL

// The rows of one statement, as text (libpq's text format).
struct pg_rows {
    std::vector<std::string> columns;
    std::vector<std::vector<std::optional<std::string>>> rows;
    int64_t affected = 0;  // rows inserted, updated or deleted
    std::chrono::steady_clock::time_point received;  // when its result arrived

    size_t size() const { return rows.size(); }
    bool is_null(size_t row, size_t col) const { return !rows.at(row).at(col).has_value(); }
    const std::string& text(size_t row, size_t col) const;  // "" for NULL
    int64_t int64(size_t row, size_t col) const;            // 0 for NULL
};

struct pg_statement {
    std::string sql;
    std::vector<pg_param> params;
};

// A transaction in progress, handed to the body of pg_database::transact. Its START
// TRANSACTION goes with its first statement (one round trip for both).
class pg_transaction {
  public:
    result<pg_rows> exec(std::string_view sql, const std::vector<pg_param>& params = {});
    // Sends the statements at once and then reads their results (libpq's pipeline mode):
    // one round trip for all of them, where exec takes one each. The server runs them one
    // after another, each as exec would; the first that fails fails the call, and those
    // after it do not run. `then_commit`: COMMIT goes with them, as commit() (the body
    // then runs no more statements), its (empty) rows last.
    result<std::vector<pg_rows>> pipeline(const std::vector<pg_statement>& statements,
                                          bool then_commit = false);
    // Delivered to listeners (pg_listener) when the transaction commits.
    result<void> notify(std::string_view channel, std::string_view payload);
    static pg_statement notify_statement(std::string_view channel, std::string_view payload);
    // Commits now, so that the body can time it (else transact commits after the body);
    // the body then runs no more statements. A connection lost here leaves the outcome
    // unknown, as in transact.
    result<void> commit();
    // When the transaction began (its START TRANSACTION was sent).
    std::chrono::steady_clock::time_point began() const { return _began; }

  private:
    friend class pg_database;
    pg_transaction(pg_conn* conn, const char* begin) : _conn(conn), _begin(begin) {}
    // The error of a failed result; notes its SQLSTATE and whether the connection is lost.
    error failure(pg_result* res);
    pg_conn* _conn;
    const char* _begin;  // START TRANSACTION ..., until sent with the first statement
    std::chrono::steady_clock::time_point _began;
    bool _committing = false;  // COMMIT sent
    bool _committed = false;   // and it succeeded
    // The SQLSTATE of the statement that failed, if one did ("" otherwise), so that
    // transact can tell a retriable failure from the body's own error.
    std::string _failed_state;
    bool _connection_lost = false;
};

// One connection (calls are serialized); make one per thread that talks to the database.
class pg_database {
  public:
    static result<std::unique_ptr<pg_database>> connect(pg_config config);
    ~pg_database();
    pg_database(const pg_database&) = delete;
    pg_database& operator=(const pg_database&) = delete;

    // Runs `body` in one transaction at `level` and commits it. The body may run more than
    // once, so it must do nothing outside the database but compute its result.
    template <typename T>
    result<T> transact(isolation_level level,
                       const std::function<result<T>(pg_transaction&)>& body) {
        std::optional<T> out;
        auto r = run(level, [&](pg_transaction& tx) -> result<void> {
            auto v = body(tx);
            if (!v) return v.err();
            out = std::move(v).value();
            return {};
        });
        if (!r) return r.err();
        return std::move(*out);
    }
    result<void> transact(isolation_level level,
                          const std::function<result<void>(pg_transaction&)>& body) {
        return run(level, body);
    }

    // One statement in its own transaction (read committed), retried likewise.
    result<pg_rows> exec(std::string_view sql, const std::vector<pg_param>& params = {});

    // Times a lost connection was made again (for tests and metrics).
    int reconnects() const { return _reconnects; }

  private:
    explicit pg_database(pg_config config) : _config(std::move(config)) {}
    result<void> run(isolation_level level,
                     const std::function<result<void>(pg_transaction&)>& body);
    result<void> ensure_connected(std::chrono::steady_clock::time_point deadline);

    pg_config _config;
    std::mutex _mu;
    pg_conn* _conn = nullptr;
    bool _dropped = false;  // closed after it was lost: the next connection is a reconnect
    int _reconnects = 0;
};

struct pg_notification {
    std::string channel;
    std::string payload;
};

// A connection that LISTENs on channels and waits for NOTIFY. When the connection is
// lost it connects again and LISTENs again; notifications sent meanwhile are lost, so
// a wait that reconnected says so and the caller reads the state it waits on afresh.
class pg_listener {
  public:
    static result<std::unique_ptr<pg_listener>> connect(pg_config config,
                                                        std::vector<std::string> channels);
    ~pg_listener();
    pg_listener(const pg_listener&) = delete;
    pg_listener& operator=(const pg_listener&) = delete;

    struct wait_outcome {
        std::vector<pg_notification> notifications;
        bool reconnected = false;  // the connection was made again: re-read the state
    };
    // Returns when notifications arrive, the connection was remade, or `timeout` passed
    // (then with nothing). Fails when the database cannot be reached within `timeout`.
    result<wait_outcome> wait(std::chrono::milliseconds timeout);

  private:
    pg_listener(pg_config config, std::vector<std::string> channels)
        : _config(std::move(config)), _channels(std::move(channels)) {}
    result<void> open(std::chrono::steady_clock::time_point deadline);

    pg_config _config;
    std::vector<std::string> _channels;
    pg_conn* _conn = nullptr;
};

}  // namespace sluice::shared
