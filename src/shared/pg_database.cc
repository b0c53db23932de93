#include "shared/pg_database.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <random>
#include <thread>

#include <fmt/format.h>

namespace sluice::shared {

namespace {

using steady = std::chrono::steady_clock;

// Class 08 (connection exception), and the server shutting down or starting (57P01..03):
// the statement did not run; a new connection may succeed.
bool connection_state(std::string_view state) {
    return state.substr(0, 2) == "08" || state == "57P01" || state == "57P02" || state == "57P03";
}

// The server aborted the transaction so that another could go on: run it again.
bool retry_state(std::string_view state) {
    return state == "40001" || state == "40P01";
}

std::string one_line(const char* message) {
    std::string s = message != nullptr ? message : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    for (char& c : s) c = c == '\n' ? ' ' : c;
    return s;
}

PGconn* open_connection(const pg_config& config, std::string& failure) {
    std::string timeout =
        std::to_string(std::max<int64_t>(1, config.connect_timeout.count() / 1000));
    const char* keys[] = {"dbname", "connect_timeout", nullptr};
    const char* values[] = {config.url.c_str(), timeout.c_str(), nullptr};
    PGconn* conn = PQconnectdbParams(keys, values, 1);
    if (conn != nullptr && PQstatus(conn) == CONNECTION_OK) {
        // NOTICEs ("relation already exists, skipping") are not errors: not printed.
        PQsetNoticeProcessor(
            conn, [](void*, const char*) {}, nullptr);
        return conn;
    }
    failure = conn != nullptr ? one_line(PQerrorMessage(conn)) : "out of memory";
    PQfinish(conn);
    return nullptr;
}

// Waits before the next attempt (half to all of `backoff`, at random); false when that
// would pass the deadline.
bool back_off(std::chrono::milliseconds& backoff, const pg_config& config,
              steady::time_point deadline) {
    thread_local std::minstd_rand rng(std::random_device{}());
    auto wait = std::chrono::milliseconds(
        std::uniform_int_distribution<int64_t>(backoff.count() / 2, backoff.count())(rng));
    if (steady::now() + wait >= deadline) return false;
    std::this_thread::sleep_for(wait);
    backoff = std::min(backoff * 2, config.backoff_max);
    return true;
}

// A redacted URL for messages: the password, if any, is left out.
std::string where(const pg_config& config) {
    std::string url = config.url;
    size_t scheme = url.find("://");
    size_t at = url.find('@');
    if (scheme != std::string::npos && at != std::string::npos) {
        size_t colon = url.find(':', scheme + 3);
        if (colon != std::string::npos && colon < at)
            url = url.substr(0, colon) + ":***" + url.substr(at);
    }
    return url;
}

}  // namespace

const std::string& pg_rows::text(size_t row, size_t col) const {
    static const std::string empty;
    const auto& v = rows.at(row).at(col);
    return v ? *v : empty;
}

int64_t pg_rows::int64(size_t row, size_t col) const {
    const std::string& s = text(row, col);
    int64_t v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

namespace {

// The rows of a successful result.
pg_rows rows_of(PGresult* res) {
    pg_rows out;
    out.received = steady::now();
    int ncols = PQnfields(res);
    int nrows = PQntuples(res);
    for (int c = 0; c < ncols; ++c) out.columns.emplace_back(PQfname(res, c));
    out.rows.resize(nrows);
    for (int r = 0; r < nrows; ++r) {
        out.rows[r].reserve(ncols);
        for (int c = 0; c < ncols; ++c) {
            if (PQgetisnull(res, r, c)) {
                out.rows[r].emplace_back(std::nullopt);
            } else {
                out.rows[r].emplace_back(
                    std::string(PQgetvalue(res, r, c), PQgetlength(res, r, c)));
            }
        }
    }
    const char* affected = PQcmdTuples(res);
    if (affected != nullptr && *affected != 0) {
        std::from_chars(affected, affected + std::strlen(affected), out.affected);
    }
    return out;
}

bool succeeded(PGresult* res) {
    ExecStatusType status = PQresultStatus(res);
    return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
}

}  // namespace

error pg_transaction::failure(pg_result* res) {
    const char* state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    _failed_state = state != nullptr ? state : "";
    _connection_lost = PQstatus(_conn) == CONNECTION_BAD || connection_state(_failed_state);
    std::string message =
        one_line(res != nullptr ? PQresultErrorMessage(res) : PQerrorMessage(_conn));
    if (message.empty()) message = one_line(PQerrorMessage(_conn));
    errc code = _failed_state == "23505" ? errc::already_exists : errc::io_error;
    return error{code, fmt::format("{} [SQLSTATE {}]", message,
                                   _failed_state.empty() ? "none" : _failed_state)};
}

result<pg_rows> pg_transaction::exec(std::string_view sql, const std::vector<pg_param>& params) {
    if (_begin != nullptr) {  // START TRANSACTION and this in one round trip
        auto r = pipeline({{std::string(sql), params}});
        if (!r) return r.err();
        return std::move(r->front());
    }
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    std::string query(sql);
    PGresult* res = PQexecParams(_conn, query.c_str(), static_cast<int>(values.size()), nullptr,
                                 values.data(), nullptr, nullptr, 0);
    if (!succeeded(res)) {
        auto e = failure(res);
        PQclear(res);
        return e;
    }
    pg_rows out = rows_of(res);
    PQclear(res);
    return out;
}

result<std::vector<pg_rows>> pg_transaction::pipeline(const std::vector<pg_statement>& statements,
                                                      bool then_commit) {
    if (PQenterPipelineMode(_conn) != 1) return failure(nullptr);
    auto send = [&](const char* sql, const std::vector<pg_param>& params) {
        std::vector<const char*> values;
        values.reserve(params.size());
        for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
        return PQsendQueryParams(_conn, sql, static_cast<int>(values.size()), nullptr,
                                 values.data(), nullptr, nullptr, 0) == 1;
    };
    const bool with_begin = _begin != nullptr;
    bool sent = true;
    if (with_begin) {
        _began = steady::now();
        sent = send(_begin, {});
        _begin = nullptr;
    }
    for (size_t i = 0; sent && i < statements.size(); ++i)
        sent = send(statements[i].sql.c_str(), statements[i].params);
    if (sent && then_commit) {
        _committing = true;
        sent = send("COMMIT", {});
    }
    sent = sent && PQpipelineSync(_conn) == 1;
    // Results in order: each statement's, then a null; PGRES_PIPELINE_SYNC at the end. A
    // failed statement's error, then PGRES_PIPELINE_ABORTED for each one after it.
    std::vector<pg_rows> out;
    std::optional<error> failed;
    if (!sent) failed = failure(nullptr);
    for (bool after_null = false; sent;) {
        PGresult* res = PQgetResult(_conn);
        if (res == nullptr) {
            if (after_null || PQstatus(_conn) == CONNECTION_BAD) {  // nothing more will come
                if (!failed) failed = failure(nullptr);
                _connection_lost = true;
                break;
            }
            after_null = true;
            continue;
        }
        after_null = false;
        ExecStatusType status = PQresultStatus(res);
        if (status == PGRES_PIPELINE_SYNC) {
            PQclear(res);
            break;
        }
        if (succeeded(res)) {
            out.push_back(rows_of(res));
        } else if (status != PGRES_PIPELINE_ABORTED && !failed) {
            failed = failure(res);
        }
        PQclear(res);
    }
    if (!_connection_lost && PQexitPipelineMode(_conn) != 1) _connection_lost = true;
    if (failed) return *failed;
    if (with_begin) out.erase(out.begin());  // START TRANSACTION's
    if (then_commit) _committed = true;
    return out;
}

result<void> pg_transaction::notify(std::string_view channel, std::string_view payload) {
    auto s = notify_statement(channel, payload);
    auto r = exec(s.sql, s.params);
    if (!r) return r.err();
    return {};
}

pg_statement pg_transaction::notify_statement(std::string_view channel, std::string_view payload) {
    return {"SELECT pg_notify($1, $2)", {std::string(channel), std::string(payload)}};
}

result<void> pg_transaction::commit() {
    auto r = pipeline({}, true);
    if (!r) return r.err();
    return {};
}

result<std::unique_ptr<pg_database>> pg_database::connect(pg_config config) {
    if (config.url.empty()) return error{errc::invalid_config, "no PostgreSQL URL given"};
    std::unique_ptr<pg_database> db(new pg_database(std::move(config)));
    auto r = db->ensure_connected(steady::now() + db->_config.retry_deadline);
    if (!r) return r.err();
    return db;
}

pg_database::~pg_database() {
    PQfinish(_conn);
}

result<void> pg_database::ensure_connected(steady::time_point deadline) {
    if (_conn != nullptr && PQstatus(_conn) == CONNECTION_OK) return {};
    bool had = _conn != nullptr || _dropped;
    _dropped = false;
    PQfinish(_conn);
    _conn = nullptr;
    auto backoff = _config.backoff_initial;
    for (int attempts = 1;; ++attempts) {
        std::string failure;
        _conn = open_connection(_config, failure);
        if (_conn != nullptr) {
            if (had) ++_reconnects;
            return {};
        }
        if (!back_off(backoff, _config, deadline)) {
            return error{errc::io_error,
                         fmt::format("PostgreSQL at {} unreachable after {} attempts: {}",
                                     where(_config), attempts, failure)};
        }
    }
}

result<void> pg_database::run(isolation_level level,
                              const std::function<result<void>(pg_transaction&)>& body) {
    std::lock_guard lock(_mu);
    static constexpr const char* begin_sql[] = {"START TRANSACTION ISOLATION LEVEL READ COMMITTED",
                                                "START TRANSACTION ISOLATION LEVEL REPEATABLE READ",
                                                "START TRANSACTION ISOLATION LEVEL SERIALIZABLE"};
    auto deadline = steady::now() + _config.retry_deadline;
    auto backoff = _config.backoff_initial;
    for (int attempts = 1;; ++attempts) {
        auto c = ensure_connected(deadline);
        if (!c) return c.err();
        pg_transaction tx(_conn, begin_sql[static_cast<int>(level)]);
        result<void> outcome = body(tx);
        const bool begun = tx._begin == nullptr;
        if (outcome && (tx._committed || !begun)) return {};  // committed, or nothing to
        bool committing = tx._committing;
        if (outcome && !committing && tx._failed_state.empty() && !tx._connection_lost) {
            committing = true;
            auto commit = tx.exec("COMMIT");
            if (commit) return {};
            outcome = commit.err();
        }
        bool lost = tx._connection_lost || PQstatus(_conn) == CONNECTION_BAD;
        if (lost) {
            // Made again by ensure_connected (a connection lost in a pipeline may still
            // say CONNECTION_OK, with results pending).
            PQfinish(_conn);
            _conn = nullptr;
            _dropped = true;
        } else if (begun) {
            PGresult* rb = PQexec(_conn, "ROLLBACK");
            PQclear(rb);
        }
        if (lost && committing) {
            return error{errc::io_error,
                         fmt::format("PostgreSQL at {}: connection lost during COMMIT, outcome "
                                     "unknown: {}",
                                     where(_config),
                                     outcome ? "no answer" : outcome.err().message)};
        }
        bool again = lost || retry_state(tx._failed_state);
        if (!again) {
            if (!outcome) return outcome.err();
            // The body went on after a failed statement and returned success: the server
            // aborted the transaction, so its work is not there.
            return error{errc::io_error,
                         fmt::format("PostgreSQL at {}: a statement failed [SQLSTATE {}]",
                                     where(_config), tx._failed_state)};
        }
        if (!back_off(backoff, _config, deadline)) {
            return error{errc::timed_out,
                         fmt::format("PostgreSQL at {}: gave up after {} attempts ({} ms): {}",
                                     where(_config), attempts, _config.retry_deadline.count(),
                                     outcome ? "transaction aborted" : outcome.err().message)};
        }
    }
}

result<pg_rows> pg_database::exec(std::string_view sql, const std::vector<pg_param>& params) {
    return transact<pg_rows>(
        isolation_level::read_committed,
        [&](pg_transaction& tx) -> result<pg_rows> { return tx.exec(sql, params); });
}

result<std::unique_ptr<pg_listener>> pg_listener::connect(pg_config config,
                                                          std::vector<std::string> channels) {
    if (config.url.empty()) return error{errc::invalid_config, "no PostgreSQL URL given"};
    std::unique_ptr<pg_listener> l(new pg_listener(std::move(config), std::move(channels)));
    auto r = l->open(steady::now() + l->_config.retry_deadline);
    if (!r) return r.err();
    return l;
}

pg_listener::~pg_listener() {
    PQfinish(_conn);
}

result<void> pg_listener::open(steady::time_point deadline) {
    PQfinish(_conn);
    _conn = nullptr;
    auto backoff = _config.backoff_initial;
    std::string failure;
    for (int attempts = 1;; ++attempts) {
        _conn = open_connection(_config, failure);
        bool listening = _conn != nullptr;
        for (size_t i = 0; listening && i < _channels.size(); ++i) {
            char* quoted = PQescapeIdentifier(_conn, _channels[i].c_str(), _channels[i].size());
            std::string sql = std::string("LISTEN ") + (quoted != nullptr ? quoted : "\"\"");
            PQfreemem(quoted);
            PGresult* res = PQexec(_conn, sql.c_str());
            listening = PQresultStatus(res) == PGRES_COMMAND_OK;
            if (!listening) failure = one_line(PQerrorMessage(_conn));
            PQclear(res);
        }
        if (listening) return {};
        PQfinish(_conn);
        _conn = nullptr;
        if (!back_off(backoff, _config, deadline)) {
            return error{errc::io_error,
                         fmt::format("PostgreSQL at {}: cannot listen after {} attempts: {}",
                                     where(_config), attempts, failure)};
        }
    }
}

result<pg_listener::wait_outcome> pg_listener::wait(std::chrono::milliseconds timeout) {
    auto deadline = steady::now() + timeout;
    wait_outcome out;
    while (true) {
        if (_conn == nullptr || PQstatus(_conn) != CONNECTION_OK) {
            auto r = open(deadline);
            if (!r) return r.err();
            out.reconnected = true;
            return out;
        }
        if (PQconsumeInput(_conn) == 0) {  // the connection broke
            PQfinish(_conn);
            _conn = nullptr;
            continue;
        }
        while (PGnotify* n = PQnotifies(_conn)) {
            out.notifications.push_back({n->relname, n->extra != nullptr ? n->extra : ""});
            PQfreemem(n);
        }
        if (!out.notifications.empty()) return out;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
        if (left.count() <= 0) return out;
        pollfd p{PQsocket(_conn), POLLIN, 0};
        if (p.fd < 0) {
            PQfinish(_conn);
            _conn = nullptr;
            continue;
        }
        ::poll(&p, 1, static_cast<int>(left.count()));
    }
}

}  // namespace sluice::shared
