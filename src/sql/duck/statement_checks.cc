#include "sql/duck/statement_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "duckdb.hpp"
#include "duckdb/parser/expression/constant_expression.hpp"
#include "duckdb/parser/expression/function_expression.hpp"
#include "duckdb/parser/query_node.hpp"
#include "duckdb/parser/query_node/set_operation_node.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
#include "duckdb/parser/tableref/basetableref.hpp"
#include "sql/budget.h"
#include "sql/duck/statement_walk.h"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

std::string lowered(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// The words of a statement's start, upper-cased, past blanks and comments.
std::vector<std::string> leading_words(std::string_view sql, size_t n) {
    std::vector<std::string> words;
    size_t i = 0;
    while (i < sql.size() && words.size() < n) {
        const char c = sql[i];
        if (std::isspace(static_cast<unsigned char>(c)) || c == ';') {
            ++i;
        } else if (sql.substr(i, 2) == "--") {
            i = sql.find('\n', i);
            if (i == std::string_view::npos) break;
        } else if (sql.substr(i, 2) == "/*") {
            i = sql.find("*/", i + 2);
            if (i == std::string_view::npos) break;
            i += 2;
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            std::string w;
            for (; i < sql.size() &&
                   (std::isalnum(static_cast<unsigned char>(sql[i])) || sql[i] == '_');
                 ++i)
                w += static_cast<char>(std::toupper(static_cast<unsigned char>(sql[i])));
            words.push_back(std::move(w));
        } else {
            break;
        }
    }
    return words;
}

// Tables (DuckDB's views) and table functions that show the server's paths.
bool shows_files(const std::string& name) {
    static constexpr std::array<std::string_view, 11> names{
        "pragma_database_list", "duckdb_databases",       "duckdb_settings",
        "pg_settings",          "duckdb_temporary_files", "duckdb_extensions",
        "duckdb_secrets",       "which_secret",           "glob",
        "duckdb_logs",          "duckdb_log_contexts"};
    const auto l = lowered(name);
    return std::find(names.begin(), names.end(), l) != names.end();
}

// A setting whose value names a directory, path or file (temp_directory, allowed_paths,
// secret_directory, extension_directory, profiling_output, ...).
bool setting_names_files(const std::string& setting) {
    const auto l = lowered(setting);
    for (const auto part : {"director", "path", "output", "file", "repositor"})
        if (l.find(part) != std::string::npos) return true;
    return false;
}

query_error not_available(const std::string& what) {
    return {failure::read_only,
            fmt::format("{} is not available: it shows the server's files (SQL users see no "
                        "paths of the server)",
                        what)};
}

// What walk_refused looks for in one expression or table reference; the first found.
struct refusals {
    std::optional<query_error> found;

    void ref(d::TableRef& r) {
        if (found) return;
        if (r.type == d::TableReferenceType::BASE_TABLE) {
            const auto& t = r.Cast<d::BaseTableRef>();
            if (shows_files(t.table_name)) found = not_available(t.table_name);
        }
    }
    void expr(const d::ParsedExpression& e) {
        if (found || e.GetExpressionClass() != d::ExpressionClass::FUNCTION) return;
        const auto& f = e.Cast<d::FunctionExpression>();
        const auto name = lowered(f.function_name);
        // DuckDB's grammar binds `a = b ->> 'p'` as `(a = b) ->> 'p'`: another answer,
        // silently, where PostgreSQL and SQLite read `a = (b ->> 'p')`.
        if (name == "->>" && !f.children.empty() && f.children[0] &&
            f.children[0]->GetExpressionClass() == d::ExpressionClass::COMPARISON) {
            found = query_error{failure::syntax,
                                fmt::format("{} ->> ...: DuckDB applies ->> to the comparison's "
                                            "result; PostgreSQL and SQLite compare with the ->> "
                                            "result: write parentheses around the ->> "
                                            "expression, e.g. x = (value ->> '$.f')",
                                            f.children[0]->ToString())};
            return;
        }
        if (shows_files(name)) {
            found = not_available(name + "()");
            return;
        }
        if (name != "current_setting" && name != "getvariable") return;
        const auto* arg = f.children.empty() ? nullptr : f.children[0].get();
        const auto* c = arg && arg->GetExpressionClass() == d::ExpressionClass::CONSTANT
                            ? &arg->Cast<d::ConstantExpression>()
                            : nullptr;
        if (!c || c->value.type().id() != d::LogicalTypeId::VARCHAR) {
            found = query_error{failure::read_only,
                                name + "() takes the setting's name as a string literal"};
            return;
        }
        if (const auto s = c->value.GetValue<std::string>(); setting_names_files(s))
            found = not_available(fmt::format("{}('{}')", name, s));
    }
};

}  // namespace

std::optional<query_error> text_refused(std::string_view sql) {
    if (sql.size() > max_sql_text)
        return query_error{failure::program_limit, fmt::format("the SQL text is longer than {}",
                                                               format_bytes(max_sql_text))};
    const auto w = leading_words(sql, 3);
    if (w.empty()) return std::nullopt;
    // DuckDB runs a PRAGMA as it parses (PRAGMA database_list shows the database file).
    if (w[0] == "PRAGMA")
        return query_error{failure::read_only,
                           "PRAGMA is not available on the duckdb SQL engine: read settings "
                           "with current_setting('name'), the catalog in information_schema"};
    const bool rollback_to = w[0] == "ROLLBACK" && w.size() >= 2 &&
                             (w[1] == "TO" || ((w[1] == "WORK" || w[1] == "TRANSACTION") &&
                                               w.size() == 3 && w[2] == "TO"));
    if (w[0] != "SAVEPOINT" && w[0] != "RELEASE" && !rollback_to) return std::nullopt;
    return query_error{failure::not_supported,
                       "savepoints are not supported on the duckdb SQL engine (DuckDB has "
                       "none): use a transaction of its own (BEGIN ... COMMIT/ROLLBACK) for "
                       "the statements to undo together"};
}

namespace {

// The SELECTs a compound SELECT joins (1 for a query that is not one).
size_t compound_terms(const d::QueryNode& n) {
    if (n.type != d::QueryNodeType::SET_OPERATION_NODE) return 1;
    size_t terms = 0;
    for (const auto& c : n.Cast<d::SetOperationNode>().children) terms += compound_terms(*c);
    return terms;
}

}  // namespace

std::optional<query_error> compound_refused(const d::SQLStatement& s) {
    if (s.type != d::StatementType::SELECT_STATEMENT) return std::nullopt;
    const auto& q = s.Cast<d::SelectStatement>();
    if (!q.node || compound_terms(*q.node) <= max_compound_terms) return std::nullopt;
    return query_error{
        failure::program_limit,
        fmt::format("too many terms in compound SELECT (at most {})", max_compound_terms)};
}

std::optional<query_error> walk_refused(d::SQLStatement& s) {
    refusals r;
    walk_statement(
        s, [&r](d::unique_ptr<d::ParsedExpression>& e) { r.expr(*e); },
        [&r](d::TableRef& t) { r.ref(t); });
    return r.found;
}

}  // namespace sluice::sql::duck
