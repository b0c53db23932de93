#include "sql/duck/serving_session.h"

#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <thread>

#include "duckdb/main/config.hpp"
#include "duckdb/main/database_manager.hpp"
#include "duckdb/main/pending_query_result.hpp"
#include "duckdb/parser/expression/constant_expression.hpp"
#include "duckdb/parser/expression/function_expression.hpp"
#include "duckdb/parser/sql_statement.hpp"
#include "duckdb/parser/statement/copy_statement.hpp"
#include "sql/budget.h"
#include "sql/duck/param_types.h"
#include "sql/duck/pg_catalog.h"
#include "sql/duck/pg_shape.h"
#include "sql/duck/pg_typmod.h"
#include "sql/duck/statement_walk.h"
#include "sql/duck/statement_checks.h"
#include "sql/duck/user_tables.h"
#include "sql/sql_metrics.h"

namespace sluice::sql::duck {

namespace {

using steady = std::chrono::steady_clock;

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
        .count();
}

// COPY (query) TO 'file' and COPY table TO 'file' write under the operator's export
// directory (--sql-export-dir, one of DuckDB's allowed_directories): a relative
// name is taken in it, a name outside it refused; COPY ... FROM is refused.
std::optional<query_error> aim_copy(d::SQLStatement& st, const std::filesystem::path& exports) {
    auto& info = *st.Cast<d::CopyStatement>().info;
    if (info.is_from)
        return query_error{failure::read_only,
                           "COPY ... FROM is not available: COPY writes query results under "
                           "--sql-export-dir, COPY (query) TO 'file' (FORMAT parquet)"};
    if (exports.empty())
        return query_error{failure::read_only,
                           "COPY is not available: the broker has no --sql-export-dir"};
    if (info.file_path_expression) {
        auto* c = info.file_path_expression->type == d::ExpressionType::VALUE_CONSTANT
                      ? &info.file_path_expression->Cast<d::ConstantExpression>()
                      : nullptr;
        if (!c || c->value.type().id() != d::LogicalTypeId::VARCHAR)
            return query_error{failure::not_authorized,
                               "COPY ... TO takes the file name as a string literal"};
        info.file_path = c->value.GetValue<std::string>();
        info.file_path_expression.reset();
    }
    const std::filesystem::path dir = exports.lexically_normal();
    std::filesystem::path file(info.file_path);
    if (file.is_relative()) file = dir / file;
    file = file.lexically_normal();
    const auto rel = file.lexically_relative(dir);
    if (info.file_path.empty() || rel.empty() || *rel.begin() == ".." || rel == ".")
        return query_error{failure::not_authorized,
                           fmt::format("COPY ... TO '{}': files are written only under "
                                       "--sql-export-dir ({}); give a name relative to it",
                                       info.file_path, dir.string())};
    info.file_path = file.string();
    return std::nullopt;
}

// A DuckDB value as a cell of the interface, and the declared type of its column. A
// DECIMAL is PostgreSQL's numeric, with its precision and scale when PostgreSQL would
// give the column its type modifier (`typmod`, duck/pg_typmod.h).
std::string decl_type_of(const d::LogicalType& t, bool typmod) {
    if (t.HasAlias() && t.GetAlias() == "JSON") return "JSON";
    switch (t.id()) {
        case d::LogicalTypeId::BOOLEAN:
            return "BOOLEAN";
        // The width PostgreSQL's catalog gives the column (pg_attribute: DuckDB's
        // INTEGER is int4), so that a client typing a scan from the catalog (DuckDB's
        // postgres extension) reads the values it is sent: INT2 and INT4; wider ones and
        // the unsigned that do not fit are INTEGER (int8).
        case d::LogicalTypeId::TINYINT:
        case d::LogicalTypeId::SMALLINT:
        case d::LogicalTypeId::UTINYINT:
            return "INT2";
        case d::LogicalTypeId::INTEGER:
        case d::LogicalTypeId::USMALLINT:
            return "INT4";
        case d::LogicalTypeId::BIGINT:
        case d::LogicalTypeId::UINTEGER:
        case d::LogicalTypeId::UBIGINT:
        case d::LogicalTypeId::HUGEINT:
        case d::LogicalTypeId::UHUGEINT:
            return "INTEGER";
        case d::LogicalTypeId::FLOAT:
        case d::LogicalTypeId::DOUBLE:
            return "REAL";
        case d::LogicalTypeId::DECIMAL:
            if (!typmod) return "NUMERIC";
            return fmt::format("NUMERIC({},{})", d::DecimalType::GetWidth(t),
                               d::DecimalType::GetScale(t));
        case d::LogicalTypeId::BLOB:
            return "BLOB";
        case d::LogicalTypeId::TIMESTAMP_TZ:
            return "TIMESTAMPTZ";
        case d::LogicalTypeId::LIST:  // int2[] (pg_constraint's conkey), else text
            return d::ListType::GetChildType(t).id() == d::LogicalTypeId::SMALLINT ? "_INT2"
                                                                                 : "TEXT";
        default:
            return "TEXT";
    }
}

// A list in PostgreSQL's array text, `{1,2}` (DuckDB's is `[1, 2]`): an element quoted
// when empty, NULL's spelling, or holding a separator, brace, quote, backslash or space.
std::string pg_array_text(const d::Value& list) {
    std::string out = "{";
    for (const auto& e : d::ListValue::GetChildren(list)) {
        if (out.size() > 1) out += ',';
        if (e.IsNull()) {
            out += "NULL";
            continue;
        }
        if (e.type().id() == d::LogicalTypeId::LIST) {  // a dimension more: {{1,2},{3,4}}
            out += pg_array_text(e);
            continue;
        }
        const auto text = e.ToString();
        const bool quote = text.empty() || d::StringUtil::CIEquals(text, "null") ||
                           text.find_first_of(",{}\"\\ \t\n") != std::string::npos;
        if (!quote) {
            out += text;
            continue;
        }
        out += '"';
        for (const char c : text) {
            if (c == '"' || c == '\\') out += '\\';
            out += c;
        }
        out += '"';
    }
    return out + "}";
}

value cell_of(const d::Value& v) {
    if (v.IsNull()) return std::monostate{};
    switch (v.type().id()) {
        case d::LogicalTypeId::BOOLEAN:
            return int64_t{v.GetValue<bool>() ? 1 : 0};
        case d::LogicalTypeId::TINYINT:
        case d::LogicalTypeId::SMALLINT:
        case d::LogicalTypeId::INTEGER:
        case d::LogicalTypeId::BIGINT:
        case d::LogicalTypeId::UTINYINT:
        case d::LogicalTypeId::USMALLINT:
        case d::LogicalTypeId::UINTEGER:
            return v.GetValue<int64_t>();
        case d::LogicalTypeId::UBIGINT:
        case d::LogicalTypeId::HUGEINT:
        case d::LogicalTypeId::UHUGEINT: {
            d::Value c = v;
            if (c.DefaultTryCastAs(d::LogicalType::BIGINT)) return c.GetValue<int64_t>();
            return v.ToString();
        }
        case d::LogicalTypeId::FLOAT:
        case d::LogicalTypeId::DOUBLE:
            return v.GetValue<double>();
        case d::LogicalTypeId::DECIMAL:  // exact: its digits and scale, as numeric's text
            return v.ToString();
        case d::LogicalTypeId::BLOB: {
            const auto& s = d::StringValue::Get(v);
            return bytes(reinterpret_cast<const uint8_t*>(s.data()),
                         reinterpret_cast<const uint8_t*>(s.data()) + s.size());
        }
        case d::LogicalTypeId::VARCHAR:
            return d::StringValue::Get(v);
        case d::LogicalTypeId::LIST:
            return pg_array_text(v);
        default:
            return v.ToString();
    }
}

size_t cell_size(const value& v) {
    if (const auto* s = std::get_if<std::string>(&v)) return s->size();
    if (const auto* b = std::get_if<bytes>(&v)) return b->size();
    return 0;
}

d::Value param_of(const value& v) {
    if (const auto* i = std::get_if<int64_t>(&v)) return d::Value::BIGINT(*i);
    if (const auto* x = std::get_if<double>(&v)) return d::Value::DOUBLE(*x);
    if (const auto* s = std::get_if<std::string>(&v)) return d::Value(*s);
    if (const auto* b = std::get_if<bytes>(&v))
        return d::Value::BLOB(reinterpret_cast<d::const_data_ptr_t>(b->data()), b->size());
    return d::Value();
}

// current_setting('name') of a parameter the front end holds (duck/serving_session.h):
// its value as text, as PostgreSQL answers; DuckDB's lookup knows none of them. The
// column keeps PostgreSQL's name, current_setting.
void answer_client_parameters(d::SQLStatement& s,
                              const std::map<std::string, std::string>& params) {
    if (params.empty()) return;
    walk_statement(s, [&params](d::unique_ptr<d::ParsedExpression>& e) {
        if (e->GetExpressionClass() != d::ExpressionClass::FUNCTION) return;
        const auto& f = e->Cast<d::FunctionExpression>();
        if (d::StringUtil::Lower(f.function_name) != "current_setting" ||
            f.children.size() != 1 || !f.children[0] ||
            f.children[0]->GetExpressionClass() != d::ExpressionClass::CONSTANT)
            return;
        const auto& name = f.children[0]->Cast<d::ConstantExpression>().value;
        if (name.IsNull() || name.type().id() != d::LogicalTypeId::VARCHAR) return;
        const auto it = params.find(d::StringUtil::Lower(name.GetValue<std::string>()));
        if (it == params.end()) return;
        auto answer = d::make_uniq<d::ConstantExpression>(d::Value(it->second));
        answer->SetAlias(e->GetAlias().empty() ? std::string("current_setting") : e->GetAlias());
        e = std::move(answer);
    });
}

// The interface's messages are one line (sql/engine.h): DuckDB's lines joined, without
// the statement's excerpt (`LINE n: ...`) and its caret.
std::string one_line(const std::string& m) {
    std::string out;
    size_t i = 0;
    while (i < m.size()) {
        auto nl = m.find('\n', i);
        if (nl == std::string::npos) nl = m.size();
        auto line = std::string_view(m).substr(i, nl - i);
        i = nl + 1;
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())))
            line.remove_suffix(1);
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front())))
            line.remove_prefix(1);
        if (line.starts_with("LINE ")) break;
        if (line.empty()) continue;
        if (!out.empty()) out += ' ';
        out += line;
    }
    return out;
}

