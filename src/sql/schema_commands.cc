#include "sql/schema_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <utility>

#include "common/logging.h"
#include "sql/schemas.h"
#include "sql/sql_text.h"
#include "sql/sqlite_session.h"

namespace sluice::sql {

namespace {

// A statement the engine runs itself: no rows, one action on the first step.
class command_statement final : public statement {
  public:
    command_statement(std::string text, std::string verb, std::function<outcome<bool>()> run)
        : _text(std::move(text)), _verb(std::move(verb)), _run(std::move(run)) {}
    const std::string& text() const override { return _text; }
    int param_count() const override { return 0; }
    outcome<bool> bind(const std::vector<value>& params) override {
        if (params.empty()) return true;
        return query_error{failure::invalid_parameter, "the statement takes no parameters"};
    }
    const std::vector<column>& columns() const override { return _columns; }
    step_state step() override {
        if (_done) return _error.message.empty() ? step_state::done : step_state::failed;
        _done = true;
        auto r = _run();
        if (r) return step_state::done;
        _error = r.error();
        return step_state::failed;
    }
    const std::vector<value>& row() const override { return _row; }
    const query_error& error() const override { return _error; }
    int64_t changes() const override { return 0; }
    std::string verb() const override { return _verb; }
    void reset() override {
        _done = false;
        _error = {};
    }

