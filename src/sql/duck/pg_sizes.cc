#include "sql/duck/pg_sizes.h"

#include <array>
#include <set>

#include "duckdb/catalog/catalog.hpp"
#include "duckdb/catalog/catalog_entry/table_catalog_entry.hpp"
#include "duckdb/catalog/default/default_functions.hpp"
#include "duckdb/common/vector_operations/binary_executor.hpp"
#include "duckdb/execution/expression_executor_state.hpp"
#include "duckdb/main/database_manager.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "duckdb/parser/parsed_data/create_scalar_function_info.hpp"
#include "duckdb/storage/table_storage_info.hpp"
#include "sql/duck/pg_relations.h"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

// sluice_pg_table_blocks(schema, name): the number of the database file's blocks holding
// the checkpointed segments of the current database's table schema.name; NULL when there
// is no such DuckDB table. A block shared with another table counts for both.
void table_blocks(d::DataChunk& args, d::ExpressionState& state, d::Vector& result) {
    auto& context = state.GetContext();
    const auto db = d::DatabaseManager::GetDefaultDatabase(context);
    d::BinaryExecutor::ExecuteWithNulls<d::string_t, d::string_t, int64_t>(
        args.data[0], args.data[1], result, args.size(),
        [&](d::string_t schema, d::string_t name, d::ValidityMask& mask, d::idx_t i) {
            auto table = d::Catalog::GetEntry<d::TableCatalogEntry>(
                context, db, schema.GetString(), name.GetString(), d::OnEntryNotFound::RETURN_NULL);
            if (!table) {
                mask.SetInvalid(i);
                return int64_t{0};
            }
            std::set<d::block_id_t> blocks;
            for (const auto& s : table->GetColumnSegmentInfo(d::QueryContext(context))) {
                if (!s.persistent) continue;
                blocks.insert(s.block_id);
                blocks.insert(s.additional_blocks.begin(), s.additional_blocks.end());
            }
            return static_cast<int64_t>(blocks.size());
        });
}

// The current database's block size (DuckDB's, 256 KiB by default).
#define SLUICE_BLOCK_SIZE \
    "(SELECT block_size FROM pragma_database_size() WHERE database_name = current_database())"

constexpr const char* table_size_sql =
    "(SELECT pg_catalog.sluice_pg_table_blocks(t.schema_name, t.table_name) FROM duckdb_tables() t "
    "WHERE t.table_oid = rel AND t.database_name = current_database()) * " SLUICE_BLOCK_SIZE;

constexpr const char* database_size_sql =
    "(SELECT block_size * total_blocks FROM pragma_database_size() WHERE database_name = db)";

// PostgreSQL's pg_size_pretty: bytes below 10 kB, then kB, MB, GB and TB (of 1024),
// each with one more bit kept for rounding halves away from zero, in integers.
constexpr const char* size_pretty_sql = R"(
CASE WHEN bytes IS NULL THEN NULL
     WHEN abs(bytes) < 10240 THEN bytes || ' bytes'
     WHEN abs(bytes // 512) < 20479 THEN pg_catalog.sluice_pg_half(bytes // 512) || ' kB'
     WHEN abs(bytes // 524288) < 20479 THEN pg_catalog.sluice_pg_half(bytes // 524288) || ' MB'
     WHEN abs(bytes // 536870912) < 20479
       THEN pg_catalog.sluice_pg_half(bytes // 536870912) || ' GB'
     ELSE pg_catalog.sluice_pg_half(bytes // 549755813888) || ' TB' END)";

}  // namespace

void register_pg_sizes(duckdb::ExtensionLoader& loader) {
    // Volatile: the blocks change as the database is checkpointed.
    d::CreateScalarFunctionInfo blocks(d::ScalarFunction(
        "sluice_pg_table_blocks", {d::LogicalType::VARCHAR, d::LogicalType::VARCHAR},
        d::LogicalType::BIGINT, table_blocks, nullptr, nullptr, nullptr, nullptr,
        d::LogicalType(d::LogicalTypeId::INVALID), d::FunctionStability::VOLATILE));
    blocks.schema = "pg_catalog";
    blocks.internal = true;
    blocks.on_conflict = d::OnCreateConflict::REPLACE_ON_CONFLICT;
    loader.RegisterFunction(std::move(blocks));
    overloaded_macro(loader, std::array<d::DefaultMacro, 1>{
                      {{"pg_catalog", "pg_table_size", {"rel", nullptr}, {}, table_size_sql}}});
    overloaded_macro(loader, std::array<d::DefaultMacro, 1>{{{"pg_catalog",
                                                   "pg_total_relation_size",
                                                   {"rel", nullptr},
                                                   {},
                                                   "pg_catalog.pg_table_size(rel)"}}});
    // (Its second argument, the fork, is PostgreSQL's: all of a table is its main fork.)
    overloaded_macro(loader, std::array<d::DefaultMacro, 2>{
                      {{"pg_catalog", "pg_relation_size", {"rel", nullptr}, {}, table_size_sql},
                       {"pg_catalog",
                        "pg_relation_size",
                        {"rel", "fork", nullptr},
                        {},
                        "CASE WHEN fork = 'main' THEN pg_catalog.pg_table_size(rel) ELSE 0 END"}}});
    overloaded_macro(loader, std::array<d::DefaultMacro, 1>{
                      {{"pg_catalog", "pg_database_size", {"db", nullptr}, {}, database_size_sql}}});
    overloaded_macro(loader, std::array<d::DefaultMacro, 1>{
                      {{"pg_catalog",
                        "sluice_pg_half",
                        {"x", nullptr},
                        {},
                        "CASE WHEN x < 0 THEN -((1 - x) // 2) ELSE (x + 1) // 2 END"}}});
    overloaded_macro(loader, std::array<d::DefaultMacro, 1>{
                      {{"pg_catalog", "pg_size_pretty", {"bytes", nullptr}, {}, size_pretty_sql}}});
}

}  // namespace sluice::sql::duck