std::string first_word(std::string_view s) {
    size_t i = 0;
    while (i < s.size() && !std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    std::string w;
    for (; i < s.size() && std::isalpha(static_cast<unsigned char>(s[i])); ++i)
        w += static_cast<char>(std::toupper(static_cast<unsigned char>(s[i])));
    return w;
}

// Whether a statement's tasks are charged to its session: queries and the statements that
// change data or make tables, whose autocommit happens after their tasks. Not the others:
// COMMIT runs inside a task, and so would a checkpoint; no commit meets a refusal.
bool charged(d::StatementType t) {
    switch (t) {
        case d::StatementType::SELECT_STATEMENT:
        case d::StatementType::INSERT_STATEMENT:
        case d::StatementType::UPDATE_STATEMENT:
        case d::StatementType::DELETE_STATEMENT:
        case d::StatementType::CREATE_STATEMENT:
        case d::StatementType::COPY_STATEMENT:
        case d::StatementType::EXPLAIN_STATEMENT:
            return true;
        default:
            return false;
    }
}

class serving_statement final : public sql::statement {
  public:
    // `typed`: the result and parameter types when DuckDB left them open (duck/param_types.h).
    serving_statement(serving_session& s, std::string text, d::unique_ptr<d::PreparedStatement> p,
                      std::optional<typed_parameters> typed, const typmod_plan& typmods)
        : _s(s), _text(std::move(text)), _prep(std::move(p)) {
        _returns_rows = typed ? typed->returns_rows
                              : _prep->GetStatementProperties().return_type ==
                                    d::StatementReturnType::QUERY_RESULT;
        if (_returns_rows) {
            const auto& names = typed ? typed->names : _prep->GetNames();
            const auto& types = typed ? typed->types : _prep->GetTypes();
            for (size_t i = 0; i < names.size(); ++i)
                _cols.push_back({names[i], decl_type_of(types[i], typmods.keeps(i, names.size()))});
        }
        if (typed) _param_types = std::move(typed->params);
        _params.resize(_prep->named_param_map.size());
        _topics = _s.bound_topics();
        _generation = _s.access_generation();
    }
    ~serving_statement() override { finish(); }

    const std::string& text() const override { return _text; }
    int param_count() const override { return static_cast<int>(_params.size()); }
    outcome<bool> bind(const std::vector<value>& params) override {
        if (params.size() != _params.size())
            return query_error{failure::invalid_parameter,
                               fmt::format("the statement takes {} parameters, not {}",
                                           _params.size(), params.size())};
        for (size_t i = 0; i < params.size(); ++i) {
            _params[i] = param_of(params[i]);
            if (i >= _param_types.size() || _params[i].type() == _param_types[i]) continue;
            // The type the result was found with, so that DuckDB's binding with the values
            // answers the columns announced.
            const auto& t = _param_types[i];
            if (_params[i].IsNull()) {
                _params[i] = d::Value(t);
                continue;
            }
            d::Value v;
            std::string why;
            if (!_params[i].TryCastAs(*_s.con().context, t, v, &why, true))
                return query_error{failure::invalid_parameter,
                                   fmt::format("parameter ${} is not a valid {}: {}", i + 1,
                                               t.ToString(), one_line(why))};
            _params[i] = std::move(v);
        }
        return true;
    }
    const std::vector<column>& columns() const override { return _cols; }
    step_state step() override;
    const std::vector<value>& row() const override { return _row; }
    const query_error& error() const override { return _error; }
    int64_t changes() const override { return _changes; }
    std::string verb() const override { return first_word(_text); }
    void reset() override {
        finish();
        _state = state::fresh;
    }

  private:
    enum class state { fresh, rows, done, failed };
    step_state fail(query_error e) {
        count(query_outcome::failed);
        finish();
        _error = std::move(e);
        _state = state::failed;
        return step_state::failed;
    }
    // sluice_sql_queries_total (sql_metrics.h), once per run that began to step.
    void count(query_outcome o) {
        if (_stepped_since) count_query(*_stepped_since, o);
        _stepped_since.reset();
    }
    void finish() {
        count(query_outcome::canceled);  // a run reset or dropped before its end
        _chunk.reset();
        _result.reset();
        if (_running) _s.end_statement();
        _running = false;
    }
    // Runs the statement until its first rows are ready. An error: its failure.
    std::optional<query_error> start();
    // The next chunk; false at the end (or on an error, in _error).
    bool next_chunk();

    serving_session& _s;
    std::string _text;
    d::unique_ptr<d::PreparedStatement> _prep;
    bool _returns_rows = false;
    std::vector<column> _cols;
    d::vector<d::Value> _params;
    std::vector<d::LogicalType> _param_types;  // empty unless DuckDB left them open
    d::unique_ptr<d::QueryResult> _result;
    d::unique_ptr<d::DataChunk> _chunk;
    d::idx_t _pos = 0;
    std::vector<value> _row;
    query_error _error;
    int64_t _changes = 0;
    uint64_t _rows = 0;
    bool _running = false;
    state _state = state::fresh;
    std::optional<steady::time_point> _stepped_since;
    std::vector<std::string> _topics;  // read through tables: checked again after a policy change
    uint64_t _generation = 0;
};

std::optional<query_error> serving_statement::start() {
    if (_generation != _s.access_generation()) {
        if (auto e = _s.check_topics(_topics)) return e;
        _generation = _s.access_generation();
    }
    if (auto e = _s.start_statement()) return e;
    _running = true;
    _s.charge_tasks(charged(_prep->GetStatementType()));
    _rows = 0;
    _changes = 0;
    auto pending = _prep->PendingQuery(_params, true);
    if (pending->HasError()) return _s.error_for(pending->GetErrorObject());
    auto last_check = steady::now();
    for (;;) {
        const auto r = pending->ExecuteTask();
        if (d::PendingQueryResult::IsResultReady(r) ||
            r == d::PendingExecutionResult::EXECUTION_ERROR)
            break;
        if (r == d::PendingExecutionResult::BLOCKED ||
            r == d::PendingExecutionResult::NO_TASKS_AVAILABLE)
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        // The front end's check (a client that went away), on this thread.
        if (const auto now = steady::now();
            _s.check() && now - last_check > std::chrono::milliseconds(10)) {
            last_check = now;
            if (_s.check()()) {
                _s.cancel();
                _s.con().Interrupt();
            }
        }
    }
    if (pending->HasError()) return _s.error_for(pending->GetErrorObject());
    _result = pending->Execute();
    if (_result->HasError()) return _s.error_for(_result->GetErrorObject());
    if (!_returns_rows) {
        // CHANGED_ROWS statements answer with their count; others with nothing.
        if (auto c = _result->Fetch(); c && c->size() > 0 && c->ColumnCount() > 0) {
            const auto v = c->GetValue(0, 0);
            if (!v.IsNull() && v.type().IsIntegral()) _changes = v.GetValue<int64_t>();
        }
    }
    return std::nullopt;
}

bool serving_statement::next_chunk() {
    _chunk.reset();
    _pos = 0;
    d::ErrorData err;
    d::unique_ptr<d::DataChunk> c;
    if (!_result->TryFetch(c, err)) {
        _error = _s.error_for(err.HasError() ? err : _result->GetErrorObject());
        return false;
    }
    if (_result->HasError()) {
        _error = _s.error_for(_result->GetErrorObject());
        return false;
    }
    if (!c || c->size() == 0) return false;
    _chunk = std::move(c);
    return true;
}

sql::statement::step_state serving_statement::step() {
    if (_state == state::done) return step_state::done;
    if (_state == state::failed) return step_state::failed;
    if (_state == state::fresh) {
        _stepped_since = steady::now();
        if (auto e = start()) return fail(std::move(*e));
        _state = state::rows;
        if (!_returns_rows) {
            count(query_outcome::done);
            finish();
            _state = state::done;
            return step_state::done;
        }
    }
    if (!_chunk || _pos >= _chunk->size()) {
        if (_s.check() && _s.check()())
            return fail({failure::canceled, "canceled: the client went away"});
        if (!next_chunk()) {
            if (!_error.message.empty()) return fail(_error);
            count(query_outcome::done);
            finish();
            _state = state::done;
            return step_state::done;
        }
    }
    const auto limit = _s.current_limits().max_rows;
    if (_rows >= limit)
        return fail(
            {failure::row_limit,
             fmt::format("the result has more than {} rows (the row limit): add a LIMIT", limit)});
    _row.clear();
    const auto max_value = static_cast<size_t>(_s.opts().bounds.max_value_bytes);
    for (d::idx_t c = 0; c < _chunk->ColumnCount(); ++c) {
        _row.push_back(cell_of(_chunk->GetValue(c, _pos)));
        if (cell_size(_row.back()) > max_value)
            return fail(
                {failure::program_limit, fmt::format("a value of column {} is longer than {} "
                                                     "(--sql-max-value-bytes)",
                                                     _cols[c].name, format_bytes(max_value))});
    }
    ++_pos;
    ++_rows;
    return step_state::row;
}

}  // namespace

