#include "sql/duck/pg_shape.h"

#include "sql/duck/json_paths.h"
#include "sql/duck/pg_names.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "duckdb/function/scalar_function.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "duckdb/parser/expression/cast_expression.hpp"
#include "duckdb/parser/expression/function_expression.hpp"
#include "duckdb/parser/expression/lambda_expression.hpp"
#include "duckdb/parser/expression/subquery_expression.hpp"
#include "duckdb/parser/parsed_data/create_table_info.hpp"
#include "duckdb/parser/parsed_data/create_view_info.hpp"
#include "duckdb/parser/parsed_expression_iterator.hpp"
#include "duckdb/parser/statement/create_statement.hpp"
#include "duckdb/parser/statement/insert_statement.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
#include "duckdb/planner/expression/bound_cast_expression.hpp"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

constexpr const char* json_text_fn = "sluice_json_text";

// The functions whose first argument is JSON.
bool takes_json(const std::string& name) {
    static constexpr std::array<std::string_view, 19> names{"->",
                                                            "->>",
                                                            "json_extract",
                                                            "json_extract_string",
                                                            "json_extract_path",
                                                            "json_extract_path_text",
                                                            "json_exists",
                                                            "json_value",
                                                            "json_valid",
                                                            "json_type",
                                                            "json_array_length",
                                                            "json_keys",
                                                            "json_structure",
                                                            "json_contains",
                                                            "json_transform",
                                                            "json_transform_strict",
                                                            "from_json",
                                                            "from_json_strict",
                                                            "json_pretty"};
    for (const auto n : names)
        if (n == name) return true;
    return false;
}

// DuckDB's functions that take a lambda (`x -> x + 1`) among their arguments.
bool takes_lambda(const std::string& name) {
    static constexpr std::array<std::string_view, 16> names{
        "list_transform", "array_transform", "apply",        "list_apply",
        "array_apply",    "list_filter",     "array_filter", "filter",
        "list_reduce",    "array_reduce",    "reduce",       "list_sort",
        "map_filter",     "map_transform",   "list_any",     "list_all"};
    for (const auto n : names)
        if (n == name) return true;
    return false;
}

bool is_json_text_call(const d::ParsedExpression& e) {
    return e.GetExpressionClass() == d::ExpressionClass::FUNCTION &&
           e.Cast<d::FunctionExpression>().function_name == json_text_fn;
}

// Every expression of a statement, subqueries, CTEs and joins included. An expression
// may be reached twice; it is wrapped once.
struct json_args {
    // DuckDB's iterator descends into joins and subqueries in FROM itself.
    void node(d::QueryNode& n) {
        for (auto& [name, cte] : n.cte_map.map) node(*cte->query->node);
        d::ParsedExpressionIterator::EnumerateQueryNodeChildren(
            n, [this](d::unique_ptr<d::ParsedExpression>& e) { expr(e); });
    }
    void expr(d::unique_ptr<d::ParsedExpression>& e, bool lambda_argument = false) {
        // `x -> 'path'` parses as a lambda; outside the arguments of a function that takes
        // lambdas it can only be JSON's arrow, json_extract (in them: left to DuckDB).
        if (e->GetExpressionClass() == d::ExpressionClass::LAMBDA && !lambda_argument) {
            auto& l = e->Cast<d::LambdaExpression>();
            if (l.syntax_type == d::LambdaSyntaxType::SINGLE_ARROW && l.lhs && l.expr) {
                d::vector<d::unique_ptr<d::ParsedExpression>> args;
                args.push_back(std::move(l.lhs));
                args.push_back(std::move(l.expr));
                auto alias = l.GetAlias();
                e = d::make_uniq<d::FunctionExpression>("json_extract", std::move(args));
                e->SetAlias(std::move(alias));
            }
        }
        bool function = false;
        if (e->GetExpressionClass() == d::ExpressionClass::FUNCTION) {
            auto& f = e->Cast<d::FunctionExpression>();
            function = takes_lambda(f.function_name);
            if (takes_json(f.function_name) && !f.children.empty() &&
                !is_json_text_call(*f.children[0])) {
                d::vector<d::unique_ptr<d::ParsedExpression>> arg;
                arg.push_back(std::move(f.children[0]));
                f.children[0] = d::make_uniq<d::FunctionExpression>(json_text_fn, std::move(arg));
            }
        }
        // x::json reads a BLOB as the JSON text it holds (DuckDB's own cast from BLOB
        // would make a JSON string of its escaped form).
        if (e->GetExpressionClass() == d::ExpressionClass::CAST) {
            auto& c = e->Cast<d::CastExpression>();
            auto type = c.cast_type.ToString();  // unbound: `"json"`, quoted
            std::erase(type, '"');
            std::transform(type.begin(), type.end(), type.begin(),
                           [](unsigned char x) { return static_cast<char>(std::tolower(x)); });
            if (type == "json" && !is_json_text_call(*c.child)) {
                d::vector<d::unique_ptr<d::ParsedExpression>> arg;
                arg.push_back(std::move(c.child));
                c.child = d::make_uniq<d::FunctionExpression>(json_text_fn, std::move(arg));
            }
        }
        if (e->GetExpressionClass() == d::ExpressionClass::SUBQUERY)
            node(*e->Cast<d::SubqueryExpression>().subquery->node);
        d::ParsedExpressionIterator::EnumerateChildren(
            *e, [this, function](d::unique_ptr<d::ParsedExpression>& c) { expr(c, function); });
    }
};

