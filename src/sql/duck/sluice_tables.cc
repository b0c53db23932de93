#include "sql/duck/sluice_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "catalog/catalog.h"
#include "duckdb/common/types/blob.hpp"
#include "duckdb/common/vector_operations/binary_executor.hpp"
#include "duckdb/common/vector_operations/unary_executor.hpp"
#include "duckdb/function/cast/cast_function_set.hpp"
#include "duckdb/function/replacement_scan.hpp"
#include "duckdb/function/scalar_function.hpp"
#include "duckdb/function/table_function.hpp"
#include "duckdb/main/database_manager.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "duckdb/parser/expression/constant_expression.hpp"
#include "duckdb/parser/expression/function_expression.hpp"
#include "duckdb/parser/tableref/table_function_ref.hpp"
#include "log/log_manager.h"
#include "sql/json_text.h"
#include "sql/system_tables.h"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

struct names_data final : d::ReplacementScanData {
    table_sources src;
};

bool same_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

// The topic a table name means: exactly that one, else the only one equal to it
// without regard to case; empty when none.
std::string topic_named(const table_sources& src, const std::string& name) {
    if (src.partitions) {  // shared mode
        if (src.topics->find_topic(name)) return name;
    } else if (auto t = src.logs->topic(name); t && !t->removed.load()) {
        return name;
    }
    const catalog::topic_store* listed =
        src.partitions ? src.topics : static_cast<const catalog::topic_store*>(src.catalog);
    if (!listed) return {};
    std::string found;
    for (const auto& t : listed->list_topics()) {
        if (!same_ignoring_case(t.name, name)) continue;
        if (!found.empty()) return {};  // ambiguous
        found = t.name;
    }
    return found;
}

d::unique_ptr<d::TableRef> function_table(const char* function, const std::string& arg,
                                          const std::string& alias) {
    auto ref = d::make_uniq<d::TableFunctionRef>();
    d::vector<d::unique_ptr<d::ParsedExpression>> args;
    args.push_back(d::make_uniq<d::ConstantExpression>(d::Value(arg)));
    ref->function = d::make_uniq<d::FunctionExpression>(function, std::move(args));
    ref->alias = alias;
    return ref;
}

d::unique_ptr<d::TableRef> resolve(d::ClientContext& context, d::ReplacementScanInput& in,
                                   d::optional_ptr<d::ReplacementScanData> data) {
    const auto& src = data->Cast<names_data>().src;
    // The qualifier as written: DuckDB may take `system.x` for its catalog "system".
    // database.schema.table with this database (`sluice.system.topics`, as Trino writes
    // them): the schema.
    std::string_view qualifier = in.schema_name;
    if (!in.catalog_name.empty() && !in.schema_name.empty() &&
        same_ignoring_case(in.catalog_name, d::DatabaseManager::GetDefaultDatabase(context))) {
        qualifier = in.schema_name;
    } else if (!in.catalog_name.empty()) {
        if (!in.schema_name.empty() && !same_ignoring_case(in.schema_name, "main")) return nullptr;
        qualifier = in.catalog_name;
    }
    if (same_ignoring_case(qualifier, "system"))
        return src.catalog ? function_table("sluice_system", in.table_name, in.table_name)
                           : nullptr;
    const bool qualified = same_ignoring_case(qualifier, "kafka_topics");
    if (!qualified && !qualifier.empty()) return nullptr;
    auto topic = topic_named(src, in.table_name);
    // kafka_topics."T" of no topic is kafka_topic's to refuse: a topic the principal may
    // not read is refused (42501) whether or not it exists, else it is missing (42P01).
    if (topic.empty() && qualified) topic = in.table_name;
    if (topic.empty()) return nullptr;
    return function_table("kafka_topic", topic, in.table_name);
}

// ---- sluice_system('name') ----

struct system_bind final : d::TableFunctionData {
    std::string name;
    row_table_spec spec;
    scan_session session;
};

struct system_global final : d::GlobalTableFunctionState {
    std::vector<std::vector<value>> rows;
    size_t next = 0;
};

}  // namespace

