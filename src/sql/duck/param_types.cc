#include "sql/duck/param_types.h"

#include <charconv>
#include <exception>

#include "duckdb/parser/expression/cast_expression.hpp"
#include "duckdb/parser/expression/constant_expression.hpp"
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

// A copy of `s` whose parameters of a known type are NULLs of that type: constants, which
// DuckDB's binder does not retype as it does a parameter under a cast.
d::unique_ptr<d::SQLStatement> with_types(const d::SQLStatement& s,
                                          const std::vector<d::LogicalType>& types) {
    auto copy = s.Copy();
    walk_statement(*copy, [&types](d::unique_ptr<d::ParsedExpression>& e) {
        if (e->GetExpressionClass() != d::ExpressionClass::PARAMETER) return;
        const size_t n = number_of(e->Cast<d::ParameterExpression>().identifier);
        if (n == 0 || n > types.size() || !known(types[n - 1])) return;
        auto alias = e->GetAlias();
        e = d::make_uniq<d::CastExpression>(types[n - 1],
                                            d::make_uniq<d::ConstantExpression>(d::Value()));
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
        d::unique_ptr<d::PreparedStatement> prep;
        try {
            prep = con.Prepare(with_types(s, types));
        } catch (const std::exception&) {
            continue;  // as an error: the statement keeps DuckDB's binding at each run
        }
        if (prep->HasError() || result_open(*prep)) continue;
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
