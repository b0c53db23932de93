#include "sql/duck/param_types.h"

#include <charconv>
#include <exception>

#include "duckdb/parser/expression/case_expression.hpp"
#include "duckdb/parser/expression/cast_expression.hpp"
#include "duckdb/parser/expression/comparison_expression.hpp"
#include "duckdb/parser/expression/constant_expression.hpp"
#include "duckdb/parser/expression/function_expression.hpp"
#include "duckdb/parser/expression/parameter_expression.hpp"
#include "duckdb/parser/sql_statement.hpp"
#include "sql/duck/statement_walk.h"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

// numeric is DOUBLE: the front end reads a numeric value as an integer or a double, and
// DuckDB's DECIMAL without a width is DECIMAL(18,3), which would round 2.7501.
d::LogicalType duck_type(param_type t) {
    switch (t) {
        case param_type::boolean:
            return d::LogicalType::BOOLEAN;
        case param_type::int16:
            return d::LogicalType::SMALLINT;
        case param_type::int32:
            return d::LogicalType::INTEGER;
        case param_type::int64:
            return d::LogicalType::BIGINT;
        case param_type::float32:
            return d::LogicalType::FLOAT;
        case param_type::float64:
        case param_type::numeric:
            return d::LogicalType::DOUBLE;
        case param_type::text:
            return d::LogicalType::VARCHAR;
        case param_type::bytes:
            return d::LogicalType::BLOB;
        case param_type::date:
            return d::LogicalType::DATE;
        case param_type::timestamp:
            return d::LogicalType::TIMESTAMP;
        case param_type::timestamptz:
            return d::LogicalType::TIMESTAMP_TZ;
        case param_type::unspecified:
            break;
    }
    return d::LogicalType::INVALID;
}

bool known(const d::LogicalType& t) {
    return t.id() != d::LogicalTypeId::INVALID && t.id() != d::LogicalTypeId::UNKNOWN &&
           t.id() != d::LogicalTypeId::SQLNULL;
}

// The parameter's number, 1-based ($3 and the third ?), or 0 for a named one.
size_t number_of(const std::string& identifier) {
    size_t n = 0;
    const auto* end = identifier.data() + identifier.size();
    const auto [p, ec] = std::from_chars(identifier.data(), end, n);
    return ec == std::errc() && p == end ? n : 0;
}

// A NULL of type t that DuckDB cannot fold into a constant: CAST(CASE WHEN random() < 0
// THEN NULL END AS t). A plain NULL constant would fold `NULL || 'y'` into a NULL whose
// type is NULL, not the VARCHAR the column has once a value is bound. Never run: the copy
// it goes into only answers the result's types.
d::unique_ptr<d::ParsedExpression> unfoldable_null(const d::LogicalType& t) {
    auto when = d::make_uniq<d::ComparisonExpression>(
        d::ExpressionType::COMPARE_LESSTHAN,
        d::make_uniq<d::FunctionExpression>("random", d::vector<d::unique_ptr<d::ParsedExpression>>()),
        d::make_uniq<d::ConstantExpression>(d::Value::INTEGER(0)));
    auto c = d::make_uniq<d::CaseExpression>();
    d::CaseCheck check;
    check.when_expr = std::move(when);
    check.then_expr = d::make_uniq<d::ConstantExpression>(d::Value());
    c->case_checks.push_back(std::move(check));
    c->else_expr = d::make_uniq<d::ConstantExpression>(d::Value());
    return d::make_uniq<d::CastExpression>(t, std::move(c));
}

// A copy of `s` whose parameters of a known type are NULLs of that type: constants (or,
// with `foldable` false, expressions that are not constant), which DuckDB's binder does
// not retype as it does a parameter under a cast.
d::unique_ptr<d::SQLStatement> with_types(const d::SQLStatement& s,
                                          const std::vector<d::LogicalType>& types, bool foldable) {
    auto copy = s.Copy();
    walk_statement(*copy, [&types, foldable](d::unique_ptr<d::ParsedExpression>& e) {
        if (e->GetExpressionClass() != d::ExpressionClass::PARAMETER) return;
        const size_t n = number_of(e->Cast<d::ParameterExpression>().identifier);
        if (n == 0 || n > types.size() || !known(types[n - 1])) return;
        auto alias = e->GetAlias();
        if (foldable)
            e = d::make_uniq<d::CastExpression>(types[n - 1],
                                                d::make_uniq<d::ConstantExpression>(d::Value()));
        else
            e = unfoldable_null(types[n - 1]);
        e->SetAlias(std::move(alias));
    });
    return copy;
}

}  // namespace

bool result_open(d::PreparedStatement& p) {
    for (const auto& t : p.GetTypes())
        if (t.id() == d::LogicalTypeId::UNKNOWN || t.id() == d::LogicalTypeId::INVALID)
            return true;
    return false;
}

std::optional<typed_parameters> type_parameters(d::Connection& con, const d::SQLStatement& s,
                                                size_t n_params,
                                                std::span<const param_type> declared) {
    std::vector<d::LogicalType> types(n_params, d::LogicalType::INVALID);
    bool unspecified = false;
    for (size_t i = 0; i < n_params; ++i) {
        if (i < declared.size()) types[i] = duck_type(declared[i]);
        unspecified = unspecified || !known(types[i]);
    }
    // First the declared types alone (DuckDB infers the others from the statement), then
    // the others as text.
    for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
            if (!unspecified) break;
            for (auto& t : types)
                if (!known(t)) t = d::LogicalType::VARCHAR;
        }
        // NULLs DuckDB cannot fold first (a folded `NULL || 'y'` is a NULL column, which
        // DuckDB's result announces as INTEGER, whatever the column is once a value is
        // bound); where such an expression is not allowed, NULL constants.
        d::unique_ptr<d::PreparedStatement> prep;
        for (bool foldable : {false, true}) {
            try {
                prep = con.Prepare(with_types(s, types, foldable));
            } catch (const std::exception&) {
                prep.reset();
                continue;  // as an error: the statement keeps DuckDB's binding at each run
            }
            if (!prep->HasError() && !result_open(*prep)) break;
            prep.reset();
        }
        if (!prep) continue;
        typed_parameters out;
        out.returns_rows =
            prep->GetStatementProperties().return_type == d::StatementReturnType::QUERY_RESULT;
        out.names = prep->GetNames();
        out.types = prep->GetTypes();
        const auto inferred = prep->GetExpectedParameterTypes();
        out.params = types;
        for (size_t i = 0; i < n_params; ++i) {
            if (known(out.params[i])) continue;
            const auto it = inferred.find(std::to_string(i + 1));
            out.params[i] =
                it != inferred.end() && known(it->second) ? it->second : d::LogicalType::VARCHAR;
        }
        return out;
    }
    return std::nullopt;
}

}  // namespace sluice::sql::duck
