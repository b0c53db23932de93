#include "sql/duck/json_paths.h"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "duckdb.hpp"
#include "duckdb/parser/expression/constant_expression.hpp"
#include "duckdb/parser/expression/function_expression.hpp"
#include "duckdb/parser/expression/subquery_expression.hpp"
#include "duckdb/parser/parsed_expression_iterator.hpp"
#include "duckdb/parser/query_node/cte_node.hpp"
#include "duckdb/parser/query_node/recursive_cte_node.hpp"
#include "duckdb/parser/query_node/select_node.hpp"
#include "duckdb/parser/query_node/set_operation_node.hpp"
#include "duckdb/parser/result_modifier.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
#include "duckdb/parser/tableref/subqueryref.hpp"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

// The path of `x ->> 'path'` or json_extract_string(x, 'path') with a constant path
// without wildcards; null for any other expression.
const std::string* text_path(const d::ParsedExpression& e) {
    if (e.GetExpressionClass() != d::ExpressionClass::FUNCTION) return nullptr;
    const auto& f = e.Cast<d::FunctionExpression>();
    if (f.function_name != "->>" && f.function_name != "json_extract_string") return nullptr;
    if (f.children.size() != 2 || f.distinct || f.filter ||
        (f.order_bys && !f.order_bys->orders.empty()) ||
        f.children[1]->GetExpressionClass() != d::ExpressionClass::CONSTANT)
        return nullptr;
    const auto& v = f.children[1]->Cast<d::ConstantExpression>().value;
    const auto t = v.type().id();
    if (v.IsNull() || (t != d::LogicalTypeId::VARCHAR && t != d::LogicalTypeId::STRING_LITERAL))
        return nullptr;
    const auto& path = d::StringValue::Get(v);
    return path.find('*') == std::string::npos ? &path : nullptr;
}

// The paths extracted from one JSON expression, in the order first seen.
struct extracted {
    const d::ParsedExpression* json;
    std::vector<std::string> paths;
};

// One SELECT's projection: the extractions are collected first, then those of a JSON
// expression with two or more paths rewritten. Neither pass descends into an
// extraction's own arguments, so the JSON expressions collected stay as they were.
class projection {
  public:
    void collect(const d::ParsedExpression& e) {
        if (skipped(e)) return;
        if (const auto* path = text_path(e)) {
            const auto& json = *e.Cast<d::FunctionExpression>().children[0];
            auto* x = find(json);
            if (!x) x = &_seen.emplace_back(extracted{&json, {}});
            if (std::find(x->paths.begin(), x->paths.end(), *path) == x->paths.end())
                x->paths.push_back(*path);
            return;
        }
        d::ParsedExpressionIterator::EnumerateChildren(
            e, [this](const d::ParsedExpression& c) { collect(c); });
    }

    void rewrite(d::unique_ptr<d::ParsedExpression>& e) {
        if (skipped(*e)) return;
        if (const auto* path = text_path(*e)) {
            auto& f = e->Cast<d::FunctionExpression>();
            const auto* x = find(*f.children[0]);
            if (!x || x->paths.size() < 2) return;
            const auto at = std::find(x->paths.begin(), x->paths.end(), *path) - x->paths.begin();
            d::vector<d::Value> paths;
            for (const auto& p : x->paths) paths.emplace_back(p);
            d::vector<d::unique_ptr<d::ParsedExpression>> args;
            args.push_back(std::move(f.children[0]));
            args.push_back(d::make_uniq<d::ConstantExpression>(
                d::Value::LIST(d::LogicalType::VARCHAR, std::move(paths))));
            d::vector<d::unique_ptr<d::ParsedExpression>> element;
            element.push_back(
                d::make_uniq<d::FunctionExpression>("json_extract_string", std::move(args)));
            element.push_back(d::make_uniq<d::ConstantExpression>(
                d::Value::BIGINT(static_cast<int64_t>(at) + 1)));
            auto alias = e->GetAlias();
            e = d::make_uniq<d::FunctionExpression>("array_extract", std::move(element));
            e->SetAlias(std::move(alias));
            return;
        }
        d::ParsedExpressionIterator::EnumerateChildren(
            *e, [this](d::unique_ptr<d::ParsedExpression>& c) { rewrite(c); });
    }

