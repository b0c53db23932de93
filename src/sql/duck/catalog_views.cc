#include "sql/duck/catalog_views.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "duckdb/catalog/catalog_entry/scalar_function_catalog_entry.hpp"
#include "duckdb/catalog/catalog_entry/table_function_catalog_entry.hpp"
#include "duckdb/common/vector_operations/unary_executor.hpp"
#include "duckdb/main/attached_database.hpp"
#include "duckdb/main/database_manager.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "duckdb/parser/parsed_data/create_table_function_info.hpp"
#include "duckdb/planner/expression.hpp"
#include "duckdb/planner/expression/bound_function_expression.hpp"
#include "sql/system_tables.h"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

using catalog_row = std::map<std::string, d::Value>;  // a row of a catalog function, by column name

// What a wrapper adds to and changes in its original's rows.
struct wrap_info final : d::TableFunctionInfo {
    d::TableFunction original;
    table_sources src;
    session_finder find;
    // Rows after the original's (may be empty); the columns it leaves out are NULL.
    std::function<std::vector<catalog_row>(d::ClientContext&, const wrap_info&)> extra;
    // Whether the original's errors are replaced by one without their text (which may
    // name the server's paths: duckdb_extensions() names its extension directory).
    bool quiet_errors = false;
    // Edits a chunk of the original's rows in place, by column name.
    std::function<void(const d::vector<d::string>&, d::DataChunk&)> fix;
    // Whether the original's rows of the engine's bookkeeping tables are left out.
    bool hide_bookkeeping = false;
};

struct wrap_bind final : d::TableFunctionData {
    const wrap_info* self = nullptr;
    d::unique_ptr<d::FunctionData> inner;
    d::vector<d::string> names;
    d::vector<d::LogicalType> types;

    d::unique_ptr<d::FunctionData> Copy() const override {
        auto c = d::make_uniq<wrap_bind>();
        c->self = self;
        c->inner = inner ? inner->Copy() : nullptr;
        c->names = names;
        c->types = types;
        return c;
    }
    bool Equals(const d::FunctionData& o) const override {
        const auto& w = o.Cast<wrap_bind>();
        return inner && w.inner ? inner->Equals(*w.inner) : inner == w.inner;
    }
};

struct wrap_global final : d::GlobalTableFunctionState {
    d::unique_ptr<d::GlobalTableFunctionState> inner;
    std::vector<catalog_row> extra;
    size_t next = 0;
    bool original_done = false;
};

// Runs one of the original's callbacks, its error replaced when self.quiet_errors.
template <class F>
auto guarded(const wrap_info& self, F&& f) -> decltype(f()) {
    if (!self.quiet_errors) return f();
    try {
        return f();
    } catch (const std::exception&) {
        throw d::PermissionException("%s() is not available: it reads the server's file system",
                                     self.original.name);
    }
}

d::unique_ptr<d::FunctionData> wrap_bind_fn(d::ClientContext& context,
                                            d::TableFunctionBindInput& input,
                                            d::vector<d::LogicalType>& types,
                                            d::vector<d::string>& names) {
    const auto& self = input.info->Cast<wrap_info>();
    auto b = d::make_uniq<wrap_bind>();
    b->self = &self;
    if (self.original.bind)
        b->inner = guarded(self, [&] { return self.original.bind(context, input, types, names); });
    b->names = names;
    b->types = types;
    return b;
}

d::unique_ptr<d::GlobalTableFunctionState> wrap_init(d::ClientContext& context,
                                                     d::TableFunctionInitInput& input) {
    const auto& b = input.bind_data->Cast<wrap_bind>();
    const auto& self = *b.self;
    auto g = d::make_uniq<wrap_global>();
    d::TableFunctionInitInput inner(b.inner.get(), input.column_indexes, input.projection_ids,
                                    input.filters);
    if (self.original.init_global)
        g->inner = guarded(self, [&] { return self.original.init_global(context, inner); });
    if (self.extra) g->extra = self.extra(context, self);
    return g;
}

// The column `name` of a chunk, or none.
std::optional<d::idx_t> column_of(const d::vector<d::string>& names, std::string_view name) {
    for (d::idx_t i = 0; i < names.size(); ++i)
        if (names[i] == name) return i;
    return std::nullopt;
}

