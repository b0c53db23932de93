#include "sql/row_table.h"

#include <fmt/format.h>

#include <memory>

#include "sql/sql_text.h"

namespace sluice::sql {

namespace {

using registry = std::map<std::string, row_table_spec>;

using row_list = std::vector<std::vector<value>>;

struct row_vtab {
    sqlite3_vtab base{};
    const row_table_spec* spec = nullptr;
    std::shared_ptr<const row_list> cached;  // with spec->generation: its rows
    uint64_t cached_generation = 0;
};

struct row_cursor {
    sqlite3_vtab_cursor base{};
    std::shared_ptr<const row_list> rows;
    size_t at = 0;
    int eq_column = -1;  // an equality the rows are filtered on, or -1
    value eq;
};

int connect(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
            char** err) {
    auto* reg = static_cast<registry*>(aux);
    if (argc < 4) {
        *err = sqlite3_mprintf("a row table needs its key");
        return SQLITE_ERROR;
    }
    auto it = reg->find(argv[3]);
    if (it == reg->end()) {
        *err = sqlite3_mprintf("no row table '%s'", argv[3]);
        return SQLITE_ERROR;
    }
    int rc = sqlite3_declare_vtab(db, it->second.declaration.c_str());
    if (rc != SQLITE_OK) return rc;
    auto* t = new row_vtab;
    t->spec = &it->second;
    *out = &t->base;
    return SQLITE_OK;
}

int best_index(sqlite3_vtab*, sqlite3_index_info* info) {
    // One equality is used to skip rows; SQLite checks it again (omit = 0), so a value
    // of another type than the column's (a text OID) only loses the shortcut. The first
    // column is the tables' key (a name, an OID): an equality on it is preferred, as the
    // one a join looks rows up by.
    int best = -1;
    for (int i = 0; i < info->nConstraint; ++i) {
        const auto& c = info->aConstraint[i];
        if (!c.usable || c.op != SQLITE_INDEX_CONSTRAINT_EQ || c.iColumn < 0) continue;
        // Rows are compared byte for byte: only under the default collation.
        if (sqlite3_stricmp(sqlite3_vtab_collation(info, i), "BINARY") != 0) continue;
        if (best < 0 || (c.iColumn == 0 && info->aConstraint[best].iColumn != 0)) best = i;
    }
    if (best < 0) {
        info->estimatedCost = 1000;
        info->estimatedRows = 1000;
        return SQLITE_OK;
    }
    const bool key = info->aConstraint[best].iColumn == 0;
    info->aConstraintUsage[best].argvIndex = 1;
    info->idxNum = info->aConstraint[best].iColumn + 1;
    info->estimatedCost = key ? 5 : 10;
    info->estimatedRows = key ? 2 : 10;
    return SQLITE_OK;
}

int disconnect(sqlite3_vtab* t) {
    delete reinterpret_cast<row_vtab*>(t);
    return SQLITE_OK;
}

int open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
    *out = &(new row_cursor)->base;
    return SQLITE_OK;
}

int close(sqlite3_vtab_cursor* c) {
    delete reinterpret_cast<row_cursor*>(c);
    return SQLITE_OK;
}

// Whether the cursor's row passes its equality: values of the same storage class are
// compared; others pass (SQLite decides, with its affinity rules).
bool matches(const row_cursor& c) {
    if (c.eq_column < 0) return true;
    const auto& row = (*c.rows)[c.at];
    if (static_cast<size_t>(c.eq_column) >= row.size()) return true;
    const value& v = row[static_cast<size_t>(c.eq_column)];
    if (v.index() != c.eq.index() || (v.index() != 1 && v.index() != 3)) return true;
    return v == c.eq;
}

void skip_to_match(row_cursor& c) {
    while (c.at < c.rows->size() && !matches(c)) ++c.at;
}

outcome<std::shared_ptr<const row_list>> rows_of(row_vtab& t) {
    if (t.spec->generation && t.cached && t.cached_generation == t.spec->generation())
        return t.cached;
    auto rows = t.spec->rows();
    if (!rows) return rows.error();
    auto shared = std::make_shared<const row_list>(std::move(*rows));
    if (t.spec->generation) {
        t.cached = shared;
        t.cached_generation = t.spec->generation();
    }
    return shared;
}

int filter(sqlite3_vtab_cursor* cur, int idx, const char*, int argc, sqlite3_value** argv) {
    auto* c = reinterpret_cast<row_cursor*>(cur);
    auto rows = rows_of(*reinterpret_cast<row_vtab*>(cur->pVtab));
    if (!rows) {
        sqlite3_free(cur->pVtab->zErrMsg);
        cur->pVtab->zErrMsg = sqlite3_mprintf("%s", rows.error().message.c_str());
        return SQLITE_ERROR;
    }
    c->rows = std::move(*rows);
    c->at = 0;
    c->eq_column = -1;
    if (idx > 0 && argc > 0) {
        if (sqlite3_value_type(argv[0]) == SQLITE_INTEGER) {
            c->eq_column = idx - 1;
            c->eq = static_cast<int64_t>(sqlite3_value_int64(argv[0]));
        } else if (sqlite3_value_type(argv[0]) == SQLITE_TEXT) {
            c->eq_column = idx - 1;
            c->eq = std::string(reinterpret_cast<const char*>(sqlite3_value_text(argv[0])),
                                static_cast<size_t>(sqlite3_value_bytes(argv[0])));
        }
    }
    skip_to_match(*c);
    return SQLITE_OK;
}

int next(sqlite3_vtab_cursor* cur) {
    auto* c = reinterpret_cast<row_cursor*>(cur);
    ++c->at;
    skip_to_match(*c);
    return SQLITE_OK;
}

int eof(sqlite3_vtab_cursor* cur) {
    auto* c = reinterpret_cast<row_cursor*>(cur);
    return c->at >= c->rows->size();
}

int column_at(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int i) {
    auto* c = reinterpret_cast<row_cursor*>(cur);
    const auto& row = (*c->rows)[c->at];
    if (static_cast<size_t>(i) < row.size()) set_result(ctx, row[static_cast<size_t>(i)]);
    return SQLITE_OK;
}

int rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* out) {
    *out = static_cast<sqlite3_int64>(reinterpret_cast<row_cursor*>(cur)->at);
    return SQLITE_OK;
}

