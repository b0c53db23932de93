#include "sql/duck/session_functions.h"

#include <fmt/format.h>

#include <mutex>
#include <string>

#include "common/version.h"
#include "duckdb.hpp"
#include "duckdb/function/scalar_function.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "duckdb/parser/parsed_data/create_scalar_function_info.hpp"
#include "duckdb/planner/expression/bound_function_expression.hpp"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

struct finder_info final : d::ScalarFunctionInfo {
    explicit finder_info(session_finder f) : find(std::move(f)) {}
    session_finder find;
};

// version(): PostgreSQL's form, whose leading "PostgreSQL 15.0" drivers parse (15.0: the
// version the pg listener reports, pg_options::server_version), naming DuckDB's version
// and Sluice's version and commit.
struct version_info final : d::ScalarFunctionInfo {
    std::string text =
        fmt::format("PostgreSQL 15.0 on x86_64-pc-linux-gnu, DuckDB {} engine (Sluice {} {})",
                    d::DuckDB::LibraryVersion(), version(), build_commit());
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

void version_function(d::DataChunk&, d::ExpressionState& state, d::Vector& result) {
    const auto& text = state.expr.Cast<d::BoundFunctionExpression>()
                           .function.GetExtraFunctionInfo()
                           .Cast<version_info>()
                           .text;
    result.SetVectorType(d::VectorType::CONSTANT_VECTOR);
    d::ConstantVector::GetData<d::string_t>(result)[0] =
        d::StringVector::AddString(result, text.data(), text.size());
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
    // version() in place of DuckDB's own ("v1.5.6"), which drivers could not parse.
    d::ScalarFunction v("version", {}, d::LogicalType::VARCHAR, version_function);
    v.SetExtraFunctionInfo(d::make_shared_ptr<version_info>());
    d::CreateScalarFunctionInfo info(std::move(v));
    info.internal = true;
    info.on_conflict = d::OnCreateConflict::REPLACE_ON_CONFLICT;
    loader.RegisterFunction(std::move(info));
}

}  // namespace sluice::sql::duck