// Leaves out the rows of the engine's bookkeeping tables (main._sluice_meta and
// main._sluice_expansion_progress: docs/formats/expansion-duckdb.md), their columns,
// constraints and indexes: not the users' (CREATE TABLE of a _sluice name is refused
// for expansion targets, and the SQLite engine's keeps them in the target's schema).
void drop_bookkeeping(const d::vector<d::string>& names, d::DataChunk& out) {
    const auto schema = column_of(names, "schema_name");
    const auto table = column_of(names, "table_name");
    if (!schema || !table) return;
    d::SelectionVector keep(out.size());
    d::idx_t n = 0;
    for (d::idx_t i = 0; i < out.size(); ++i) {
        const auto s = out.GetValue(*schema, i);
        const auto t = out.GetValue(*table, i);
        const bool hidden = !s.IsNull() && !t.IsNull() && s.ToString() == "main" &&
                            t.ToString().starts_with("_sluice_");
        if (!hidden) keep.set_index(n++, i);
    }
    if (n == out.size()) return;
    out.Slice(keep, n);
    out.Flatten();  // as the original's chunks are, for fix's SetValue
}

void wrap_scan(d::ClientContext& context, d::TableFunctionInput& input, d::DataChunk& out) {
    const auto& b = input.bind_data->Cast<wrap_bind>();
    auto& g = input.global_state->Cast<wrap_global>();
    const auto& self = *b.self;
    while (!g.original_done) {
        d::TableFunctionInput inner(b.inner.get(), nullptr, g.inner.get());
        guarded(self, [&] { self.original.function(context, inner, out); });
        if (out.size() == 0) {
            g.original_done = true;
            break;
        }
        if (self.hide_bookkeeping) drop_bookkeeping(b.names, out);
        if (out.size() == 0) {  // a chunk of bookkeeping rows only: the next one
            out.Reset();
            continue;
        }
        if (self.fix) self.fix(b.names, out);
        return;
    }
    d::idx_t n = 0;
    for (; n < STANDARD_VECTOR_SIZE && g.next < g.extra.size(); ++n, ++g.next) {
        const auto& r = g.extra[g.next];
        for (d::idx_t c = 0; c < out.ColumnCount(); ++c) {
            const auto it = r.find(b.names[c]);
            out.SetValue(
                c, n, it == r.end() ? d::Value(b.types[c]) : it->second.DefaultCastAs(b.types[c]));
        }
    }
    out.SetCardinality(n);
}

// Replaces the table function `name` of db's system catalog by the wrapper of it.
void wrap(d::ExtensionLoader& loader, const std::string& name, d::shared_ptr<wrap_info> info) {
    auto& entry = loader.GetTableFunction(name);
    info->original = entry.functions.GetFunctionByOffset(0);
    d::TableFunction f(name, info->original.arguments, wrap_scan, wrap_bind_fn, wrap_init);
    f.named_parameters = info->original.named_parameters;
    f.function_info = std::move(info);
    d::CreateTableFunctionInfo create(std::move(f));
    create.on_conflict = d::OnCreateConflict::REPLACE_ON_CONFLICT;
    create.internal = true;
    loader.RegisterFunction(std::move(create));
}

// ---- Sluice's relations ----

constexpr const char* topics_schema = "kafka_topics";
constexpr const char* system_schema = "system";

// A stable OID for a name: the same in every session and run, above DuckDB's own (which
// count up from a few thousand), below 2^31.
int64_t stable_oid(std::string_view kind, std::string_view name) {
    uint64_t h = 1469598103934665603ULL;
    for (const auto* s : {&kind, &name}) {
        for (const char c : *s) {
            h ^= static_cast<uint8_t>(c);
            h *= 1099511628211ULL;
        }
        h ^= 0xff;
        h *= 1099511628211ULL;
    }
    return (int64_t{1} << 30) + static_cast<int64_t>(h % (uint64_t{1} << 30));
}

struct relation {
    std::string schema;
    std::string name;
    d::vector<d::LogicalType> types;
    d::vector<d::string> columns;
};

