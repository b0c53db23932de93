#include "sql/pg_catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "sql/sql_text.h"
#include "sql/topic_names.h"

namespace sluice::sql {

namespace {

// Runs a query of the engine's own on the session's connection (from inside a
// statement: SQLite allows that) and calls `row` for each row.
outcome<bool> each_row(sqlite3* db, const std::string& sql,
                       const std::function<void(sqlite3_stmt*)>& row) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
        return query_error{failure::internal,
                           fmt::format("catalog: {}: {}", sql, sqlite3_errmsg(db))};
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) row(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return query_error{failure::internal,
                           fmt::format("catalog: {}: {}", sql, sqlite3_errmsg(db))};
    return true;
}

std::string text_at(sqlite3_stmt* st, int i) {
    const auto* p = sqlite3_column_text(st, i);
    return p ? reinterpret_cast<const char*>(p) : "";
}

uint32_t fnv1a(std::string_view s) {
    uint32_t h = 2166136261u;
    for (char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 16777619u;
    }
    return h;
}

constexpr int64_t first_user_oid = 16384;
constexpr int64_t oid_span = (int64_t{1} << 31) - first_user_oid;

int64_t hashed_oid(std::string_view key) {
    return first_user_oid + static_cast<int64_t>(fnv1a(key)) % oid_span;
}

// The columns of a table or view, from PRAGMA table_xinfo (hidden columns of virtual
// tables left out).
outcome<bool> read_columns(sqlite3* db, pg_relation& rel, const std::string& table) {
    auto r = each_row(db,
                    fmt::format("PRAGMA {}.table_xinfo({})", quote_ident(rel.schema),
                                quote_literal(table)),
                    [&](sqlite3_stmt* st) {
                        if (sqlite3_column_int(st, 6) == 1) return;  // hidden
                        pg_column c;
                        c.name = text_at(st, 1);
                        c.decl = text_at(st, 2);
                        c.not_null = sqlite3_column_int(st, 3) != 0;
                        if (sqlite3_column_type(st, 4) != SQLITE_NULL) c.default_sql = text_at(st, 4);
                        c.pk = sqlite3_column_int(st, 5);
                        rel.columns.push_back(std::move(c));
                    });
    if (!r) return r;
    // NOT NULL as SQLite enforces it: a rowid table's INTEGER PRIMARY KEY (the rowid)
    // is never NULL; other primary key columns are NULL-able unless declared NOT NULL.
    int keys = 0;
    pg_column* key = nullptr;
    for (auto& c : rel.columns)
        if (c.pk > 0) ++keys, key = &c;
    if (keys == 1 && to_upper(key->decl) == "INTEGER") key->not_null = true;
    return true;
}

int attnum_of(const pg_relation& table, const std::string& column) {
    for (size_t i = 0; i < table.columns.size(); ++i)
        if (sqlite3_stricmp(table.columns[i].name.c_str(), column.c_str()) == 0)
            return static_cast<int>(i) + 1;
    return 0;
}

// The indexes of a table: PRAGMA index_list. The primary key is named <table>_pkey as in
// PostgreSQL, and a rowid table's INTEGER PRIMARY KEY, which has no index in SQLite,
// gets one here, so that tools find the key where they look for it (pg_index).
outcome<bool> read_indexes(sqlite3* db, const pg_relation& table, const std::string& sql_name,
                           std::vector<pg_relation>& out) {
    struct listed {
        std::string name, origin;
        bool unique;
    };
    std::vector<listed> list;
    auto r = each_row(db,
                      fmt::format("PRAGMA {}.index_list({})", quote_ident(table.schema),
                                  quote_literal(sql_name)),
                      [&](sqlite3_stmt* st) {
                          list.push_back(
                              {text_at(st, 1), text_at(st, 3), sqlite3_column_int(st, 2) != 0});
                      });
    if (!r) return r;
    bool have_pk = false;
    for (const auto& l : list) {
        pg_relation ix;
        ix.schema = table.schema;
        ix.kind = 'i';
        ix.table_oid = table.oid;
        ix.unique = l.unique;
        ix.primary = l.origin == "pk";
        have_pk = have_pk || ix.primary;
        ix.name = ix.primary ? table.name + "_pkey" : l.name;
        ix.sqlite_name = l.name;
        auto rc = each_row(db,
                           fmt::format("PRAGMA {}.index_info({})", quote_ident(table.schema),
                                       quote_literal(l.name)),
                           [&](sqlite3_stmt* st) {
                               ix.keys.push_back(attnum_of(table, text_at(st, 2)));
                           });
        if (!rc) return rc;
        out.push_back(std::move(ix));
    }
    std::vector<std::pair<int, int>> pk;  // (position, attnum)
    for (size_t i = 0; i < table.columns.size(); ++i)
        if (table.columns[i].pk > 0) pk.emplace_back(table.columns[i].pk, static_cast<int>(i) + 1);
    if (!have_pk && !pk.empty()) {
        std::sort(pk.begin(), pk.end());
        pg_relation ix;
        ix.schema = table.schema;
        ix.kind = 'i';
        ix.name = table.name + "_pkey";
        ix.table_oid = table.oid;
        ix.unique = ix.primary = true;
        for (auto [pos, att] : pk) ix.keys.push_back(att);
        out.push_back(std::move(ix));
    }
    return true;
}

outcome<bool> read_schema(sqlite3* db, const std::string& schema, int64_t nsp_oid,
                          std::vector<pg_relation>& out) {
    struct listed {
        std::string name, type, sql;
    };
    std::vector<listed> objects;
    auto r = each_row(db,
                      fmt::format("SELECT name, type, sql FROM {}.sqlite_schema WHERE type IN "
                                  "('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
                                  "ORDER BY name",
                                  quote_ident(schema)),
                      [&](sqlite3_stmt* st) {
                          objects.push_back({text_at(st, 0), text_at(st, 1), text_at(st, 2)});
                      });
    if (!r) return r;
    for (const auto& o : objects) {
        pg_relation rel;
        rel.schema = schema;
        rel.name = schema == "kafka_topics" ? topic_of_table(o.name) : o.name;
        rel.sqlite_name = o.name;
        rel.kind = o.type == "view" ? 'v' : 'r';
        rel.oid = pg_relation_oid(schema, rel.name);
        rel.nsp_oid = nsp_oid;
        rel.sql = o.sql;
        if (auto c = read_columns(db, rel, o.name); !c) return c;
        std::vector<pg_relation> indexes;
        if (rel.kind == 'r')
            if (auto i = read_indexes(db, rel, o.name, indexes); !i) return i;
        out.push_back(std::move(rel));
        for (auto& ix : indexes) {
            ix.oid = pg_relation_oid(schema, ix.name);
            ix.nsp_oid = nsp_oid;
            out.push_back(std::move(ix));
        }
    }
    return true;
}

}  // namespace