serving_session::serving_session(engine::impl& db, const engine_options& opts, watchdog& dog)
    : _db(db), _opts(opts), _dog(dog), _account(budget_account::acquire()), _limits(opts.defaults) {
    _con = std::make_unique<d::Connection>(*_db.db);
    _charging = std::make_unique<task_charging>(*_con, _account);
    _ctx.set_access(opts.gate, security::principal{});
    {
        std::lock_guard lk(_db.mu);
        _db.sessions[_con->context.get()] = {&_ctx, &_mu, &_counters, &_bound_topics};
    }
    _dog.add(&_run, _con.get());
}

serving_session::~serving_session() {
    _dog.remove(&_run);
    {
        std::lock_guard lk(_db.mu);
        _db.sessions.erase(_con->context.get());
    }
    _con.reset();
    budget_account::release(_account);
}

void serving_session::set_principal(security::principal p) {
    std::lock_guard lk(_mu);
    _ctx.set_access(_opts.gate, std::move(p));
}

void serving_session::set_limits(const limits& l) {
    _limits.timeout = std::min(l.timeout, _opts.defaults.timeout);
    if (_limits.timeout.count() <= 0) _limits.timeout = _opts.defaults.timeout;
    _limits.max_rows = std::min(l.max_rows, _opts.defaults.max_rows);
}