// The relations the session's principal sees: its topics, then the system tables.
std::vector<relation> sluice_relations(d::ClientContext& context, const wrap_info& self) {
    std::vector<relation> out;
    const auto s = self.find(context);
    if (!s.ctx || !self.src.catalog) return out;
    relation topic{topics_schema, {}, {}, {}};
    topic_columns(topic.types, topic.columns);
    {
        std::lock_guard lk(*s.mu);
        for (const auto& t : self.src.catalog->list_topics()) {
            if (!s.ctx->may_see_topic(t.name)) continue;
            topic.name = t.name;
            out.push_back(topic);
        }
    }
    for (const auto& [name, spec] :
         system_table_specs({self.src.logs, self.src.catalog, self.src.state, s.ctx})) {
        relation r{system_schema, name, {}, {}};
        system_columns(spec.declaration, r.types, r.columns);
        out.push_back(std::move(r));
    }
    return out;
}

struct database_id {
    std::string name;
    int64_t oid = 0;
};

database_id current_database(d::ClientContext& context) {
    database_id id;
    id.name = d::DatabaseManager::GetDefaultDatabase(context);
    if (auto db = d::DatabaseManager::Get(context).GetDatabase(context, id.name))
        id.oid = static_cast<int64_t>(db->GetCatalog().GetOid());
    return id;
}

catalog_row located(const database_id& db, const std::string& schema) {
    return {{"database_name", d::Value(db.name)},
            {"database_oid", d::Value::BIGINT(db.oid)},
            {"schema_name", d::Value(schema)},
            {"schema_oid", d::Value::BIGINT(stable_oid("schema", schema))},
            {"internal", d::Value::BOOLEAN(false)}};
}

std::vector<catalog_row> extra_schemas(d::ClientContext& context, const wrap_info& self) {
    std::vector<catalog_row> out;
    if (!self.find(context).ctx) return out;
    const auto db = current_database(context);
    for (const char* schema : {topics_schema, system_schema}) {
        auto r = located(db, schema);
        r["oid"] = d::Value::BIGINT(stable_oid("schema", schema));
        out.push_back(std::move(r));
    }
    return out;
}

std::vector<catalog_row> extra_tables(d::ClientContext& context, const wrap_info& self) {
    std::vector<catalog_row> out;
    const auto db = current_database(context);
    for (const auto& rel : sluice_relations(context, self)) {
        auto r = located(db, rel.schema);
        r["table_name"] = d::Value(rel.name);
        r["table_oid"] = d::Value::BIGINT(stable_oid(rel.schema, rel.name));
        r["temporary"] = d::Value::BOOLEAN(false);
        r["has_primary_key"] = d::Value::BOOLEAN(false);
        r["estimated_size"] = d::Value::BIGINT(0);
        r["column_count"] = d::Value::BIGINT(static_cast<int64_t>(rel.columns.size()));
        r["index_count"] = d::Value::BIGINT(0);
        r["check_constraint_count"] = d::Value::BIGINT(0);
        out.push_back(std::move(r));
    }
    return out;
}

// A DuckDB type in PostgreSQL's words, as information_schema.columns gives it.
std::string pg_type_name(const std::string& duck) {
    static const std::map<std::string, std::string> names{
        {"VARCHAR", "text"},
        {"BIGINT", "bigint"},
        {"INTEGER", "integer"},
        {"SMALLINT", "smallint"},
        {"BOOLEAN", "boolean"},
        {"DOUBLE", "double precision"},
        {"FLOAT", "real"},
        {"BLOB", "bytea"},
        {"DATE", "date"},
        {"TIME", "time without time zone"},
        {"TIMESTAMP", "timestamp without time zone"},
        {"TIMESTAMP WITH TIME ZONE", "timestamp with time zone"},
        {"INTERVAL", "interval"},
        {"UUID", "uuid"},
        {"JSON", "json"},
    };
    if (const auto it = names.find(duck); it != names.end()) return it->second;
    if (duck.starts_with("DECIMAL")) return "numeric";
    return duck;
}

std::vector<catalog_row> extra_columns(d::ClientContext& context, const wrap_info& self) {
    std::vector<catalog_row> out;
    const auto db = current_database(context);
    for (const auto& rel : sluice_relations(context, self)) {
        for (size_t i = 0; i < rel.columns.size(); ++i) {
            auto r = located(db, rel.schema);
            r["table_name"] = d::Value(rel.name);
            r["table_oid"] = d::Value::BIGINT(stable_oid(rel.schema, rel.name));
            r["column_name"] = d::Value(rel.columns[i]);
            r["column_index"] = d::Value::BIGINT(static_cast<int64_t>(i + 1));
            r["is_nullable"] = d::Value::BOOLEAN(true);
            r["data_type"] = d::Value(pg_type_name(rel.types[i].ToString()));
            r["data_type_id"] = d::Value::BIGINT(static_cast<int64_t>(rel.types[i].id()));
            out.push_back(std::move(r));
        }
    }
    return out;
}