d::unique_ptr<d::FunctionData> json_text_bind(d::ClientContext&, d::ScalarFunction& f,
                                              d::vector<d::unique_ptr<d::Expression>>& args) {
    f.SetReturnType(args[0]->return_type.id() == d::LogicalTypeId::BLOB ? d::LogicalType::VARCHAR
                                                                        : args[0]->return_type);
    return nullptr;
}

// The argument itself, or as text (the engine's BLOB-to-VARCHAR cast: UTF-8, else NULL).
d::unique_ptr<d::Expression> json_text_expression(d::FunctionBindExpressionInput& in) {
    auto arg = in.children[0]->Copy();
    if (arg->return_type.id() != d::LogicalTypeId::BLOB) return arg;
    return d::BoundCastExpression::AddCastToType(in.context, std::move(arg),
                                                 d::LogicalType::VARCHAR);
}

void json_text_never(d::DataChunk&, d::ExpressionState&, d::Vector&) {
    throw d::InternalException("sluice_json_text is replaced when it binds");
}

}  // namespace

void shape_statement(duckdb::SQLStatement& s) {
    // The query of a SELECT, and of an INSERT ... SELECT, CREATE TABLE ... AS and CREATE
    // VIEW (whose columns are named as a SELECT's).
    d::SelectStatement* q = nullptr;
    if (s.type == d::StatementType::SELECT_STATEMENT) {
        q = &s.Cast<d::SelectStatement>();
    } else if (s.type == d::StatementType::INSERT_STATEMENT) {
        q = s.Cast<d::InsertStatement>().select_statement.get();
    } else if (s.type == d::StatementType::CREATE_STATEMENT) {
        auto& info = *s.Cast<d::CreateStatement>().info;
        if (info.type == d::CatalogType::TABLE_ENTRY)
            q = info.Cast<d::CreateTableInfo>().query.get();
        else if (info.type == d::CatalogType::VIEW_ENTRY)
            q = info.Cast<d::CreateViewInfo>().query.get();
    }
    if (!q || !q->node) return;
    if (s.type != d::StatementType::INSERT_STATEMENT) name_columns_as_postgres(*q->node);
    share_json_parses(*q->node);  // before json_args, which wraps the shared extraction's x
    json_args{}.node(*q->node);
}

void register_json_text(duckdb::DatabaseInstance& db) {
    d::ScalarFunction f(json_text_fn, {d::LogicalType::ANY}, d::LogicalType::ANY, json_text_never,
                        json_text_bind);
    f.SetBindExpressionCallback(json_text_expression);
    d::ExtensionLoader loader(db, "sluice_json");
    loader.RegisterFunction(std::move(f));
}

std::string error_hint(std::string_view sql, std::string_view message) {
    const auto has = [](std::string_view text, std::string_view what) {
        return text.find(what) != std::string_view::npos;
    };
    // The topic tables' times are milliseconds (BIGINT), as on the SQLite engine.
    if ((has(message, "No function matches") || has(message, "Cannot compare")) &&
        has(message, "BIGINT") && (has(sql, "timestamp_producer") || has(sql, "timestamp_broker")))
        return "HINT: timestamp_producer and timestamp_broker are milliseconds since the epoch: "
               "use timestamp_producer_tz / timestamp_broker_tz (TIMESTAMPTZ), or for another "
               "epoch write to_timestamp(ms / 1000.0)";
    if (has(message, "Could not convert") && has(message, "to INTERVAL"))
        return "HINT: not an interval: write one as '90 seconds', '1 hour', '2 days 3 hours' or "
               "INTERVAL 5 MINUTE";
    // ->> gives text, as PostgreSQL's does (SQLite's gives a JSON number as a number).
    if ((has(message, "No function matches") || has(message, "Cannot compare") ||
         has(message, "Cannot mix")) &&
        has(message, "VARCHAR") && has(sql, "->>"))
        return "HINT: ->> gives text in PostgreSQL's dialect: cast it to compute with it, e.g. "
               "sum(CAST(value ->> '$.n' AS BIGINT))";
    // PostgreSQL's grammar (DuckDB's) reserves OFFSET: the topic tables' column must be
    // quoted. Looked for as a word not quoted and not after a qualifier's dot.
    const auto word = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '"' || c == '.';
    };
    if (!has(message, "Parser Error")) return {};
    for (size_t i = 0; i + 6 <= sql.size(); ++i) {
        size_t k = 0;
        while (k < 6 && std::tolower(static_cast<unsigned char>(sql[i + k])) == "offset"[k]) ++k;
        if (k < 6 || (i > 0 && word(sql[i - 1])) || (i + 6 < sql.size() && word(sql[i + 6])))
            continue;
        return "HINT: OFFSET is a reserved word in PostgreSQL's dialect: to name the topic "
               "tables' column, quote it: \"offset\"";
    }
    return {};
}

}  // namespace sluice::sql::duck