std::optional<query_error> serving_session::start_statement() {
    if (_run.cancel.exchange(false))
        return query_error{failure::canceled, "canceling statement due to user request"};
    {
        // The previous statement's counters become sluice_last_scan()'s.
        std::lock_guard lk(_mu);
        _ctx.current_scan() = _counters.load();
        for (auto* c : {&_counters.partitions_scanned, &_counters.segments_read,
                        &_counters.batches_read, &_counters.records_read, &_counters.bytes_read})
            c->store(0);
        _ctx.begin_statement();
    }
    _run.interrupted.store(0);
    _account->clear_refusal();
    _run.deadline_ns.store(
        now_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(_limits.timeout).count());
    return std::nullopt;
}

void serving_session::end_statement() {
    _run.deadline_ns.store(0);
    _run.cancel.store(false);
}

query_error serving_session::error_for(const d::ErrorData& e) {
    const auto why = _run.interrupted.load();
    if (e.Type() == d::ExceptionType::INTERRUPT && why == 1 + static_cast<int>(failure::timeout))
        return {failure::timeout,
                fmt::format("canceling statement due to statement timeout ({} ms)",
                            _limits.timeout.count())};
    if (e.Type() == d::ExceptionType::INTERRUPT &&
        why == 1 + static_cast<int>(failure::temp_exhausted)) {
        auto q = *refusal_error(budget_refusal::total_temp);
        log_refusal(q, _ctx.principal());
        return q;
    }
    if (e.Type() == d::ExceptionType::INTERRUPT)
        return {failure::canceled, "canceling statement due to user request"};
    const auto& msg = e.RawMessage();
    if (e.Type() == d::ExceptionType::OUT_OF_MEMORY) {
        // A bound of ours refused a block (duck/session_memory.h), or DuckDB's buffer pool
        // (memory_limit) or temp directory (max_temp_directory_size) is full.
        auto q = refusal_error(_account->refusal());
        if (!q)
            q = query_error{msg.find("temp") != std::string::npos ? failure::temp_exhausted
                                                                 : failure::memory_exhausted,
                            fmt::format("{} (every session's memory together: --sql-memory; "
                                        "temporary files: --sql-temp-bytes)",
                                        one_line(e.Message()))};
        if (q->kind != failure::program_limit) log_refusal(*q, _ctx.principal());
        return *q;
    }
    // DuckDB's max_expression_depth, 1000 as SQLite's SQLITE_LIMIT_EXPR_DEPTH: the same bound.
    if (e.Type() == d::ExceptionType::PARSER && msg.find("expression depth") != std::string::npos)
        return {failure::program_limit, "Expression tree is too large (maximum depth 1000)"};
    // SQLite's words (clients and the tests match "disk is full"), without DuckDB's path
    // of the file, which is the server's.
    if (failure_of(e.Type(), msg) == failure::disk_full)
        return {failure::disk_full,
                fmt::format("database or disk is full: the SQL engine's database could not be "
                            "written ({}); free space on the data directory's disk",
                            no_space_text)};
    // Hints that need only the message (the statement's own come at prepare).
    auto text = one_line(e.Message());
    if (const auto hint = error_hint({}, text); !hint.empty()) text += " " + hint;
    return {failure_of(e.Type(), msg), std::move(text)};
}

