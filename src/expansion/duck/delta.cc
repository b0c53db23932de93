#include "expansion/duck/delta.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "duckdb.hpp"
#include "duckdb/catalog/catalog.hpp"
#include "duckdb/catalog/catalog_entry/table_catalog_entry.hpp"
#include "duckdb/catalog/entry_lookup_info.hpp"
#include "duckdb/main/client_context.hpp"
#include "duckdb/planner/binder.hpp"
#include "duckdb/planner/operator/logical_delete.hpp"
#include "duckdb/planner/operator/logical_get.hpp"
#include "duckdb/planner/operator/logical_merge_into.hpp"
#include "duckdb/planner/operator/logical_set_operation.hpp"
#include "duckdb/planner/operator/logical_update.hpp"
#include "duckdb/planner/planner_extension.hpp"
#include "sql/sql_text.h"

namespace sluice::expansion {

std::string delta_table(std::string_view schema, std::string_view table) {
    return std::string(delta_prefix) + sql::to_lower(schema) + "." + sql::to_lower(table);
}

namespace {

namespace d = ::duckdb;
using tables = std::vector<const d::TableCatalogEntry*>;

// The tables whose rows a DELETE, UPDATE or MERGE of the statement changes: its scan of
// such a table finds the rows to change, in that table only.
void changed_tables(d::LogicalOperator& op, tables& out) {
    switch (op.type) {
        case d::LogicalOperatorType::LOGICAL_DELETE:
            out.push_back(&op.Cast<d::LogicalDelete>().table);
            break;
        case d::LogicalOperatorType::LOGICAL_UPDATE:
            out.push_back(&op.Cast<d::LogicalUpdate>().table);
            break;
        case d::LogicalOperatorType::LOGICAL_MERGE_INTO:
            out.push_back(&op.Cast<d::LogicalMergeInto>().table);
            break;
        default:
            break;
    }
    for (auto& child : op.children) changed_tables(*child, out);
}

// The delta of a table, when it is a target that has one.
d::optional_ptr<d::TableCatalogEntry> delta_of(d::ClientContext& ctx,
                                               const d::TableCatalogEntry& table) {
    if (table.name.starts_with("_sluice_")) return nullptr;  // bookkeeping, deltas
    auto entry = d::Catalog::GetEntry<d::TableCatalogEntry>(
        ctx, table.ParentCatalog().GetName(), "main", delta_table(table.schema.name, table.name),
        d::OnEntryNotFound::RETURN_NULL);
    if (!entry) return nullptr;
    auto& delta = *entry;
    const auto& ours = table.GetColumns();
    const auto& theirs = delta.GetColumns();
    bool same = ours.LogicalColumnCount() == theirs.LogicalColumnCount();
    for (d::idx_t i = 0; same && i < ours.LogicalColumnCount(); ++i)
        same = ours.GetColumn(d::LogicalIndex(i)).Type() ==
               theirs.GetColumn(d::LogicalIndex(i)).Type();
    if (!same)  // never made so (duck_target.cc); reading the table alone would hide rows
        throw d::CatalogException(fmt::format(
            "the columns of {}.{} and of its delta {} differ: the expansion's rows cannot be "
            "read (docs/formats/expansion-duckdb.md)",
            table.schema.name, table.name, delta.name));
    return &delta;
}

// A scan of `delta` giving what `get`, a scan of its target, gives.
d::unique_ptr<d::LogicalGet> scan_like(d::ClientContext& ctx, d::Binder& binder,
                                       d::TableCatalogEntry& delta, const d::LogicalGet& get) {
    d::unique_ptr<d::FunctionData> bind_data;
    auto scan = delta.GetScanFunction(ctx, bind_data);
    d::vector<d::LogicalType> types;
    d::vector<d::string> names;
    for (auto& col : delta.GetColumns().Logical()) {
        types.push_back(col.Type());
        names.push_back(col.Name());
    }
    auto virtual_columns = scan.get_virtual_columns
                               ? scan.get_virtual_columns(ctx, bind_data.get())
                               : delta.GetVirtualColumns();
    auto out = d::make_uniq<d::LogicalGet>(binder.GenerateTableIndex(), scan, std::move(bind_data),
                                           std::move(types), std::move(names),
                                           std::move(virtual_columns));
    auto ids = get.GetColumnIds();
    out->SetColumnIds(std::move(ids));
    out->projection_ids = get.projection_ids;
    if (auto filters = get.table_filters.Copy()) out->table_filters = std::move(*filters);
    return out;
}

// Replaces each scan of a target with a delta by the target's rows UNION ALL the delta's.
// The union takes the scan's table index, so what reads the scan's columns reads the
// union's, in the same order.
void with_deltas(d::ClientContext& ctx, d::Binder& binder, d::unique_ptr<d::LogicalOperator>& op,
                 const tables& changed) {
    for (auto& child : op->children) with_deltas(ctx, binder, child, changed);
    if (op->type != d::LogicalOperatorType::LOGICAL_GET) return;
    auto& get = op->Cast<d::LogicalGet>();
    auto table = get.GetTable();
    if (!table || std::find(changed.begin(), changed.end(), table.get()) != changed.end()) return;
    auto delta = delta_of(ctx, *table);
    if (!delta) return;
    // A union needs a column (count(*) reads none): the first, which nothing above reads.
    if (get.GetColumnIds().empty()) get.AddColumnId(0);
    auto rows = scan_like(ctx, binder, *delta, get);
    const auto columns =
        get.projection_ids.empty() ? get.GetColumnIds().size() : get.projection_ids.size();
    const auto index = get.table_index;
    get.table_index = binder.GenerateTableIndex();
    // Planned with the delta's statistics (empty, mostly: an empty result), a prepared
    // statement would miss the rows a later checkpoint sends there: plan it at every run.
    binder.SetAlwaysRequireRebind();
    op = d::make_uniq<d::LogicalSetOperation>(index, columns, std::move(op), std::move(rows),
                                              d::LogicalOperatorType::LOGICAL_UNION, true);
}

void post_bind(d::PlannerExtensionInput& input, d::BoundStatement& statement) {
    if (!statement.plan) return;
    tables changed;
    changed_tables(*statement.plan, changed);
    with_deltas(input.context, input.binder, statement.plan, changed);
}

}  // namespace

void add_delta_reads(duckdb::DBConfig& config) {
    d::PlannerExtension ext;
    ext.post_bind_function = post_bind;
    d::PlannerExtension::Register(config, std::move(ext));
}

result<int64_t> move_delta(duckdb::Connection& con, const std::string& target,
                           const std::string& delta) {
    std::string failed;
    int64_t moved = 0;
    for (const auto& sql : {std::string("BEGIN"),
                            fmt::format("INSERT INTO {} SELECT * FROM {}", target, delta),
                            "DELETE FROM " + delta, std::string("COMMIT")}) {
        auto r = con.Query(sql);
        if (r->HasError()) {
            failed = r->GetError();
            break;
        }
        if (sql.starts_with("INSERT")) {
            auto chunk = r->Fetch();
            if (chunk && chunk->size() > 0) moved = chunk->GetValue(0, 0).GetValue<int64_t>();
        }
    }
    if (failed.empty()) return moved;
    if (con.context->transaction.HasActiveTransaction()) con.Query("ROLLBACK");
    return error{errc::io_error, fmt::format("moving the rows of {} into {}: {}", delta, target,
                                             failed)};
}

delta_gate::route delta_gate::enter() {
    std::lock_guard lk(_mu);
    const auto r = _diverted ? route::delta : route::table;
    ++_open[static_cast<int>(r)];
    return r;
}

void delta_gate::leave(route r) {
    {
        std::lock_guard lk(_mu);
        --_open[static_cast<int>(r)];
    }
    _cv.notify_all();
}

void delta_gate::divert() {
    std::unique_lock lk(_mu);
    _diverted = true;
    _cv.wait(lk, [&] { return _open[static_cast<int>(route::table)] == 0; });
}

void delta_gate::restore() {
    std::unique_lock lk(_mu);
    _diverted = false;
    _cv.wait(lk, [&] { return _open[static_cast<int>(route::delta)] == 0; });
}

}  // namespace sluice::expansion
