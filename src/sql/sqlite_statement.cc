#include "sql/sqlite_statement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "sql/budget.h"
#include "sql/sql_metrics.h"
#include "sql/sql_text.h"
#include "sql/sqlite_session.h"

namespace sluice::sql {

namespace {

// A row's values exist, besides SQLite's own (which its allocator counts), in row() and
// in the front end's encoding for the wire: hex for a PostgreSQL bytea, twice the bytes;
// base64 or escaped text for HTTP, less. So the row counts three times more.
constexpr uint64_t row_copies = 3;
// Rows smaller than this are not counted: they are what the bounds leave room for, and
// counting costs two atomic operations per row.
constexpr uint64_t counted_row_bytes = 64 * 1024;

}  // namespace

sqlite_statement::sqlite_statement(sqlite_session& s, sqlite3_stmt* st, std::string text)
    : _session(s), _st(st), _text(std::move(text)), _account(s.account()) {
    // SQLite numbers "$1", "$2" as names in order of first appearance; PostgreSQL clients
    // mean the number. "?" and "?NNN" keep SQLite's own index.
    const int n_params = sqlite3_bind_parameter_count(st);
    for (int i = 1; i <= n_params; ++i) {
        int number = i;
        if (const char* name = sqlite3_bind_parameter_name(st, i); name && name[0] == '$') {
            int parsed = 0;
            bool digits = name[1] != 0;
            for (const char* p = name + 1; *p && digits; ++p) {
                digits = *p >= '0' && *p <= '9' && parsed < 100000;
                parsed = parsed * 10 + (*p - '0');
            }
            if (digits && parsed > 0) number = parsed;
        }
        _param_numbers.push_back(number);
        _param_count = std::max(_param_count, number);
    }
    const int n = sqlite3_column_count(st);
    _columns.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        const char* name = sqlite3_column_name(st, i);
        const char* decl = sqlite3_column_decltype(st, i);
        _columns.push_back(column{name ? name : "", decl ? decl : ""});
    }
}

sqlite_statement::~sqlite_statement() {
    if (_started && !_finished) count_query(_started_at, query_outcome::canceled);
    release_row();
    sqlite3_finalize(_st);
}

bool sqlite_statement::charge_row() {
    uint64_t n = 0;
    for (const auto& v : _row) {
        if (const auto* s = std::get_if<std::string>(&v)) n += s->size();
        if (const auto* b = std::get_if<bytes>(&v)) n += b->size();
    }
    if (n < counted_row_bytes) return true;
    if (!_account->charge_memory(n * row_copies)) return false;
    _row_charge = n * row_copies;
    _row_generation = _account->generation();
    return true;
}

void sqlite_statement::release_row() {
    if (_row_charge == 0) return;
    _account->uncharge_memory(_row_charge, _row_generation);
    _row_charge = 0;
}

outcome<bool> sqlite_statement::bind(const std::vector<value>& params) {
    if (static_cast<int>(params.size()) != param_count())
        return query_error{failure::invalid_parameter,
                           fmt::format("the statement takes {} parameters, {} given", param_count(),
                                       params.size())};
    budget_scope charged(_account);
    sqlite3_reset(_st);
    _started = _finished = false;
    for (size_t k = 0; k < _param_numbers.size(); ++k) {
        const int at = static_cast<int>(k) + 1;
        const size_t i = static_cast<size_t>(_param_numbers[k] - 1);
        int rc = std::visit(
            [&](const auto& v) {
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, std::monostate>)
                    return sqlite3_bind_null(_st, at);
                else if constexpr (std::is_same_v<T, int64_t>)
                    return sqlite3_bind_int64(_st, at, v);
                else if constexpr (std::is_same_v<T, double>)
                    return sqlite3_bind_double(_st, at, v);
                else if constexpr (std::is_same_v<T, std::string>)
                    return sqlite3_bind_text64(_st, at, v.data(), v.size(), SQLITE_TRANSIENT,
                                               SQLITE_UTF8);
                else
                    return sqlite3_bind_blob64(_st, at, v.data(), v.size(), SQLITE_TRANSIENT);
            },
            params[i]);
        if (rc != SQLITE_OK) return _session.error_for(rc);
    }
    return true;
}