outcome<std::unique_ptr<sql::statement>> serving_session::prepare_declared(
    std::string_view sql, std::string_view* tail, std::span<const param_type> declared) {
    const auto started = steady::now();
    auto r = prepare_statement(sql, tail, declared);
    // A statement refused before it runs counts as failed too (sql_metrics.h).
    if (!r.ok()) count_query(started, query_outcome::failed);
    return r;
}

outcome<std::unique_ptr<sql::statement>> serving_session::prepare_statement(
    std::string_view sql, std::string_view* tail, std::span<const param_type> declared) {
    _run.cancel.store(false);  // a cancel that came while idle is forgotten
    if (tail) *tail = {};
    // The separators before a statement (the `;` a tail starts with): DuckDB's parser
    // places a statement after an empty one wrongly ("; SELECT 2" fails to prepare).
    while (!sql.empty() &&
           (sql.front() == ';' || std::isspace(static_cast<unsigned char>(sql.front()))))
        sql.remove_prefix(1);
    // psql's OPERATOR(pg_catalog.~): in place, the text's length kept (the tail's offsets).
    std::string text(sql);
    pg_operator_text(text);
    const auto hinted = [&text](query_error q) {
        if (const auto hint = error_hint(text, q.message);
            !hint.empty() && q.message.find(hint) == std::string::npos)
            q.message += " " + hint;
        return q;
    };
    try {
        if (auto why = text_refused(text)) return *why;
        auto statements = _con->ExtractStatements(text);
        if (statements.empty()) return std::unique_ptr<sql::statement>();
        auto& first = statements[0];
        const size_t end = std::min(text.size(), first->stmt_location + first->stmt_length);
        if (tail) *tail = sql.substr(end);
        answer_client_parameters(*first, _client_params);
        if (first->type == d::StatementType::COPY_STATEMENT) {
            if (auto why = aim_copy(*first, _db.export_dir)) return *why;
        } else if (auto why =
                       refused(*first, d::DatabaseManager::GetDefaultDatabase(*_con->context),
                               _db.access.guard.load())) {
            return *why;
        } else if (auto hidden = walk_refused(*first)) {
            return *hidden;
        } else if (auto big = compound_refused(*first)) {
            return *big;
        }
        shape_statement(*first);
        pg_catalog_statement(*first, text);
        std::string own = text.substr(first->stmt_location, end - first->stmt_location);
        _bound_topics.clear();
        _account->clear_refusal();
        const typmod_plan typmods(*first);
        const size_t n_params = first->named_param_map.size();
        auto spare = n_params > 0 ? first->Copy() : nullptr;
        d::unique_ptr<d::PreparedStatement> prep;
        std::optional<typed_parameters> typed;
        {
            // DuckDB computes constant expressions while planning.
            memory_scope charged(_account);
            prep = _con->Prepare(std::move(first));
            if (spare && !prep->HasError() && result_open(*prep))
                typed = type_parameters(*_con, *spare, n_params, declared);
        }
        if (prep->HasError()) return hinted(error_for(prep->GetErrorObject()));
        if (prep->GetNames().size() > max_result_columns)
            return query_error{
                failure::program_limit,
                fmt::format("too many columns in result set (at most {})", max_result_columns)};
        return std::unique_ptr<sql::statement>(
            std::make_unique<serving_statement>(*this, std::move(own), std::move(prep),
                                                std::move(typed), typmods));
    } catch (const std::exception& e) {
        return hinted(error_for(d::ErrorData(e)));
    }
}