  private:
    std::string _text;
    std::string _verb;
    std::function<outcome<bool>()> _run;
    std::vector<column> _columns;
    std::vector<value> _row;
    query_error _error;
    bool _done = false;
};

// An identifier: bare (folded to lower case, as PostgreSQL does) or "quoted".
std::optional<std::string> read_ident(std::string_view s, size_t& i) {
    std::string name;
    if (i < s.size() && s[i] == '"') {
        for (++i; i < s.size(); ++i) {
            if (s[i] == '"') {
                if (i + 1 < s.size() && s[i + 1] == '"') {
                    name += '"';
                    ++i;
                    continue;
                }
                ++i;
                i = skip_space(s, i);
                return name;
            }
            name += s[i];
        }
        return std::nullopt;
    }
    auto w = next_word(s, i);
    if (w.empty()) return std::nullopt;
    std::transform(w.begin(), w.end(), w.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return w;
}

// SQLite attaches and detaches files only outside a transaction, and drivers in their
// default mode (psycopg2, JDBC) open one before their first statement. So inside a
// transaction that has written nothing yet, the statement runs between that
// transaction's end and a new BEGIN: its reads lose only their snapshot. It then takes
// effect at once; a ROLLBACK of the transaction drops a schema it created if the
// schema is still empty (docs/sql-pg.md).
outcome<bool> outside_transaction(sqlite_session& s, std::string_view verb,
                                  const std::function<outcome<bool>()>& run) {
    if (!s.in_transaction()) return run();
    if (sqlite3_txn_state(s.db(), nullptr) == SQLITE_TXN_WRITE)
        return query_error{failure::invalid_parameter,
                           fmt::format("{} SCHEMA cannot run in a transaction that has written: "
                                       "COMMIT first, or make it the transaction's first write",
                                       verb)};
    if (int rc = sqlite3_exec(s.db(), "COMMIT", nullptr, nullptr, nullptr); rc != SQLITE_OK)
        return s.error_for(rc);
    auto r = run();
    if (int rc = sqlite3_exec(s.db(), "BEGIN", nullptr, nullptr, nullptr); rc != SQLITE_OK)
        return s.error_for(rc);
    return r;
}

}  // namespace

std::optional<outcome<std::unique_ptr<statement>>> parse_schema_command(sqlite_session& s,
                                                                        std::string_view sql,
                                                                        std::string_view* tail) {
    size_t i = skip_space(sql);
    const size_t start = i;
    const auto verb = next_word(sql, i);
    if (verb != "CREATE" && verb != "DROP") return std::nullopt;
    if (next_word(sql, i) != "SCHEMA") return std::nullopt;
    bool guarded = false;  // IF [NOT] EXISTS
    const size_t before_if = i;
    if (next_word(sql, i) == "IF") {
        if (verb == "CREATE" && next_word(sql, i) != "NOT")
            return query_error{failure::syntax, "expected IF NOT EXISTS"};
        if (next_word(sql, i) != "EXISTS")
            return query_error{failure::syntax, "expected EXISTS after IF"};
        guarded = true;
    } else {
        i = before_if;
    }
    auto name = read_ident(sql, i);
    if (!name)
        return query_error{failure::syntax, fmt::format("{} SCHEMA needs a schema name", verb)};
    bool cascade = false;
    if (verb == "DROP") {
        const size_t before = i;
        auto w = next_word(sql, i);
        if (w == "CASCADE")
            cascade = true;
        else if (w != "RESTRICT")
            i = before;
    }
    if (i < sql.size() && sql[i] != ';')
        return query_error{failure::syntax, fmt::format("syntax error at '{}' in {} SCHEMA",
                                                        sql.substr(i, 20), verb)};
    const size_t end = i < sql.size() ? i + 1 : i;
    if (tail) *tail = sql.substr(end);
    std::string text(sql.substr(start, i - start));
    std::function<outcome<bool>()> run;
    if (verb == "CREATE")
        run = [&s, n = *name, guarded] {
            const bool in_tx = s.in_transaction();
            auto r = outside_transaction(s, "CREATE", [&] { return s.create_schema(n, guarded); });
            if (r && in_tx) s.schema_created_in_transaction(n);
            return r;
        };
    else
        run = [&s, n = *name, guarded, cascade] {
            return outside_transaction(s, "DROP",
                                       [&] { return s.drop_schema(n, guarded, cascade); });
        };
    return outcome<std::unique_ptr<statement>>(std::unique_ptr<statement>(
        std::make_unique<command_statement>(std::move(text), verb, std::move(run))));
}

outcome<bool> sqlite_session::create_schema(const std::string& name, bool if_not_exists) {
    if (in_transaction())
        return query_error{failure::invalid_parameter,
                           "CREATE SCHEMA cannot run inside a transaction"};
    auto created = _src.schemas->create(name);
    if (!created) return created.error();
    if (!*created && !if_not_exists)
        return query_error{failure::constraint, fmt::format("schema \"{}\" already exists", name)};
    if (auto r = sync_schemas(); !r) return r;
    if (auto it = _unopened.find(name); it != _unopened.end())
        return query_error{failure::internal,
                           fmt::format("schema \"{}\" cannot be opened: {}", name, it->second)};
    return true;
}

void sqlite_session::schema_created_in_transaction(const std::string& name) {
    if (_created_in_tx.empty()) _rolled_back = false;  // a rollback before it does not count
    _created_in_tx.push_back(name);
}

void sqlite_session::undo_rolled_back_schemas() {
    if (_created_in_tx.empty() || in_transaction()) return;
    auto names = std::exchange(_created_in_tx, {});
    if (!std::exchange(_rolled_back, false)) return;  // committed
    for (const auto& name : names) {
        // Only while empty: another session may have put tables in it meanwhile.
        if (auto r = drop_schema(name, true, false); !r)
            log_info("sql", "schema {} kept after the ROLLBACK of the transaction that created it: {}",
                     name, r.error().message);
    }
}

outcome<bool> sqlite_session::drop_schema(const std::string& name, bool if_exists, bool cascade) {
    if (in_transaction())
        return query_error{failure::invalid_parameter,
                           "DROP SCHEMA cannot run inside a transaction"};
    if (auto r = sync_schemas(); !r) return r.error();
    if (!_attached.count(name)) {
        if (if_exists) return true;
        if (!schema_registry::check_name(name).empty())
            return query_error{failure::read_only,
                               fmt::format("schema \"{}\" cannot be dropped", name)};
        return query_error{failure::undefined_table,
                           fmt::format("schema \"{}\" does not exist", name)};
    }
    if (_src.opts->guard)
        if (auto why = _src.opts->guard->protected_schema(name); !why.empty())
            return query_error{failure::read_only, why};
    sqlite3_stmt* st = nullptr;
    const auto count_sql = fmt::format("SELECT count(*) FROM {}.sqlite_schema", quote_ident(name));
    int64_t objects = 0;
    if (sqlite3_prepare_v2(_db, count_sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        objects = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (objects > 0 && !cascade)
        return query_error{
            failure::constraint,
            fmt::format("schema \"{}\" holds {} objects; DROP SCHEMA {} CASCADE drops them too",
                        name, objects, name)};
    if (auto r = exec_internal("DETACH " + quote_ident(name)); !r) return r.error();
    _attached.erase(name);
    auto dropped = _src.schemas->drop(name);
    if (!dropped) return dropped.error();
    return sync_schemas();
}

}  // namespace sluice::sql
