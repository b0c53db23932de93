#include "sql/duck/pg_names.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>
#include <utility>

#include "duckdb/parser/expression/case_expression.hpp"
#include "duckdb/parser/expression/cast_expression.hpp"
#include "duckdb/parser/expression/collate_expression.hpp"
#include "duckdb/parser/expression/columnref_expression.hpp"
#include "duckdb/parser/expression/constant_expression.hpp"
#include "duckdb/parser/expression/function_expression.hpp"
#include "duckdb/parser/expression/operator_expression.hpp"
#include "duckdb/parser/expression/subquery_expression.hpp"
#include "duckdb/parser/expression/type_expression.hpp"
#include "duckdb/parser/expression/window_expression.hpp"
#include "duckdb/parser/query_node/select_node.hpp"
#include "duckdb/parser/query_node/set_operation_node.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
#include "duckdb/parser/tableref/joinref.hpp"
#include "duckdb/parser/tableref/subqueryref.hpp"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

constexpr const char* unnamed = "?column?";

// A name and how strongly it holds (PostgreSQL's rule): 2 a name of its own (a column,
// a function, a construct's keyword), 1 a fallback (a cast's type, `case`), 0 none.
struct figured {
    std::string name;
    int strength = 0;
};

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// PostgreSQL's spelling of a type DuckDB's parser names (it writes the built-in types its
// own way: `text` and `varchar` as VARCHAR, `int` as INTEGER, `bytea` as BLOB). `sized`:
// the type has parameters (`varchar(3)`, `numeric(10, 2)`).
std::string pg_spelling(const std::string& duck, bool sized) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 12> names{{
        {"integer", "int4"},
        {"bigint", "int8"},
        {"smallint", "int2"},
        {"float", "float4"},
        {"double", "float8"},
        {"decimal", "numeric"},
        {"boolean", "bool"},
        {"varchar", "text"},  // PostgreSQL's own string type; with a length, varchar
        {"blob", "bytea"},
        {"timestamp with time zone", "timestamptz"},
        {"time with time zone", "timetz"},
        {"timestamp_s", "timestamp"},
    }};
    // DuckDB's names of built-in types are upper case; a name a user wrote is as written.
    const bool builtin = std::none_of(duck.begin(), duck.end(),
                                      [](unsigned char c) { return std::islower(c); });
    if (!builtin) return duck;
    auto l = lower(duck);
    if (l == "varchar" && sized) return "varchar";
    for (const auto& [from, to] : names)
        if (from == l) return std::string(to);
    return l;
}

// The type a cast names. An array's is its element's, as in PostgreSQL (`int[]`: int4).
std::string cast_type_name(const d::LogicalType& t) {
    if (t.id() != d::LogicalTypeId::UNBOUND) return pg_spelling(d::LogicalTypeIdToString(t.id()), false);
    const d::ParsedExpression* e = d::UnboundType::GetTypeExpression(t).get();
    while (e && e->GetExpressionClass() == d::ExpressionClass::TYPE) {
        const auto& type = e->Cast<d::TypeExpression>();
        const auto& children = type.GetChildren();
        if (lower(type.GetTypeName()) != "list" || children.size() != 1)
            return pg_spelling(type.GetTypeName(), !children.empty());
        e = children[0].get();
    }
    return unnamed;
}

// DuckDB's parser names some functions otherwise than the SQL it parsed.
figured function_name(const std::string& name) {
    if (name == "count_star") return {"count", 2};
    if (name == "trim") return {"btrim", 2};  // TRIM(x), TRIM(BOTH ... FROM x)
    // x ~ 'a', x SIMILAR TO 'a': operators in PostgreSQL.
    if (name == "regexp_full_match") return {};
    return {name, 2};
}

bool is_call(const d::ParsedExpression& e, std::string_view name, size_t args) {
    return e.GetExpressionClass() == d::ExpressionClass::FUNCTION &&
           e.Cast<d::FunctionExpression>().function_name == name &&
           e.Cast<d::FunctionExpression>().children.size() == args;
}

// ARRAY(SELECT ...), which DuckDB's parser writes as a scalar subquery of
// `CASE WHEN array_agg(x) IS NULL THEN list_value() ELSE array_agg(x) END`.
bool is_array_subquery(const d::QueryNode& n) {
    if (n.type != d::QueryNodeType::SELECT_NODE) return false;
    const auto& list = n.Cast<d::SelectNode>().select_list;
    if (list.size() != 1 || list[0]->GetExpressionClass() != d::ExpressionClass::CASE) return false;
    const auto& c = list[0]->Cast<d::CaseExpression>();
    return c.case_checks.size() == 1 && c.else_expr && is_call(*c.else_expr, "array_agg", 1) &&
           is_call(*c.case_checks[0].then_expr, "list_value", 0);
}

bool is_identifier(const std::string& name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_';
    });
}

figured figure(const d::ParsedExpression& e);

// TRUE and FALSE, which DuckDB's parser writes as CAST('t' AS BOOLEAN) and 'f' (a
// constant to PostgreSQL, unnamed; '1'::boolean is named bool in both).
bool is_true_or_false(const d::CastExpression& c) {
    if (c.child->GetExpressionClass() != d::ExpressionClass::CONSTANT) return false;
    const auto& v = c.child->Cast<d::ConstantExpression>().value;
    if (v.type().id() != d::LogicalTypeId::VARCHAR || v.IsNull()) return false;
    const auto text = v.ToString();
    return (text == "t" || text == "f") && cast_type_name(c.cast_type) == "bool";
}