// Read-only: no xUpdate, so SQLite itself refuses writes.
const sqlite3_module row_module = {.iVersion = 0,
                                   .xCreate = connect,
                                   .xConnect = connect,
                                   .xBestIndex = best_index,
                                   .xDisconnect = disconnect,
                                   .xDestroy = disconnect,
                                   .xOpen = open,
                                   .xClose = close,
                                   .xFilter = filter,
                                   .xNext = next,
                                   .xEof = eof,
                                   .xColumn = column_at,
                                   .xRowid = rowid};

}  // namespace

outcome<bool> exec_sql(sqlite3* db, const std::string& sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) == SQLITE_OK) return true;
    query_error e{failure::internal, fmt::format("{}: {}", sql, msg ? msg : "?")};
    sqlite3_free(msg);
    return e;
}

void set_result(sqlite3_context* c, const value& v) {
    std::visit(
        [c](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, std::monostate>)
                sqlite3_result_null(c);
            else if constexpr (std::is_same_v<T, int64_t>)
                sqlite3_result_int64(c, x);
            else if constexpr (std::is_same_v<T, double>)
                sqlite3_result_double(c, x);
            else if constexpr (std::is_same_v<T, std::string>)
                sqlite3_result_text64(c, x.data(), x.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
            else
                sqlite3_result_blob64(c, x.data(), x.size(), SQLITE_TRANSIENT);
        },
        v);
}

outcome<bool> create_row_tables(sqlite3* db, const std::string& schema,
                                std::map<std::string, row_table_spec> specs,
                                const std::string& module) {
    std::vector<std::string> names;
    names.reserve(specs.size());
    for (const auto& [name, spec] : specs) names.push_back(name);
    // SQLite owns the registry from here: it deletes it with the module.
    auto* reg = new registry(std::move(specs));
    int rc = sqlite3_create_module_v2(db, module.c_str(), &row_module, reg,
                                      [](void* p) { delete static_cast<registry*>(p); });
    if (rc != SQLITE_OK)
        return query_error{failure::internal,
                           fmt::format("{}: {}", module, sqlite3_errmsg(db))};
    for (const auto& name : names) {
        if (auto r = exec_sql(
                db, fmt::format("CREATE VIRTUAL TABLE {}.{} USING {}({})", quote_ident(schema),
                                quote_ident(name), module, name));
            !r)
            return r;
    }
    return true;
}

}  // namespace sluice::sql