int64_t pg_namespace_oid(const std::string& schema) {
    if (schema == "pg_catalog") return 11;
    if (schema == "main") return 2200;
    return hashed_oid("namespace:" + schema);
}

int64_t pg_relation_oid(const std::string& schema, const std::string& name) {
    return hashed_oid(schema + "." + name);
}

void pg_snapshot::index() {
    _by_oid.clear();
    _visible.clear();
    _indexed.clear();
    std::unordered_map<std::string, size_t> rank;  // schema -> its place in the search order
    for (size_t i = 0; i < schemas.size(); ++i) rank.emplace(schemas[i].first, i);
    for (size_t i = 0; i < relations.size(); ++i) {
        const auto& r = relations[i];
        _by_oid.emplace(r.oid, i);
        if (r.kind == 'i') _indexed.insert(r.table_oid);
        auto [it, fresh] = _visible.emplace(to_lower(r.name), i);
        if (!fresh && rank[r.schema] < rank[relations[it->second].schema]) it->second = i;
    }
}

const pg_relation* pg_snapshot::by_oid(int64_t oid) const {
    const auto it = _by_oid.find(oid);
    return it == _by_oid.end() ? nullptr : &relations[it->second];
}

const pg_relation* pg_snapshot::visible(const std::string& name) const {
    // SQLite compares names without ASCII case.
    const auto it = _visible.find(to_lower(name));
    return it == _visible.end() ? nullptr : &relations[it->second];
}

std::optional<int64_t> pg_snapshot::schema_oid(const std::string& name) const {
    for (const auto& [schema, oid] : schemas)
        if (schema == name) return oid;
    return std::nullopt;
}

const std::string* pg_snapshot::schema_name(int64_t oid) const {
    for (const auto& s : schemas)
        if (s.second == oid) return &s.first;
    return nullptr;
}

std::string pg_catalog_reader::user() const {
    return _ctx ? _ctx->principal().user : "ANONYMOUS";
}

outcome<const pg_snapshot*> pg_catalog_reader::snapshot() {
    if (_ctx && _ctx->statement_serial() == _serial) return &_snap;
    pg_snapshot s;
    // SQLite resolves an unqualified name in temp, then main, then the attached schemas
    // in the order of attachment; temp holds nothing of the catalog's.
    for (int i = 0; const char* name = sqlite3_db_name(_db, i); ++i)
        if (std::strcmp(name, "temp") != 0) s.schemas.emplace_back(name, pg_namespace_oid(name));
    for (const auto& [schema, oid] : s.schemas)
        if (auto r = read_schema(_db, schema, oid, s.relations); !r) return r.error();
    s.index();
    _snap = std::move(s);
    _serial = _ctx ? _ctx->statement_serial() : _serial;
    return &_snap;
}

}  // namespace sluice::sql