// A scalar subquery is named by its first column as the subquery names it.
figured first_column(const d::QueryNode& n) {
    if (n.type == d::QueryNodeType::SET_OPERATION_NODE) {
        const auto& children = n.Cast<d::SetOperationNode>().children;
        return children.empty() ? figured{unnamed, 2} : first_column(*children[0]);
    }
    if (n.type != d::QueryNodeType::SELECT_NODE) return {unnamed, 2};
    const auto& list = n.Cast<d::SelectNode>().select_list;
    if (list.empty()) return {unnamed, 2};
    if (list[0]->HasAlias()) return {list[0]->GetAlias(), 2};
    auto f = figure(*list[0]);
    return {f.strength > 0 ? f.name : unnamed, 2};
}

figured figure_operator(const d::OperatorExpression& o) {
    switch (o.GetExpressionType()) {
        case d::ExpressionType::OPERATOR_COALESCE:
            return {"coalesce", 2};
        case d::ExpressionType::OPERATOR_NULLIF:
            return {"nullif", 2};
        case d::ExpressionType::ARRAY_CONSTRUCTOR:
            return {"array", 2};
        case d::ExpressionType::GROUPING_FUNCTION:
            return {"grouping", 2};
        case d::ExpressionType::ARRAY_EXTRACT:
        case d::ExpressionType::ARRAY_SLICE:
            return o.children.empty() ? figured{} : figure(*o.children[0]);
        case d::ExpressionType::STRUCT_EXTRACT:
            if (o.children.size() == 2 &&
                o.children[1]->GetExpressionClass() == d::ExpressionClass::CONSTANT)
                return {o.children[1]->Cast<d::ConstantExpression>().value.ToString(), 2};
            return {};
        default:
            return {};
    }
}

figured figure(const d::ParsedExpression& e) {
    switch (e.GetExpressionClass()) {
        case d::ExpressionClass::COLUMN_REF:
            return {e.Cast<d::ColumnRefExpression>().GetColumnName(), 2};
        case d::ExpressionClass::FUNCTION: {
            const auto& f = e.Cast<d::FunctionExpression>();
            if (f.is_operator || !is_identifier(f.function_name)) return {};
            return function_name(f.function_name);
        }
        case d::ExpressionClass::WINDOW:
            return function_name(e.Cast<d::WindowExpression>().function_name);
        case d::ExpressionClass::CAST: {
            const auto& c = e.Cast<d::CastExpression>();
            if (is_true_or_false(c)) return {};
            auto inner = figure(*c.child);
            if (inner.strength > 1) return inner;
            return {cast_type_name(c.cast_type), 1};
        }
        case d::ExpressionClass::COLLATE:
            return figure(*e.Cast<d::CollateExpression>().child);
        case d::ExpressionClass::CASE: {
            const auto& c = e.Cast<d::CaseExpression>();
            auto inner = c.else_expr ? figure(*c.else_expr) : figured{};
            if (inner.strength > 1) return inner;
            return {"case", 1};
        }
        case d::ExpressionClass::OPERATOR:
            return figure_operator(e.Cast<d::OperatorExpression>());
        case d::ExpressionClass::SUBQUERY: {
            const auto& s = e.Cast<d::SubqueryExpression>();
            if (s.subquery_type == d::SubqueryType::EXISTS) return {"exists", 2};
            if (s.subquery_type != d::SubqueryType::SCALAR || !s.subquery || !s.subquery->node)
                return {};
            if (is_array_subquery(*s.subquery->node)) return {"array", 2};
            return first_column(*s.subquery->node);
        }
        default:
            return {};
    }
}

// The subqueries of a FROM clause, whose columns a `*` above shows.
void name_from(d::TableRef& r) {
    if (r.type == d::TableReferenceType::SUBQUERY) {
        auto& q = r.Cast<d::SubqueryRef>().subquery;
        if (q && q->node) name_columns_as_postgres(*q->node);
    } else if (r.type == d::TableReferenceType::JOIN) {
        auto& j = r.Cast<d::JoinRef>();
        if (j.left) name_from(*j.left);
        if (j.right) name_from(*j.right);
    }
}

}  // namespace

std::string pg_column_name(const duckdb::ParsedExpression& e) {
    auto f = figure(e);
    return f.strength > 0 ? f.name : unnamed;
}

void name_columns_as_postgres(duckdb::QueryNode& n) {
    for (auto& [name, cte] : n.cte_map.map)
        if (cte->query && cte->query->node) name_columns_as_postgres(*cte->query->node);
    if (n.type == d::QueryNodeType::SET_OPERATION_NODE) {
        // Every side, so that UNION BY NAME matches the names each side shows.
        for (auto& child : n.Cast<d::SetOperationNode>().children) name_columns_as_postgres(*child);
        return;
    }
    if (n.type != d::QueryNodeType::SELECT_NODE) return;
    auto& select = n.Cast<d::SelectNode>();
    for (auto& e : select.select_list) {
        if (e->HasAlias()) continue;
        const auto cls = e->GetExpressionClass();
        // DuckDB names a column reference by the column already.
        if (cls == d::ExpressionClass::STAR || cls == d::ExpressionClass::COLUMN_REF) continue;
        e->SetAlias(pg_column_name(*e));
    }
    if (select.from_table) name_from(*select.from_table);
}

}  // namespace sluice::sql::duck