void system_columns(const std::string& declaration, d::vector<d::LogicalType>& types,
                    d::vector<d::string>& names) {
    const auto open = declaration.find('(');
    const auto close = declaration.rfind(')');
    std::string_view cols(declaration.data() + open + 1, close - open - 1);
    while (!cols.empty()) {
        const auto comma = cols.find(',');
        auto one = cols.substr(0, comma);
        cols = comma == std::string_view::npos ? std::string_view{} : cols.substr(comma + 1);
        while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
        const auto space = one.find(' ');
        names.emplace_back(one.substr(0, space));
        const auto type = one.substr(space + 1);
        types.push_back(type.starts_with("INTEGER") ? d::LogicalType::BIGINT
                                                    : d::LogicalType::VARCHAR);
    }
}

namespace {

d::Value duck_value(const value& v) {
    if (const auto* i = std::get_if<int64_t>(&v)) return d::Value::BIGINT(*i);
    if (const auto* x = std::get_if<double>(&v)) return d::Value::DOUBLE(*x);
    if (const auto* s = std::get_if<std::string>(&v)) return d::Value(*s);
    if (const auto* b = std::get_if<bytes>(&v))
        return d::Value::BLOB(reinterpret_cast<d::const_data_ptr_t>(b->data()), b->size());
    return d::Value();
}

struct system_info final : d::TableFunctionInfo {
    table_sources src;
    session_finder find;
};

d::unique_ptr<d::FunctionData> system_bind_fn(d::ClientContext& context,
                                              d::TableFunctionBindInput& input,
                                              d::vector<d::LogicalType>& types,
                                              d::vector<d::string>& names) {
    const auto& self = input.info->Cast<system_info>();
    const auto s = self.find(context);
    if (!s.ctx) throw d::PermissionException("sluice_system: only a Sluice SQL session reads it");
    auto b = d::make_uniq<system_bind>();
    b->name = input.inputs.empty() || input.inputs[0].IsNull()
                  ? std::string()
                  : input.inputs[0].GetValue<std::string>();
    const auto& src = self.src;
    auto specs = system_table_specs({src.partitions ? nullptr : src.logs, src.catalog, src.state,
                                     s.ctx, src.topics, src.security, src.partitions});
    auto it = specs.find(b->name);
    if (it == specs.end())
        throw d::CatalogException(fmt::format("Table with name system.{} does not exist", b->name));
    b->spec = std::move(it->second);
    b->session = s;
    system_columns(b->spec.declaration, types, names);
    return b;
}

d::unique_ptr<d::GlobalTableFunctionState> system_init(d::ClientContext&,
                                                       d::TableFunctionInitInput& input) {
    const auto& b = input.bind_data->Cast<system_bind>();
    auto g = d::make_uniq<system_global>();
    std::lock_guard lk(*b.session.mu);
    auto rows = b.spec.rows();
    if (!rows) throw d::IOException(fmt::format("system.{}: {}", b.name, rows.error().message));
    g->rows = std::move(*rows);
    return g;
}

void system_scan(d::ClientContext&, d::TableFunctionInput& input, d::DataChunk& out) {
    auto& g = input.global_state->Cast<system_global>();
    d::idx_t n = 0;
    for (; n < STANDARD_VECTOR_SIZE && g.next < g.rows.size(); ++n, ++g.next) {
        const auto& row = g.rows[g.next];
        for (d::idx_t c = 0; c < out.ColumnCount() && c < row.size(); ++c)
            out.SetValue(c, n, duck_value(row[c]));
    }
    out.SetCardinality(n);
}

// BLOB to VARCHAR as SQLite's CAST(value AS TEXT): the bytes as UTF-8 text, NULL when
// they are not UTF-8 (never DuckDB's escaped form).
bool blob_to_text(d::Vector& source, d::Vector& result, d::idx_t count, d::CastParameters&) {
    d::UnaryExecutor::ExecuteWithNulls<d::string_t, d::string_t>(
        source, result, count, [&](d::string_t b, d::ValidityMask& mask, d::idx_t idx) {
            if (!is_valid_utf8(std::string_view(b.GetData(), b.GetSize()))) {
                mask.SetInvalid(idx);
                return d::string_t();
            }
            return d::StringVector::AddString(result, b);
        });
    return true;
}

// Text to BLOB as PostgreSQL's bytea input: `\x` then hex digits (what psycopg2 and
// JDBC send for a bytea parameter), else DuckDB's own form (`\xAA` escapes).
bool text_to_blob(d::Vector& source, d::Vector& result, d::idx_t count, d::CastParameters&) {
    d::UnaryExecutor::Execute<d::string_t, d::string_t>(source, result, count, [&](d::string_t t) {
        const std::string_view v(t.GetData(), t.GetSize());
        const auto hex = [](char c) { return d::Blob::HEX_MAP[static_cast<uint8_t>(c)]; };
        bool pg =
            v.size() >= 2 && v[0] == '\\' && (v[1] == 'x' || v[1] == 'X') && v.size() % 2 == 0;
        for (size_t i = 2; pg && i < v.size(); ++i) pg = hex(v[i]) >= 0;
        if (!pg) {
            auto out = d::StringVector::EmptyString(result, d::Blob::GetBlobSize(t));
            d::Blob::ToBlob(t, d::data_ptr_cast(out.GetDataWriteable()));
            out.Finalize();
            return out;
        }
        auto out = d::StringVector::EmptyString(result, (v.size() - 2) / 2);
        auto* w = out.GetDataWriteable();
        for (size_t i = 2; i < v.size(); i += 2)
            w[(i - 2) / 2] = static_cast<char>(hex(v[i]) * 16 + hex(v[i + 1]));
        out.Finalize();
        return out;
    });
    return true;
}

// PostgreSQL's convert_from(bytea, 'UTF8'): the bytes as text, an error when they are not
// UTF-8 (CAST(... AS TEXT) gives NULL instead).
void convert_from(d::DataChunk& args, d::ExpressionState&, d::Vector& result) {
    d::BinaryExecutor::Execute<d::string_t, d::string_t, d::string_t>(
        args.data[0], args.data[1], result, args.size(), [&](d::string_t b, d::string_t enc) {
            std::string e(enc.GetData(), enc.GetSize());
            std::erase(e, '-');
            std::transform(e.begin(), e.end(), e.begin(),
                           [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
            if (e != "UTF8")
                throw d::InvalidInputException(
                    "convert_from: encoding \"%s\" is not supported here: only UTF8",
                    enc.GetString());
            if (!is_valid_utf8(std::string_view(b.GetData(), b.GetSize())))
                throw d::InvalidInputException("invalid byte sequence for encoding \"UTF8\"");
            return d::StringVector::AddString(result, b);
        });
}

}  // namespace

void register_blob_text_cast(duckdb::DatabaseInstance& db) {
    // Implicit; the JSON functions reach it through sluice_json_text (duck/pg_shape.h):
    // DuckDB's own BLOB-to-JSON cast, which they would take, makes a JSON string of it.
    auto& casts = d::DBConfig::GetConfig(db).GetCastFunctions();
    casts.RegisterCastFunction(d::LogicalType::BLOB, d::LogicalType::VARCHAR,
                               d::BoundCastInfo(blob_to_text), 120);
    casts.RegisterCastFunction(d::LogicalType::VARCHAR, d::LogicalType::BLOB,
                               d::BoundCastInfo(text_to_blob));
    d::ScalarFunction f("convert_from", {d::LogicalType::BLOB, d::LogicalType::VARCHAR},
                        d::LogicalType::VARCHAR, convert_from);
    d::ExtensionLoader loader(db, "sluice_pg_text");
    loader.RegisterFunction(std::move(f));
}

void add_sluice_names(duckdb::DBConfig& config, const table_sources& src) {
    auto data = d::make_uniq<names_data>();
    data->src = src;
    config.replacement_scans.emplace_back(resolve, std::move(data));
}

void register_system_scan(duckdb::DatabaseInstance& db, const table_sources& src,
                          session_finder find) {
    auto i = d::make_shared_ptr<system_info>();
    i->src = src;
    i->find = std::move(find);
    d::TableFunction f("sluice_system", {d::LogicalType::VARCHAR}, system_scan, system_bind_fn,
                       system_init);
    f.function_info = std::move(i);
    d::ExtensionLoader loader(db, "sluice_system");
    loader.RegisterFunction(std::move(f));
}

}  // namespace sluice::sql::duck
