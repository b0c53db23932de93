#include "sql/duck/statement_walk.h"

#include "duckdb/parser/expression/subquery_expression.hpp"
#include "duckdb/parser/parsed_data/create_table_info.hpp"
#include "duckdb/parser/parsed_data/create_view_info.hpp"
#include "duckdb/parser/parsed_expression_iterator.hpp"
#include "duckdb/parser/query_node.hpp"
#include "duckdb/parser/statement/create_statement.hpp"
#include "duckdb/parser/statement/delete_statement.hpp"
#include "duckdb/parser/statement/explain_statement.hpp"
#include "duckdb/parser/statement/insert_statement.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
#include "duckdb/parser/statement/update_statement.hpp"
#include "duckdb/parser/tableref.hpp"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

using expression_fn = std::function<void(d::unique_ptr<d::ParsedExpression>&)>;
using table_fn = std::function<void(d::TableRef&)>;

struct walker {
    const expression_fn& on_expression;
    const table_fn& on_table;

    void ref(d::TableRef& r) const {
        if (on_table) on_table(r);
    }
    // DuckDB's iterator descends into joins and subqueries in FROM itself.
    void node(d::QueryNode& n) const {
        for (auto& [name, cte] : n.cte_map.map) node(*cte->query->node);
        d::ParsedExpressionIterator::EnumerateQueryNodeChildren(
            n, [this](d::unique_ptr<d::ParsedExpression>& e) { expr(e); },
            [this](d::TableRef& r) { ref(r); });
    }
    void expr(d::unique_ptr<d::ParsedExpression>& e) const {
        if (!e) return;
        on_expression(e);
        if (e->GetExpressionClass() == d::ExpressionClass::SUBQUERY)
            node(*e->Cast<d::SubqueryExpression>().subquery->node);
        d::ParsedExpressionIterator::EnumerateChildren(
            *e, [this](d::unique_ptr<d::ParsedExpression>& c) { expr(c); });
    }
    void exprs(d::vector<d::unique_ptr<d::ParsedExpression>>& list) const {
        for (auto& e : list) expr(e);
    }
    void table(d::unique_ptr<d::TableRef>& t) const {
        if (!t) return;
        ref(*t);
        d::ParsedExpressionIterator::EnumerateTableRefChildren(
            *t, [this](d::unique_ptr<d::ParsedExpression>& e) { expr(e); },
            [this](d::TableRef& r) { ref(r); });
    }
    void statement(d::SQLStatement& s) const {
        switch (s.type) {
            case d::StatementType::SELECT_STATEMENT:
                if (auto& q = s.Cast<d::SelectStatement>(); q.node) node(*q.node);
                break;
            case d::StatementType::EXPLAIN_STATEMENT:
                if (auto& x = s.Cast<d::ExplainStatement>(); x.stmt) statement(*x.stmt);
                break;
            case d::StatementType::INSERT_STATEMENT: {
                auto& i = s.Cast<d::InsertStatement>();
                if (i.select_statement && i.select_statement->node) node(*i.select_statement->node);
                exprs(i.returning_list);
                break;
            }
            case d::StatementType::UPDATE_STATEMENT: {
                auto& u = s.Cast<d::UpdateStatement>();
                table(u.from_table);
                if (u.set_info) {
                    exprs(u.set_info->expressions);
                    expr(u.set_info->condition);
                }
                exprs(u.returning_list);
                break;
            }
            case d::StatementType::DELETE_STATEMENT: {
                auto& del = s.Cast<d::DeleteStatement>();
                for (auto& t : del.using_clauses) table(t);
                expr(del.condition);
                exprs(del.returning_list);
                break;
            }
            case d::StatementType::CREATE_STATEMENT: {
                auto& info = *s.Cast<d::CreateStatement>().info;
                d::SelectStatement* q = nullptr;
                if (info.type == d::CatalogType::TABLE_ENTRY)
                    q = info.Cast<d::CreateTableInfo>().query.get();
                else if (info.type == d::CatalogType::VIEW_ENTRY)
                    q = info.Cast<d::CreateViewInfo>().query.get();
                if (q && q->node) node(*q->node);
                break;
            }
            default:
                break;
        }
    }
};

}  // namespace

void walk_statement(d::SQLStatement& s, const expression_fn& on_expression,
                    const table_fn& on_table) {
    walker{on_expression, on_table}.statement(s);
}

}  // namespace sluice::sql::duck