bool serving_session::is_engine_setting(std::string_view name) const {
    const std::string n(name);
    if (d::DBConfig::GetOptionByName(n)) return true;
    d::ExtensionOption ext;
    return d::DBConfig::GetConfig(*_con->context).TryGetExtensionOption(n, ext);
}

std::optional<query_error> serving_session::check_topics(const std::vector<std::string>& topics) {
    std::lock_guard lk(_mu);
    for (const auto& t : topics)
        if (auto denied = _ctx.check_topic_read(t))
            return query_error{failure::not_authorized, *denied};
    return std::nullopt;
}

// ---- watchdog ----

watchdog::watchdog(std::filesystem::path temp_dir, uint64_t temp_bytes)
    : _temp_dir(std::move(temp_dir)), _temp_bytes(temp_bytes), _thread([this] { loop(); }) {}

bool watchdog::temp_full() {
    if (_temp_dir.empty() || _temp_bytes == 0) return false;
    const auto now = now_ns();
    if (now < _next_temp_check_ns) return false;
    _next_temp_check_ns = now + 20'000'000;  // 20 ms: a directory of a few files
    uint64_t used = 0;
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(_temp_dir, ec)) {
        struct stat st {};
        if (::stat(f.path().c_str(), &st) == 0) used += static_cast<uint64_t>(st.st_blocks) * 512;
    }
    return used > _temp_bytes;
}

