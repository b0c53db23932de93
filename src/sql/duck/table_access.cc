#include "sql/duck/table_access.h"

#include <fmt/format.h>

#include <mutex>
#include <string_view>

#include "duckdb.hpp"
#include "duckdb/catalog/catalog_entry/table_catalog_entry.hpp"
#include "duckdb/planner/binder.hpp"
#include "duckdb/planner/operator/logical_get.hpp"
#include "duckdb/planner/planner_extension.hpp"
#include "sql/engine_options.h"
#include "sql/statement_context.h"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

struct access_info final : d::PlannerExtensionInfo {
    table_access* access = nullptr;
};

// Table functions users may not call: they read a table's storage (statistics: the
// values' ranges) past the check, or write to the database file.
// Those that read files: the export directory (--sql-export-dir) is written, never read,
// from SQL (what one user exported is not another's to read).
bool refused_function(std::string_view name) {
    return name == "pragma_storage_info" || name == "pragma_metadata_info" ||
           name == "checkpoint" || name == "force_checkpoint" || name.starts_with("read_") ||
           name.starts_with("parquet_") || name == "glob" || name == "sniff_csv";
}

// Checks the plan's scans; `reads_table`: whether one reads a table of the database.
void check_plan(d::LogicalOperator& op, const table_guard* guard, const scan_session& s,
                bool& reads_table) {
    if (op.type == d::LogicalOperatorType::LOGICAL_GET) {
        auto& get = op.Cast<d::LogicalGet>();
        if (refused_function(get.function.name))
            throw d::PermissionException(
                fmt::format("{}() is not available to SQL users", get.function.name));
        if (get.GetTable()) reads_table = true;
        if (auto table = get.GetTable(); table && guard) {
            const auto topic = guard->source_topic(table->schema.name, table->name);
            if (!topic.empty()) {
                if (auto denied = s.ctx->check_topic_read(topic))
                    throw d::PermissionException(*denied);
                if (s.table_topics) s.table_topics->push_back(topic);
            }
        }
    }
    for (auto& child : op.children) check_plan(*child, guard, s, reads_table);
}

void post_bind(d::PlannerExtensionInput& input, d::BoundStatement& statement) {
    auto* access = static_cast<access_info&>(*input.info).access;
    const auto s = access->find(input.context);
    if (!s.ctx || !statement.plan) return;  // the broker's own connections
    std::lock_guard lk(*s.mu);
    bool reads_table = false;
    check_plan(*statement.plan, access->guard.load(), s, reads_table);
    // DuckDB plans a filter with the table's statistics (on an empty table, as an empty
    // result) and plans a prepared statement again only when the catalog changes: one
    // that reads a table is planned again at every run, so that it sees the rows written
    // since it was prepared.
    if (reads_table) input.binder.SetAlwaysRequireRebind();
}

}  // namespace

void add_table_access(duckdb::DBConfig& config, table_access& access) {
    auto info = d::make_shared_ptr<access_info>();
    info->access = &access;
    d::PlannerExtension ext;
    ext.post_bind_function = post_bind;
    ext.planner_info = std::move(info);
    d::PlannerExtension::Register(config, std::move(ext));
}

}  // namespace sluice::sql::duck
