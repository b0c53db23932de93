#include "sql/duck/session_functions.h"

#include <fmt/format.h>

#include <mutex>

#include "duckdb.hpp"
#include "duckdb/function/scalar_function.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "duckdb/planner/expression/bound_function_expression.hpp"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

struct finder_info final : d::ScalarFunctionInfo {
    explicit finder_info(session_finder f) : find(std::move(f)) {}
    session_finder find;
};

void last_scan(d::DataChunk&, d::ExpressionState& state, d::Vector& result) {
    const auto& f = state.expr.Cast<d::BoundFunctionExpression>().function;
    const auto s = f.GetExtraFunctionInfo().Cast<finder_info>().find(state.GetContext());
    scan_stats st;
    if (s.ctx) {
        std::lock_guard lk(*s.mu);
        st = s.ctx->last_scan();
    }
    const auto json = fmt::format(
        R"({{"partitions_scanned":{},"segments_read":{},"batches_read":{},"records_read":{},"bytes_read":{}}})",
        st.partitions_scanned, st.segments_read, st.batches_read, st.records_read, st.bytes_read);
    result.SetVectorType(d::VectorType::CONSTANT_VECTOR);
    d::ConstantVector::GetData<d::string_t>(result)[0] =
        d::StringVector::AddString(result, json.data(), json.size());
}

}  // namespace

void register_session_functions(duckdb::DatabaseInstance& db, session_finder find) {
    // Volatile: evaluated for every statement, never folded into a prepared plan.
    d::ScalarFunction f("sluice_last_scan", {}, d::LogicalType::VARCHAR, last_scan, nullptr,
                        nullptr, nullptr, nullptr, d::LogicalType(d::LogicalTypeId::INVALID),
                        d::FunctionStability::VOLATILE);
    f.SetExtraFunctionInfo(d::make_shared_ptr<finder_info>(std::move(find)));
    d::ExtensionLoader loader(db, "sluice_session");
    loader.RegisterFunction(std::move(f));
}

}  // namespace sluice::sql::duck
