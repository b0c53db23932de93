#include "sql/http/sql_endpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>

#include "common/logging.h"

namespace sluice::sql::http {
namespace {

using clock = std::chrono::steady_clock;

// All digits, at least one; values too large for uint64 saturate (the caller clamps).
std::optional<uint64_t> parse_count(std::string_view s) {
    if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range) return UINT64_MAX;
    return v;
}

bool canonical_integer(std::string_view s) {
    if (!s.empty() && s.front() == '-') s.remove_prefix(1);
    if (s.empty() || (s.size() > 1 && s.front() == '0')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? with a fraction or an exponent.
bool decimal_real(std::string_view s) {
    size_t i = 0;
    auto digits = [&] {
        size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
        return i - start;
    };
    if (i < s.size() && s[i] == '-') ++i;
    size_t int_start = i;
    size_t n = digits();
    if (n == 0 || (n > 1 && s[int_start] == '0')) return false;
    bool more = false;
    if (i < s.size() && s[i] == '.') {
        ++i;
        if (digits() == 0) return false;
        more = true;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        if (digits() == 0) return false;
        more = true;
    }
    return more && i == s.size();
}

// The engine gives a DECIMAL column as NUMERIC(p,s) (or NUMERIC) with its values' exact
// text, for PostgreSQL's numeric; HTTP shows it as it always has (docs/sql-http.md):
// REAL, each value a double.
bool is_numeric(const column& c) {
    return c.decl_type.starts_with("NUMERIC");
}

// INT2 and INT4 (PostgreSQL's widths of DuckDB's SMALLINT and INTEGER) are HTTP's
// INTEGER, as every integer column is there.
std::vector<column> http_columns(std::vector<column> cols) {
    for (auto& c : cols) {
        if (is_numeric(c)) c.decl_type = "REAL";
        if (c.decl_type == "INT2" || c.decl_type == "INT4") c.decl_type = "INTEGER";
    }
    return cols;
}

std::vector<value> http_row(const std::vector<column>& cols, const std::vector<value>& row) {
    std::vector<value> out = row;
    for (size_t i = 0; i < cols.size() && i < out.size(); ++i)
        if (const auto* s = std::get_if<std::string>(&out[i]); s && is_numeric(cols[i]))
            out[i] = std::strtod(s->c_str(), nullptr);
    return out;
}

std::chrono::milliseconds ceil_ms(clock::duration d) {
    return std::chrono::ceil<std::chrono::milliseconds>(d);
}

double ms_since(clock::time_point t) {
    return std::chrono::duration<double, std::milli>(clock::now() - t).count();
}

// One request's run: the statements in order, the last one's result into `_out`,
// committed to a 200 (and streamed) once it outgrows commit_bytes.
class sql_run {
  public:
    sql_run(engine& eng, const sql_endpoint_options& opts, const sql_request_options& req,
            const security::principal& who, http_response& resp)
        : _eng(eng),
          _opts(opts),
          _req(req),
          _who(who),
          _resp(resp),
          _writer(make_result_writer(req.format, _out)) {}

    void run(std::string_view sql) {
        auto s = _eng.open_session();
        if (!s) return fail_early(s.error());
        session& sess = **s;
        sess.set_principal(_who);
        // A client that hangs up cancels its statement (the engine asks every few ms).
        sess.set_interrupt_check([this] { return _resp.peer_closed(); });
        limits lim = sess.default_limits();
        if (_req.timeout_ms)
            lim.timeout = std::min<std::chrono::milliseconds>(
                lim.timeout, std::chrono::milliseconds(
                                 std::min<uint64_t>(*_req.timeout_ms, INT64_MAX / 1'000'000)));
        if (_req.max_rows) lim.max_rows = std::min(lim.max_rows, *_req.max_rows);
        // The limit covers the statements, not the session's set-up.
        _deadline = clock::now() + lim.timeout;
        run_statements(sess, sql, lim);
        sess.set_interrupt_check({});
        // HTTP is stateless: a transaction the request left open is rolled back.
        if (sess.in_transaction()) {
            sess.set_limits(sess.default_limits());
            if (auto rb = sess.prepare("ROLLBACK"); rb && *rb) (void)(*rb)->step();
        }
    }

  private:
    void run_statements(session& sess, std::string_view rest, const limits& lim) {
        for (;;) {
            // The time limit covers the whole request: each statement gets what is left.
            auto left = ceil_ms(_deadline - clock::now());
            if (left.count() <= 0)
                return fail({failure::timeout, "the request's time limit of " +
                                                   std::to_string(lim.timeout.count()) +
                                                   " ms was reached"});
            sess.set_limits({left, lim.max_rows});
            std::string_view tail;
            auto prepared = sess.prepare(rest, &tail);
            if (!prepared) return fail(prepared.error());
            if (!*prepared) return fail({failure::syntax, "no SQL statement in the request"});
            statement& st = **prepared;
            if (auto e = bind(st)) return fail(*e);
            if (is_blank_sql(tail)) return run_last(st);
            // Not the last statement: run to completion, rows dropped.
            for (;;) {
                auto state = st.step();
                if (state == statement::step_state::failed) return fail(st.error());
                if (state == statement::step_state::done) break;
            }
            rest = tail;
        }
    }

    std::optional<query_error> bind(statement& st) {
        int n = st.param_count();
        if (n == 0) return std::nullopt;
        if (static_cast<size_t>(n) > _req.params.size())
            return query_error{failure::invalid_parameter,
                               "the statement uses " + std::to_string(n) + " parameters, " +
                                   std::to_string(_req.params.size()) + " given (param=...)"};
        std::vector<value> args(_req.params.begin(), _req.params.begin() + n);
        auto r = st.bind(args);
        if (!r) return r.error();
        return std::nullopt;
    }

    void run_last(statement& st) {
        if (st.columns().empty()) {
            for (;;) {
                auto state = st.step();
                if (state == statement::step_state::failed) return fail(st.error());
                if (state == statement::step_state::done) break;
            }
            _writer->no_rows(st.verb(), st.changes());
            _writer->finish(summary());
            return deliver();
        }
        const auto& cols = st.columns();
        const bool numeric = std::any_of(cols.begin(), cols.end(), is_numeric);
        _writer->begin_rows(http_columns(cols));
        for (;;) {
            auto state = st.step();
            if (state == statement::step_state::done) {
                _writer->finish(summary());
                return deliver();
            }
            if (state == statement::step_state::failed) return fail(st.error());
            if (numeric)
                _writer->row(http_row(cols, st.row()));
            else
                _writer->row(st.row());
            ++_rows;
            if (!maybe_flush()) return;  // the client is gone
        }
    }

    result_summary summary() const { return {_rows, ms_since(_start)}; }

    // Sends what is buffered when it is due; false when the client is gone.
    bool maybe_flush() {
        if (!_committed) {
            if (_out.size() < _opts.commit_bytes) return true;
            _committed = true;
            _resp.begin_stream(200, content_type(_req.format));
        } else if (_out.size() < _opts.commit_bytes &&
                   clock::now() - _last_flush <
                       std::chrono::milliseconds(_opts.flush_interval_ms)) {
            return true;
        }
        _resp.write(_out);
        _out.clear();
        _last_flush = clock::now();
        return _resp.ok();
    }

    void deliver() {
        if (!_committed) {
            _resp.send(200, content_type(_req.format), _out);
            return;
        }
        _resp.write(_out);
        _resp.end_stream();
    }

    void fail_early(const query_error& e) {
        _resp.send(status_for(e.kind), "application/json", error_json(e) + "\n");
    }

    void fail(const query_error& e) {
        if (!_committed) return fail_early(e);
        // The status went out as 200: the error ends the body (docs/sql-http.md).
        _writer->fail(e, summary());
        deliver();
    }

    engine& _eng;
    const sql_endpoint_options& _opts;
    const sql_request_options& _req;
    const security::principal& _who;
    http_response& _resp;
    std::string _out;
    std::unique_ptr<result_writer> _writer;
    clock::time_point _start = clock::now();
    clock::time_point _deadline;
    clock::time_point _last_flush;
    uint64_t _rows = 0;
    bool _committed = false;
};

}  // namespace

std::string parse_sql_request_options(const http_request& req, sql_request_options& out) {
    out = {};
    bool format_given = false;
    auto params = req.query_params();
    if (!params) return "a bad %-escape in the query string";
    for (const auto& [k, v] : *params) {
        if (k == "format") {
            auto f = parse_format(v);
            if (!f) return "format must be json, csv or ndjson, not '" + v + "'";
            out.format = *f;
            format_given = true;
        } else if (k == "timeout_ms" || k == "max_rows") {
            auto n = parse_count(v);
            if (!n || *n == 0) return fmt::format("{} must be a positive integer, not '{}'", k, v);
            (k == "timeout_ms" ? out.timeout_ms : out.max_rows) = *n;
        } else if (k == "param") {
            out.params.push_back(param_value(v));
        } else {
            return "unknown query parameter '" + k +
                   "' (known: format, timeout_ms, max_rows, param)";
        }
    }
    if (!format_given) {
        if (auto accept = req.header("accept")) {
            if (auto f = format_from_accept(*accept)) out.format = *f;
        }
    }
    return {};
}

value param_value(std::string_view s) {
    if (canonical_integer(s)) {
        int64_t v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc() && p == s.data() + s.size()) return v;
    }
    if (decimal_real(s)) {
        std::string copy(s);
        return std::strtod(copy.c_str(), nullptr);
    }
    return std::string(s);
}

int status_for(failure f) {
    // `internal` stays a 400: SQLite reports some of the caller's mistakes (a wrong
    // number of values in an INSERT) with a generic code the engine cannot tell apart.
    // Every session's memory or temporary files together being spent is the server's
    // state, not the statement's fault: 503, worth a retry; the session's own bounds are
    // the statement's, 400 like the row limit. So is a full disk.
    if (f == failure::shutting_down || f == failure::memory_exhausted ||
        f == failure::temp_exhausted || f == failure::disk_full)
        return 503;
    return f == failure::not_authorized ? 403 : 400;
}

void handle_sql(engine& eng, const sql_endpoint_options& opts, const http_request& req,
                http_response& resp) {
    sql_request_options ro;
    if (auto e = parse_sql_request_options(req, ro); !e.empty())
        return (void)resp.send_error(400, failure_name(failure::invalid_parameter), e,
                                     sqlstate(failure::invalid_parameter));
    if (req.body.find('\0') != std::string::npos)
        return (void)resp.send_error(400, failure_name(failure::syntax),
                                     "the request body holds a NUL byte",
                                     sqlstate(failure::syntax));
    if (is_blank_sql(req.body))
        return (void)resp.send_error(400, failure_name(failure::syntax),
                                     "no SQL statement in the request body",
                                     sqlstate(failure::syntax));
    sql_run(eng, opts, ro, req.principal, resp).run(req.body);
}

}  // namespace sluice::sql::http