void pg_data_types(const d::vector<d::string>& names, d::DataChunk& out) {
    const auto c = column_of(names, "data_type");
    if (!c) return;
    for (d::idx_t i = 0; i < out.size(); ++i) {
        const auto v = out.GetValue(*c, i);
        if (!v.IsNull()) out.SetValue(*c, i, d::Value(pg_type_name(v.ToString())));
    }
}

// Sets the column `name` to NULL in every catalog_row: a path of the server's.
std::function<void(const d::vector<d::string>&, d::DataChunk&)> hide(std::string name) {
    return [name = std::move(name)](const d::vector<d::string>& names, d::DataChunk& out) {
        const auto c = column_of(names, name);
        if (!c) return;
        for (d::idx_t i = 0; i < out.size(); ++i) out.SetValue(*c, i, d::Value(out.GetTypes()[*c]));
    };
}

// Settings whose value is a path of the server's.
bool names_a_path(std::string_view setting) {
    return setting.find("director") != std::string_view::npos ||
           setting.find("path") != std::string_view::npos ||
           setting.find("file") != std::string_view::npos;
}

void hide_path_settings(const d::vector<d::string>& names, d::DataChunk& out) {
    const auto n = column_of(names, "name");
    const auto v = column_of(names, "value");
    if (!n || !v) return;
    for (d::idx_t i = 0; i < out.size(); ++i)
        if (names_a_path(out.GetValue(*n, i).ToString()))
            out.SetValue(*v, i, d::Value(out.GetTypes()[*v]));
}

// current_setting('temp_directory') and the like: refused at bind.
d::bind_scalar_function_t original_setting_bind = nullptr;

d::unique_ptr<d::FunctionData> setting_bind(d::ClientContext& context, d::ScalarFunction& f,
                                            d::vector<d::unique_ptr<d::Expression>>& args) {
    if (!args.empty() && args[0]->IsFoldable()) {
        const auto v = d::ExpressionExecutor::EvaluateScalar(context, *args[0]);
        if (!v.IsNull() && names_a_path(d::StringUtil::Lower(v.ToString())))
            throw d::PermissionException(
                "current_setting('%s'): the server's paths are not shown to SQL users",
                v.ToString());
    }
    return original_setting_bind ? original_setting_bind(context, f, args) : nullptr;
}

void wrap_current_setting(d::ExtensionLoader& loader) {
    auto& entry = loader.GetFunction("current_setting");
    d::ScalarFunctionSet set("current_setting");
    for (d::idx_t i = 0; i < entry.functions.Size(); ++i) {
        auto f = entry.functions.GetFunctionByOffset(i);
        if (!original_setting_bind) original_setting_bind = f.GetBindCallback();
        f.bind = setting_bind;
        set.AddFunction(std::move(f));
    }
    d::CreateScalarFunctionInfo create(std::move(set));
    create.on_conflict = d::OnCreateConflict::REPLACE_ON_CONFLICT;
    create.internal = true;
    loader.RegisterFunction(std::move(create));
}

// current_user, session_user and current_role (DuckDB's say 'duckdb'): the session's
// principal's user, as on the SQLite engine; ANONYMOUS without one.
struct user_info final : d::ScalarFunctionInfo {
    session_finder find;
};

struct user_data final : d::FunctionData {
    std::string user;
    d::unique_ptr<d::FunctionData> Copy() const override {
        auto c = d::make_uniq<user_data>();
        c->user = user;
        return c;
    }
    bool Equals(const d::FunctionData& o) const override {
        return o.Cast<user_data>().user == user;
    }
};

d::unique_ptr<d::FunctionData> user_bind(d::ClientContext& context, d::ScalarFunction& f,
                                         d::vector<d::unique_ptr<d::Expression>>&) {
    auto data = d::make_uniq<user_data>();
    data->user = "ANONYMOUS";
    const auto s = static_cast<const user_info&>(f.GetExtraFunctionInfo()).find(context);
    if (s.ctx) {
        std::lock_guard lk(*s.mu);
        if (!s.ctx->principal().user.empty()) data->user = s.ctx->principal().user;
    }
    return data;
}