  private:
    // A subquery is a projection of its own; a CASE branch is evaluated only when taken
    // (sharing would parse for every row); a lambda's body is DuckDB's to bind.
    static bool skipped(const d::ParsedExpression& e) {
        const auto c = e.GetExpressionClass();
        return c == d::ExpressionClass::SUBQUERY || c == d::ExpressionClass::CASE ||
               c == d::ExpressionClass::LAMBDA;
    }
    extracted* find(const d::ParsedExpression& json) {
        for (auto& x : _seen)
            if (x.json->Equals(json)) return &x;
        return nullptr;
    }
    std::vector<extracted> _seen;
};

// The expressions of a SELECT that DuckDB computes from its input rows after the filter.
template <class F>
void projection_expressions(d::SelectNode& s, F&& f) {
    for (auto& e : s.select_list) f(e);
    for (auto& e : s.groups.group_expressions) f(e);
    if (s.having) f(s.having);
    if (s.qualify) f(s.qualify);
    for (auto& m : s.modifiers) {
        if (m->type == d::ResultModifierType::ORDER_MODIFIER) {
            for (auto& o : m->Cast<d::OrderModifier>().orders) f(o.expression);
        } else if (m->type == d::ResultModifierType::DISTINCT_MODIFIER) {
            for (auto& e : m->Cast<d::DistinctModifier>().distinct_on_targets) f(e);
        }
    }
}

// Every query node of a statement, each once.
class walker {
  public:
    void node(d::QueryNode& n) {
        if (!_done.insert(&n).second) return;
        for (auto& [name, cte] : n.cte_map.map) node(*cte->query->node);
        if (n.type == d::QueryNodeType::SELECT_NODE) {
            auto& s = n.Cast<d::SelectNode>();
            projection p;
            projection_expressions(s, [&p](d::unique_ptr<d::ParsedExpression>& e) {
                if (e) p.collect(*e);
            });
            projection_expressions(s, [&p](d::unique_ptr<d::ParsedExpression>& e) {
                if (e) p.rewrite(e);
            });
        } else if (n.type == d::QueryNodeType::SET_OPERATION_NODE) {
            for (auto& c : n.Cast<d::SetOperationNode>().children) node(*c);
        } else if (n.type == d::QueryNodeType::RECURSIVE_CTE_NODE) {
            auto& r = n.Cast<d::RecursiveCTENode>();
            if (r.left) node(*r.left);
            if (r.right) node(*r.right);
        } else if (n.type == d::QueryNodeType::CTE_NODE) {
            auto& c = n.Cast<d::CTENode>();
            if (c.query) node(*c.query);
            if (c.child) node(*c.child);
        }
        // Subqueries in expressions and in FROM (DuckDB's iterator reaches the
        // expressions of FROM's subqueries and joins itself).
        d::ParsedExpressionIterator::EnumerateQueryNodeChildren(
            n, [this](d::unique_ptr<d::ParsedExpression>& e) { subqueries(*e); },
            [this](d::TableRef& r) {
                if (r.type == d::TableReferenceType::SUBQUERY)
                    node(*r.Cast<d::SubqueryRef>().subquery->node);
            });
    }

  private:
    void subqueries(d::ParsedExpression& e) {
        if (e.GetExpressionClass() == d::ExpressionClass::SUBQUERY)
            node(*e.Cast<d::SubqueryExpression>().subquery->node);
        d::ParsedExpressionIterator::EnumerateChildren(
            e, [this](d::ParsedExpression& c) { subqueries(c); });
    }
    std::unordered_set<const d::QueryNode*> _done;
};

}  // namespace

void share_json_parses(duckdb::QueryNode& n) {
    walker{}.node(n);
}

}  // namespace sluice::sql::duck