statement::step_state sqlite_statement::fail(query_error e) {
    release_row();
    _row.clear();
    _error = std::move(e);
    if (_started && !_finished) count_query(_started_at, query_outcome::failed);
    _finished = true;
    sqlite3_reset(_st);
    return step_state::failed;
}

statement::step_state sqlite_statement::step() {
    if (_finished) return _error.message.empty() ? step_state::done : step_state::failed;
    // Charged to the session: what SQLite allocates for the statement and its values.
    budget_scope charged(_account);
    release_row();
    if (!_started) {
        _started = true;
        _started_at = std::chrono::steady_clock::now();
        _rows = 0;
        _error = {};
        _total_changes_before = sqlite3_total_changes64(_session.db());
        _session.statement_started();
    }
    const int rc = sqlite3_step(_st);
    if (rc == SQLITE_DONE) {
        count_query(_started_at, query_outcome::done);
        _finished = true;
        // sqlite3_changes64 keeps the count of the last INSERT, UPDATE or DELETE (the
        // engine's own included) through statements that change no row, such as DDL.
        _changes = sqlite3_total_changes64(_session.db()) == _total_changes_before
                       ? 0
                       : sqlite3_changes64(_session.db());
        sqlite3_reset(_st);
        return step_state::done;
    }
    if (rc != SQLITE_ROW) return fail(_session.error_for(rc));
    if (++_rows > _session.current_limits().max_rows)
        return fail({failure::row_limit,
                     fmt::format("the result has more than {} rows, the row limit: add a LIMIT, "
                                 "or raise the limit up to the server's maximum",
                                 _session.current_limits().max_rows)});
    const int n = sqlite3_data_count(_st);
    _row.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        auto& v = _row[static_cast<size_t>(i)];
        switch (sqlite3_column_type(_st, i)) {
            case SQLITE_INTEGER:
                v = static_cast<int64_t>(sqlite3_column_int64(_st, i));
                break;
            case SQLITE_FLOAT:
                v = sqlite3_column_double(_st, i);
                break;
            case SQLITE_TEXT: {
                const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(_st, i));
                if (!p && sqlite3_errcode(_session.db()) == SQLITE_NOMEM)
                    return fail(_session.error_for(SQLITE_NOMEM));
                if (!p) p = "";
                const auto len = static_cast<size_t>(sqlite3_column_bytes(_st, i));
                // Reuse the cell's buffer from the previous row: a scan builds millions.
                if (auto* s = std::get_if<std::string>(&v))
                    s->assign(p, len);
                else
                    v = std::string(p, len);
                break;
            }
            case SQLITE_BLOB: {
                // A zeroblob() is made real here, and may meet the memory bound: SQLite
                // then answers NULL and makes the value NULL, which must not pass for an
                // empty blob.
                const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(_st, i));
                const auto len = static_cast<size_t>(sqlite3_column_bytes(_st, i));
                if (!p && sqlite3_errcode(_session.db()) == SQLITE_NOMEM)
                    return fail(_session.error_for(SQLITE_NOMEM));
                if (auto* b = std::get_if<bytes>(&v))
                    b->assign(p, p + len);
                else
                    v = bytes(p, p + len);
                break;
            }
            default:
                v = std::monostate{};
                break;
        }
    }
    if (!charge_row()) return fail(_session.error_for(SQLITE_NOMEM));
    return step_state::row;
}

std::string sqlite_statement::verb() const {
    size_t i = skip_space(_text);
    return next_word(_text, i);
}

void sqlite_statement::reset() {
    budget_scope charged(_account);
    if (_started && !_finished) count_query(_started_at, query_outcome::canceled);
    release_row();
    sqlite3_reset(_st);
    _started = _finished = false;
    _error = {};
    _changes = 0;
}

}  // namespace sluice::sql