void user_fn(d::DataChunk&, d::ExpressionState& state, d::Vector& result) {
    const auto& data = state.expr.Cast<d::BoundFunctionExpression>().bind_info->Cast<user_data>();
    result.SetVectorType(d::VectorType::CONSTANT_VECTOR);
    d::ConstantVector::GetData<d::string_t>(result)[0] =
        d::StringVector::AddString(result, data.user);
}

// pg_get_userbyid(oid): one role owns everything, the engine's (as on SQLite, where its
// OID is 10; DuckDB's catalog says 0).
void userbyid(d::DataChunk& args, d::ExpressionState&, d::Vector& result) {
    d::UnaryExecutor::Execute<int64_t, d::string_t>(
        args.data[0], result, args.size(), [&](int64_t oid) {
            return d::StringVector::AddString(result, oid == 0 || oid == 10
                                                          ? std::string("sluice")
                                                          : fmt::format("unknown (OID={})", oid));
        });
}

void replace_user_functions(d::ExtensionLoader& loader, const session_finder& find) {
    for (const char* name : {"current_user", "session_user", "current_role"}) {
        d::ScalarFunction f(name, {}, d::LogicalType::VARCHAR, user_fn, user_bind);
        auto info = d::make_shared_ptr<user_info>();
        info->find = find;
        f.SetExtraFunctionInfo(std::move(info));
        d::CreateScalarFunctionInfo create(std::move(f));
        create.on_conflict = d::OnCreateConflict::REPLACE_ON_CONFLICT;
        create.internal = true;
        loader.RegisterFunction(std::move(create));
    }
    // In pg_catalog, where psql calls it (pg_catalog.pg_get_userbyid) and the search path
    // finds it.
    d::CreateScalarFunctionInfo owner(d::ScalarFunction("pg_get_userbyid", {d::LogicalType::BIGINT},
                                                        d::LogicalType::VARCHAR, userbyid));
    owner.schema = "pg_catalog";
    owner.internal = true;
    loader.RegisterFunction(std::move(owner));
}

}  // namespace

void register_catalog_views(duckdb::DatabaseInstance& db, const table_sources& src,
                            session_finder find) {
    d::ExtensionLoader loader(db, "sluice_catalog");
    const auto make = [&](auto extra, auto fix) {
        auto i = d::make_shared_ptr<wrap_info>();
        i->src = src;
        i->find = find;
        i->extra = extra;
        i->fix = fix;
        return i;
    };
    using extra_fn = std::function<std::vector<catalog_row>(d::ClientContext&, const wrap_info&)>;
    using fix_fn = std::function<void(const d::vector<d::string>&, d::DataChunk&)>;
    wrap(loader, "duckdb_schemas", make(extra_fn(extra_schemas), fix_fn()));
    // The relations' functions, which pg_class, pg_attribute, pg_index, pg_constraint and
    // information_schema read, without the engine's bookkeeping tables.
    const auto relations = [&](auto extra, auto fix) {
        auto i = make(extra, fix);
        i->hide_bookkeeping = true;
        return i;
    };
    wrap(loader, "duckdb_tables", relations(extra_fn(extra_tables), fix_fn()));
    wrap(loader, "duckdb_columns", relations(extra_fn(extra_columns), fix_fn(pg_data_types)));
    wrap(loader, "duckdb_constraints", relations(extra_fn(), fix_fn()));
    wrap(loader, "duckdb_indexes", relations(extra_fn(), fix_fn()));
    // PRAGMA database_list (and pragma_database_list) reads duckdb_databases().
    wrap(loader, "duckdb_databases", make(extra_fn(), hide("path")));
    wrap(loader, "duckdb_temporary_files", make(extra_fn(), hide("path")));
    auto extensions = make(extra_fn(), hide("install_path"));
    extensions->quiet_errors = true;
    wrap(loader, "duckdb_extensions", std::move(extensions));
    wrap(loader, "duckdb_settings", make(extra_fn(), fix_fn(hide_path_settings)));
    wrap_current_setting(loader);
    replace_user_functions(loader, find);
}

}  // namespace sluice::sql::duck
