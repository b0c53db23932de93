#include "sql/duck/user_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "duckdb/parser/parsed_data/alter_info.hpp"
#include "duckdb/parser/parsed_data/create_index_info.hpp"
#include "duckdb/parser/parsed_data/create_info.hpp"
#include "duckdb/parser/parsed_data/drop_info.hpp"
#include "duckdb/parser/statement/alter_statement.hpp"
#include "duckdb/parser/statement/create_statement.hpp"
#include "duckdb/parser/statement/delete_statement.hpp"
#include "duckdb/parser/statement/drop_statement.hpp"
#include "duckdb/parser/statement/insert_statement.hpp"
#include "duckdb/parser/statement/update_statement.hpp"
#include "duckdb/parser/tableref/basetableref.hpp"
#include "sql/schema_names.h"
#include "sql/engine_options.h"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

query_error read_only(std::string message) {
    return {failure::read_only, std::move(message)};
}

// The serving database's catalog name, and the tables the broker writes (expansion
// targets and their progress: sql::table_guard), which users may read but not change.
struct names {
    const std::string& database;
    const table_guard* guard;
};

// Why a write or DDL into catalog.schema is refused, or nullopt. DuckDB takes the first
// part of a two-part name for a catalog when no schema has that name: both are checked.
std::optional<query_error> target_refused(const std::string& catalog, const std::string& schema,
                                          const names& n, const std::string& name = {}) {
    const auto what = [&](const std::string& part) {
        return name.empty() ? part : fmt::format("{}.\"{}\"", part, name);
    };
    for (const auto& part : {lower(catalog), lower(schema)}) {
        if (part == "kafka_topics" || part == "system")
            return read_only(fmt::format(
                "{} is read-only: topics are written by Kafka producers, the system tables by "
                "the broker",
                what(part)));
        if (part == "pg_catalog" || part == "information_schema")
            return read_only(
                fmt::format("{} is in the engine's catalog: it is read-only", what(part)));
    }
    const auto c = lower(catalog);
    if (!c.empty() && c != lower(n.database) && c != TEMP_CATALOG)
        return read_only(
            fmt::format("catalog {} is not a database of this server: users' tables "
                        "live in schemas (CREATE SCHEMA)",
                        catalog));
    if (n.guard && !name.empty()) {
        if (auto why = n.guard->protected_table(schema.empty() ? "main" : schema, name);
            !why.empty())
            return read_only(std::move(why));
    }
    return std::nullopt;
}

std::optional<query_error> table_refused(const d::TableRef* t, const names& n) {
    if (!t || t->type != d::TableReferenceType::BASE_TABLE) return std::nullopt;
    const auto& b = t->Cast<d::BaseTableRef>();
    return target_refused(b.catalog_name, b.schema_name, n, b.table_name);
}

// The kinds of catalog entries users create and drop.
bool users_kind(d::CatalogType t) {
    switch (t) {
        case d::CatalogType::TABLE_ENTRY:
        case d::CatalogType::SCHEMA_ENTRY:
        case d::CatalogType::VIEW_ENTRY:
        case d::CatalogType::INDEX_ENTRY:
        case d::CatalogType::SEQUENCE_ENTRY:
        case d::CatalogType::TYPE_ENTRY:
            return true;
        default:
            return false;
    }
}

std::optional<query_error> kind_refused(d::CatalogType t, const char* verb) {
    if (users_kind(t)) return std::nullopt;
    return read_only(
        fmt::format("{} {} is not available to SQL users", verb, d::CatalogTypeToString(t)));
}

std::optional<query_error> create_refused(const d::CreateInfo& info, const names& n) {
    if (auto e = kind_refused(info.type, "CREATE")) return e;
    if (info.type == d::CatalogType::SCHEMA_ENTRY) {
        // CREATE SCHEMA c.s: the catalog is the only other part.
        if (auto e = target_refused(info.catalog, "", n)) return e;
        if (const auto why = check_schema_name(info.schema); !why.empty())
            return query_error{failure::invalid_parameter, "invalid schema name: " + why};
        return std::nullopt;
    }
    if (info.type == d::CatalogType::INDEX_ENTRY) {
        // An index on a target would change how the broker's appends to it go.
        const auto& index = info.Cast<d::CreateIndexInfo>();
        if (auto e = target_refused(info.catalog, info.schema, n, index.table)) return e;
    }
    return target_refused(info.catalog, info.schema, n, info.GetEntryName());
}

std::optional<query_error> drop_refused(const d::DropInfo& info, const names& n) {
    if (auto e = kind_refused(info.type, "DROP")) return e;
    if (info.type == d::CatalogType::SCHEMA_ENTRY) {
        if (auto e =
                target_refused(info.catalog.empty() ? info.schema : info.catalog, info.name, n))
            return e;
        if (n.guard) {
            if (auto why = n.guard->protected_schema(info.name); !why.empty())
                return read_only(std::move(why));
        }
        return std::nullopt;
    }
    return target_refused(info.catalog, info.schema, n, info.name);
}

}  // namespace

std::optional<query_error> refused(const d::SQLStatement& s, const std::string& database,
                                   const table_guard* guard) {
    const names n{database, guard};
    switch (s.type) {
        case d::StatementType::SELECT_STATEMENT:
        case d::StatementType::EXPLAIN_STATEMENT:
        case d::StatementType::TRANSACTION_STATEMENT:
        case d::StatementType::VARIABLE_SET_STATEMENT:
        case d::StatementType::SET_STATEMENT:
            return std::nullopt;
        case d::StatementType::CREATE_STATEMENT:
            return create_refused(*s.Cast<d::CreateStatement>().info, n);
        case d::StatementType::DROP_STATEMENT:
            return drop_refused(*s.Cast<d::DropStatement>().info, n);
        case d::StatementType::ALTER_STATEMENT: {
            const auto& a = *s.Cast<d::AlterStatement>().info;
            return target_refused(a.catalog, a.schema, n, a.name);
        }
        case d::StatementType::INSERT_STATEMENT: {
            const auto& i = s.Cast<d::InsertStatement>();
            if (auto e = target_refused(i.catalog, i.schema, n, i.table)) return e;
            return table_refused(i.table_ref.get(), n);
        }
        case d::StatementType::UPDATE_STATEMENT:
            return table_refused(s.Cast<d::UpdateStatement>().table.get(), n);
        case d::StatementType::DELETE_STATEMENT:
            return table_refused(s.Cast<d::DeleteStatement>().table.get(), n);
        default:
            return read_only(fmt::format(
                "{} is not available on the duckdb SQL engine: SQL reads topics and system "
                "tables and writes users' own tables (CREATE, INSERT, UPDATE, DELETE, DROP, "
                "ALTER)",
                d::StatementTypeToString(s.type)));
    }
}

}  // namespace sluice::sql::duck
