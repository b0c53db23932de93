#include "sql/duck/pg_typmod.h"

#include "duckdb.hpp"
#include "duckdb/parser/expression/cast_expression.hpp"
#include "duckdb/parser/expression/type_expression.hpp"
#include "duckdb/parser/query_node/select_node.hpp"
#include "duckdb/parser/statement/select_statement.hpp"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

// A cast keeps its type's modifier when the type was written with one: DuckDB's parser
// leaves the type unbound, its modifiers as the type expression's children.
bool cast_keeps(const d::CastExpression& c) {
    if (c.cast_type.id() != d::LogicalTypeId::UNBOUND) return true;
    const auto& t = d::UnboundType::GetTypeExpression(c.cast_type);
    return !t || t->GetExpressionClass() != d::ExpressionClass::TYPE ||
           !t->Cast<d::TypeExpression>().GetChildren().empty();
}

bool entry_keeps(const d::ParsedExpression& e) {
    switch (e.GetExpressionClass()) {
        case d::ExpressionClass::COLUMN_REF:
            return true;
        case d::ExpressionClass::CAST:
            return cast_keeps(e.Cast<d::CastExpression>());
        default:
            return false;
    }
}

}  // namespace

typmod_plan::typmod_plan(const d::SQLStatement& s) {
    _star = true;  // unless the statement is a plain SELECT: every column keeps its own
    if (s.type != d::StatementType::SELECT_STATEMENT) return;
    const auto& node = s.Cast<d::SelectStatement>().node;
    if (!node || node->type != d::QueryNodeType::SELECT_NODE) return;
    _star = false;
    for (const auto& e : node->Cast<d::SelectNode>().select_list) {
        if (e->GetExpressionClass() == d::ExpressionClass::STAR) {
            _star = true;
            _back.clear();
            continue;
        }
        (_star ? _back : _front).push_back(entry_keeps(*e));
    }
}

bool typmod_plan::keeps(size_t i, size_t n) const {
    if (i < _front.size()) return _front[i];
    if (!_star) return true;  // not reached: a list without `*` has a column per entry
    const size_t from_end = n - i;
    if (from_end <= _back.size()) return _back[_back.size() - from_end];
    return true;
}

}  // namespace sluice::sql::duck