watchdog::~watchdog() {
    {
        std::lock_guard lk(_mu);
        _stop = true;
    }
    _cv.notify_all();
    _thread.join();
}

void watchdog::add(run_state* r, d::Connection* c) {
    std::lock_guard lk(_mu);
    _sessions.emplace_back(r, c);
}

void watchdog::remove(run_state* r) {
    std::lock_guard lk(_mu);
    std::erase_if(_sessions, [r](const auto& e) { return e.first == r; });
}

void watchdog::loop() {
    std::unique_lock lk(_mu);
    while (!_stop) {
        _cv.wait_for(lk, std::chrono::milliseconds(5));
        const auto now = now_ns();
        // The temp directory is summed only while a statement runs: DuckDB removes a
        // statement's files when it ends, and an idle broker walks nothing.
        const bool running = std::any_of(_sessions.begin(), _sessions.end(), [](const auto& e) {
            return e.first->deadline_ns.load() != 0;
        });
        const bool full = running && temp_full();
        for (auto& [r, c] : _sessions) {
            const auto deadline = r->deadline_ns.load();
            if (deadline == 0 || r->interrupted.load() != 0) continue;
            failure why;
            if (r->cancel.load())
                why = failure::canceled;
            else if (now > deadline)
                why = failure::timeout;
            else if (full)  // which statement writes there DuckDB does not say: every one
                why = failure::temp_exhausted;
            else
                continue;
            r->interrupted.store(1 + static_cast<int>(why));
            c->Interrupt();
        }
    }
}

}  // namespace sluice::sql::duck
