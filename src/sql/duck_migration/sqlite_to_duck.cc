#include "sql/duck_migration/sqlite_to_duck.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <system_error>

#include "common/clock.h"
#include "common/logging.h"
#include "duckdb.hpp"
#include "expansion/duck/duck_target.h"
#include "expansion/target_store.h"
#include "sql/json_text.h"
#include "sql/schema_names.h"
#include "sql/sql_text.h"

namespace sluice::sql::duck_migration {

namespace d = ::duckdb;

namespace {

constexpr const char* marker_key = "sqlite_migration_format";
constexpr const char* report_key = "sqlite_migration";

// A failure anywhere in the copy: the transaction is not committed.
struct failed : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string upper(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return out;
}

d::LogicalType logical(duck_type t) {
    switch (t) {
        case duck_type::bigint:
            return d::LogicalType::BIGINT;
        case duck_type::double_:
            return d::LogicalType::DOUBLE;
        case duck_type::boolean:
            return d::LogicalType::BOOLEAN;
        case duck_type::blob:
            return d::LogicalType::BLOB;
        case duck_type::date:
            return d::LogicalType::DATE;
        case duck_type::timestamp:
            return d::LogicalType::TIMESTAMP;
        case duck_type::timestamptz:
            return d::LogicalType::TIMESTAMP_TZ;
        case duck_type::time:
            return d::LogicalType::TIME;
        case duck_type::varchar:
        case duck_type::dynamic:
            break;
    }
    return d::LogicalType::VARCHAR;
}

// ---- The SQLite side: files, statements, values.

struct sqlite_db {
    sqlite3* db = nullptr;
    std::string schema;
    sqlite_db() = default;
    sqlite_db(const sqlite_db&) = delete;
    sqlite_db& operator=(const sqlite_db&) = delete;
    ~sqlite_db() { sqlite3_close_v2(db); }
};

struct statement {
    sqlite3_stmt* s = nullptr;
    statement() = default;
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    ~statement() { sqlite3_finalize(s); }
};

std::unique_ptr<statement> prepare(const sqlite_db& f, const std::string& sql) {
    auto st = std::make_unique<statement>();
    if (sqlite3_prepare_v2(f.db, sql.c_str(), -1, &st->s, nullptr) != SQLITE_OK)
        throw failed(fmt::format("schema {}: {}", f.schema, sqlite3_errmsg(f.db)));
    return st;
}

bool step(const sqlite_db& f, statement& st) {
    const int rc = sqlite3_step(st.s);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw failed(fmt::format("schema {}: {}", f.schema, sqlite3_errmsg(f.db)));
}

std::string text_at(sqlite3_stmt* s, int c) {
    const auto* p = sqlite3_column_text(s, c);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(s, c)))
             : std::string();
}

sqlite_value read(sqlite3_stmt* s, int c) {
    sqlite_value v;
    switch (sqlite3_column_type(s, c)) {
        case SQLITE_INTEGER:
            v.k = sqlite_value::kind::integer;
            v.i = sqlite3_column_int64(s, c);
            break;
        case SQLITE_FLOAT:
            v.k = sqlite_value::kind::real;
            v.r = sqlite3_column_double(s, c);
            break;
        case SQLITE_TEXT: {
            v.k = sqlite_value::kind::text;
            const auto* p = sqlite3_column_text(s, c);
            v.bytes = {reinterpret_cast<const char*>(p),
                       static_cast<size_t>(sqlite3_column_bytes(s, c))};
            break;
        }
        case SQLITE_BLOB: {
            v.k = sqlite_value::kind::blob;
            const auto* p = sqlite3_column_blob(s, c);
            v.bytes = {static_cast<const char*>(p),
                       static_cast<size_t>(sqlite3_column_bytes(s, c))};
            break;
        }
        default:
            break;
    }
    return v;
}

// The value as DuckDB's `t`; the caller checked fits(t, v) (NULL otherwise).
d::Value to_duck(duck_type t, const sqlite_value& v, sqlite3_stmt* s, int c) {
    using k = sqlite_value::kind;
    if (v.k == k::null || !fits(t, v)) return d::Value(logical(t));
    const bool number = v.k == k::integer || v.k == k::real;
    switch (t) {
        case duck_type::bigint:
            return d::Value::BIGINT(v.i);
        case duck_type::double_:
            return d::Value::DOUBLE(v.k == k::integer ? static_cast<double>(v.i) : v.r);
        case duck_type::boolean:
            return d::Value::BOOLEAN(v.i != 0);
        case duck_type::blob: {
            const std::string b = number ? text_at(s, c) : std::string(v.bytes);
            return d::Value::BLOB(reinterpret_cast<d::const_data_ptr_t>(b.data()), b.size());
        }
        case duck_type::date:
        case duck_type::timestamp:
        case duck_type::timestamptz:
        case duck_type::time:
            return d::Value(std::string(v.bytes)).DefaultCastAs(logical(t));
        case duck_type::varchar:
        case duck_type::dynamic:
            break;
    }
    return d::Value(number ? text_at(s, c) : std::string(v.bytes));
}

// ---- What to copy.

struct column_plan {
    std::string name, declared, dflt;
    duck_type chosen = duck_type::varchar;
    std::vector<duck_type> candidates;  // those every value read so far fits, best first
    bool not_null = false;
    int pk = 0;  // position in the primary key, 0: not in it
    bool has_null = false;
    int64_t max_int = 0;
};

struct table_plan {
    std::string schema, table;
    bool target = false;
    bool numbered = false;  // an INTEGER PRIMARY KEY: SQLite numbers new rows
    std::vector<column_plan> cols;
    int64_t misfits = 0;  // targets: values that did not fit their column (NULL)
    std::string ref() const { return quote_ident(schema) + "." + quote_ident(table); }
    std::string name() const { return schema + "." + table; }
};

struct progress_row {
    std::string target;
    int64_t partition, next, bstart, bnext, bend;
};

// SQLite's files of users' schemas: main first, then schemas/<name>.db by name.
std::vector<std::pair<std::string, std::filesystem::path>> sources(
    const std::filesystem::path& dir) {
    std::vector<std::pair<std::string, std::filesystem::path>> out{{"main", dir / "main.db"}};
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir / "schemas", ec)) {
        if (e.path().extension() != ".db") continue;
        const auto name = e.path().stem().string();
        if (check_schema_name(name).empty()) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    for (const auto& n : names) out.emplace_back(n, dir / "schemas" / (n + ".db"));
    return out;
}

// A DEFAULT SQLite keeps as text, when it is a literal DuckDB's column takes; nullopt
// otherwise (the column has no default on DuckDB).
std::optional<std::string> literal_default(const std::string& dflt, duck_type t) {
    if (dflt.empty()) return std::nullopt;
    const auto u = upper(dflt);
    if (u == "NULL") return dflt;
    if (u == "CURRENT_TIMESTAMP")
        return (t == duck_type::timestamp || t == duck_type::timestamptz)
                   ? std::optional<std::string>(u)
                   : std::nullopt;
    if (u == "CURRENT_DATE")
        return t == duck_type::date ? std::optional<std::string>(u) : std::nullopt;
    std::string text;
    if (dflt.size() >= 2 && dflt.front() == '\'' && dflt.back() == '\'') {
        for (size_t i = 1; i + 1 < dflt.size(); ++i) {
            if (dflt[i] == '\'') ++i;  // '' is one quote
            text += dflt[i];
        }
    } else if (u == "TRUE" || u == "FALSE") {
        text = u;
    } else {
        const bool numeric = std::all_of(dflt.begin(), dflt.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' ||
                   c == '.' || c == 'e' || c == 'E';
        });
        if (!numeric) return std::nullopt;
        text = dflt;
    }
    if (!is_valid_utf8(text)) return std::nullopt;
    d::Value out;
    std::string err;
    if (!d::Value(text).DefaultTryCastAs(logical(t), out, &err, true)) return std::nullopt;
    return quote_literal(text) + "::" + std::string(type_name(t));
}

// ---- The copy, inside one DuckDB transaction.

class copier {
  public:
    copier(d::Connection& con, report& rep) : _con(con), _rep(rep) {}

    const std::vector<std::string>& copied() const { return _copied; }

    void run(const std::filesystem::path& sql_dir) {
        exec(expansion::duck_targets::bookkeeping_sql());
        auto have = _con.Query(
            "SELECT lower(schema_name), lower(table_name) FROM duckdb_tables() "
            "WHERE database_name = current_database()");
        check(*have);
        for (auto& row : *have)
            _existing.insert(row.GetValue<std::string>(0) + "." + row.GetValue<std::string>(1));
        auto progress = _con.Query(
            fmt::format("SELECT DISTINCT target FROM main.{}", expansion::progress_table));
        check(*progress);
        for (auto& row : *progress) _progress_targets.insert(row.GetValue<std::string>(0));
        for (const auto& [schema, path] : sources(sql_dir)) copy_file(schema, path);
    }

  private:
    void check(d::QueryResult& r) {
        if (r.HasError()) throw failed(r.GetError());
    }
    void exec(const std::string& sql) {
        auto r = _con.Query(sql);
        check(*r);
    }
    void note(std::string s) {
        log_warn("sql", "copying the SQLite engine's tables into DuckDB: {}", s);
        _rep.notes.push_back(std::move(s));
    }

    void copy_file(const std::string& schema, const std::filesystem::path& path) {
        std::error_code ec;
        if (!std::filesystem::exists(path, ec)) return;
        sqlite_db f;
        f.schema = schema;
        if (sqlite3_open_v2(path.c_str(), &f.db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK)
            throw failed(fmt::format("schema {}: {}", schema,
                                     f.db ? sqlite3_errmsg(f.db) : "cannot open its file"));
        sqlite3_busy_timeout(f.db, 5000);
        // What the file holds besides tables: listed, not copied.
        auto others = prepare(f,
                              "SELECT type, name FROM sqlite_schema WHERE type IN ('view', "
                              "'trigger', 'index') AND sql IS NOT NULL AND name NOT LIKE "
                              "'\\_sluice\\_position\\_%' ESCAPE '\\' ORDER BY type, name");
        while (step(f, *others))
            note(fmt::format("{} {}.{} not copied (recreate it in DuckDB's SQL)",
                             text_at(others->s, 0), schema, text_at(others->s, 1)));
        std::vector<std::pair<std::string, std::string>> tables;
        auto list = prepare(f,
                            "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name "
                            "NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name");
        while (step(f, *list)) tables.emplace_back(text_at(list->s, 0), upper(text_at(list->s, 1)));
        const auto progress = read_progress(f, tables);
        std::set<std::string> targets;
        for (const auto& p : progress) targets.insert(p.target);
        for (const auto& [name, sql] : tables) {
            const auto key = to_lower(name);
            if (key == expansion::progress_table || key == expansion::meta_table) continue;
            if (sql.rfind("CREATE VIRTUAL", 0) == 0) {
                note(fmt::format("virtual table {}.{} not copied", schema, name));
                continue;
            }
            const bool target = targets.count(key) > 0;
            if (_existing.count(to_lower(schema) + "." + key) ||
                (target && _progress_targets.count(key))) {
                note(fmt::format("table {}.{} not copied: DuckDB's database has it already", schema,
                                 name));
                targets.erase(key);
                continue;
            }
            table_plan t{schema, name, target};
            plan_columns(f, t, sql.find("WITHOUT ROWID") != std::string::npos);
            copy_table(f, t);
            _progress_targets.insert(key);
        }
        for (const auto& p : progress) {
            if (!targets.count(p.target)) continue;
            exec(fmt::format("INSERT INTO main.{} (target, \"partition\", next_offset, "
                             "backfill_start, backfill_next, backfill_end) "
                             "VALUES ({}, {}, {}, {}, {}, {})",
                             expansion::progress_table, quote_literal(p.target), p.partition,
                             p.next, p.bstart, p.bnext, p.bend));
            ++_rep.progress_rows;
        }
    }

    std::vector<progress_row> read_progress(
        const sqlite_db& f, const std::vector<std::pair<std::string, std::string>>& tables) {
        std::vector<progress_row> out;
        const bool has = std::any_of(tables.begin(), tables.end(), [](const auto& t) {
            return to_lower(t.first) == expansion::progress_table;
        });
        if (!has) return out;
        auto v = prepare(f, fmt::format("SELECT value FROM {} WHERE key = "
                                        "'expansion_progress_format'",
                                        expansion::meta_table));
        const std::string version = step(f, *v) ? text_at(v->s, 0) : std::string();
        if (version != std::to_string(expansion::progress_format_version))
            throw failed(
                fmt::format("schema {}: expansion progress format '{}' is not the one "
                            "this build knows ({})",
                            f.schema, version, expansion::progress_format_version));
        auto q = prepare(f, fmt::format("SELECT target, partition, next_offset, backfill_start, "
                                        "backfill_next, backfill_end FROM {}",
                                        expansion::progress_table));
        while (step(f, *q))
            out.push_back({to_lower(text_at(q->s, 0)), sqlite3_column_int64(q->s, 1),
                           sqlite3_column_int64(q->s, 2), sqlite3_column_int64(q->s, 3),
                           sqlite3_column_int64(q->s, 4), sqlite3_column_int64(q->s, 5)});
        return out;
    }

    void plan_columns(const sqlite_db& f, table_plan& t, bool without_rowid) {
        auto q = prepare(f,
                         "SELECT name, type, \"notnull\", dflt_value, pk FROM "
                         "pragma_table_info(?1) ORDER BY cid");
        sqlite3_bind_text(q->s, 1, t.table.c_str(), -1, SQLITE_TRANSIENT);
        while (step(f, *q)) {
            column_plan c;
            c.name = text_at(q->s, 0);
            c.declared = text_at(q->s, 1);
            c.not_null = sqlite3_column_int(q->s, 2) != 0;
            c.dflt = text_at(q->s, 3);
            c.pk = sqlite3_column_int(q->s, 4);
            const auto mapped = map_declared(c.declared);
            // The expansions' layout on DuckDB (docs/formats/expansion-duckdb.md): _source,
            // TEXT in SQLite, holds any bytes.
            if (t.target)
                c.candidates = {
                    c.name == "_source" || mapped == duck_type::dynamic ? duck_type::blob : mapped};
            else if (mapped == duck_type::dynamic)
                c.candidates = {duck_type::bigint, duck_type::double_, duck_type::varchar,
                                duck_type::blob};
            else if (mapped == duck_type::varchar)
                c.candidates = {duck_type::varchar, duck_type::blob};
            else
                c.candidates = {mapped, duck_type::varchar, duck_type::blob};
            t.cols.push_back(std::move(c));
        }
        if (t.cols.empty()) throw failed(fmt::format("table {}: no columns", t.name()));
        const auto pks = std::count_if(t.cols.begin(), t.cols.end(),
                                       [](const column_plan& c) { return c.pk > 0; });
        t.numbered = !without_rowid && pks == 1 &&
                     std::any_of(t.cols.begin(), t.cols.end(), [](const column_plan& c) {
                         return c.pk > 0 && upper(c.declared) == "INTEGER";
                     });
    }

    std::string select_of(const table_plan& t) const {
        std::string cols;
        for (const auto& c : t.cols) cols += (cols.empty() ? "" : ", ") + quote_ident(c.name);
        return fmt::format("SELECT {} FROM {}", cols, quote_ident(t.table));
    }

    // Users' tables: the first type of each column's candidates that every value fits.
    void choose_types(const sqlite_db& f, table_plan& t) {
        if (!t.target) {
            auto q = prepare(f, select_of(t));
            while (step(f, *q)) {
                for (size_t i = 0; i < t.cols.size(); ++i) {
                    auto& c = t.cols[i];
                    const auto v = read(q->s, static_cast<int>(i));
                    if (v.k == sqlite_value::kind::null) c.has_null = true;
                    if (v.k == sqlite_value::kind::integer) c.max_int = std::max(c.max_int, v.i);
                    auto& cand = c.candidates;
                    cand.erase(std::remove_if(cand.begin(), cand.end(),
                                              [&](duck_type ty) { return !fits(ty, v); }),
                               cand.end());
                }
            }
        }
        for (auto& c : t.cols) {
            c.chosen = c.candidates.empty() ? duck_type::blob : c.candidates.front();
            const auto mapped = map_declared(c.declared);
            if (!t.target && mapped != duck_type::dynamic && c.chosen != mapped)
                note(fmt::format("{}.{} is {}: not every value is a {}", t.name(), c.name,
                                 type_name(c.chosen), type_name(mapped)));
        }
    }

    std::string create_sql(table_plan& t) {
        std::string ddl = "CREATE TABLE " + t.ref() + " (";
        std::string key;
        bool key_ok = true;
        for (size_t i = 0; i < t.cols.size(); ++i) {
            const auto& c = t.cols[i];
            ddl += fmt::format("{}{} {}", i ? ", " : "", quote_ident(c.name), type_name(c.chosen));
            if (c.not_null) ddl += " NOT NULL";
            if (t.numbered && c.pk > 0) {
                const auto seq =
                    quote_ident(t.schema) + "." + quote_ident(t.table + "_" + c.name + "_seq");
                exec(fmt::format("CREATE SEQUENCE {} START WITH {}", seq, c.max_int + 1));
                ddl += fmt::format(" DEFAULT nextval({})", quote_literal(seq));
            } else if (auto lit = literal_default(c.dflt, c.chosen)) {
                ddl += " DEFAULT " + *lit;
            } else if (!c.dflt.empty()) {
                note(fmt::format("{}.{}: DEFAULT {} not copied", t.name(), c.name, c.dflt));
            }
            if (c.pk > 0) {
                key_ok = key_ok && !c.has_null;
            }
        }
        std::vector<const column_plan*> pk;
        for (const auto& c : t.cols)
            if (c.pk > 0) pk.push_back(&c);
        std::sort(pk.begin(), pk.end(), [](auto* a, auto* b) { return a->pk < b->pk; });
        for (const auto* c : pk) key += (key.empty() ? "" : ", ") + quote_ident(c->name);
        if (!key.empty() && key_ok) ddl += ", PRIMARY KEY (" + key + ")";
        if (!key.empty() && !key_ok)
            note(fmt::format("{}: PRIMARY KEY ({}) not copied: it holds NULLs", t.name(), key));
        return ddl + ")";
    }

    void copy_table(const sqlite_db& f, table_plan& t) {
        choose_types(f, t);
        if (t.schema != "main") exec("CREATE SCHEMA IF NOT EXISTS " + quote_ident(t.schema));
        exec(create_sql(t));
        int64_t rows = 0;
        {
            d::Appender app(_con, t.schema, t.table);
            auto q = prepare(f, select_of(t));
            while (step(f, *q)) {
                app.BeginRow();
                for (size_t i = 0; i < t.cols.size(); ++i) {
                    const auto v = read(q->s, static_cast<int>(i));
                    if (v.k != sqlite_value::kind::null && !fits(t.cols[i].chosen, v)) ++t.misfits;
                    app.Append(to_duck(t.cols[i].chosen, v, q->s, static_cast<int>(i)));
                }
                app.EndRow();
                ++rows;
            }
            app.Close();
        }
        if (t.misfits)
            note(fmt::format("{}: {} values did not fit their column's type and are NULL", t.name(),
                             t.misfits));
        log_info("sql", "copied {} ({} rows{}) from the SQLite engine's files into DuckDB",
                 t.name(), rows, t.target ? ", an expansion's target" : "");
        ++_rep.tables;
        _rep.rows += rows;
        _copied.push_back(fmt::format("{} {}", t.name(), rows));
    }

    d::Connection& _con;
    report& _rep;
    std::set<std::string> _existing, _progress_targets;
    std::vector<std::string> _copied;  // "schema.table rows"
};

std::string marker_json(const report& rep, const std::vector<std::string>& copied) {
    std::string out =
        fmt::format("{{\"version\":{},\"at_ms\":{},\"tables\":[", marker_version, now_ms());
    for (size_t i = 0; i < copied.size(); ++i) {
        if (i) out += ',';
        append_json_string(out, copied[i]);
    }
    out += "],\"notes\":[";
    for (size_t i = 0; i < rep.notes.size(); ++i) {
        if (i) out += ',';
        append_json_string(out, rep.notes[i]);
    }
    return out + "]}";
}

std::string message_of(const std::exception& e) {
    return d::ErrorData(e).Message();
}

}  // namespace

std::string_view type_name(duck_type t) {
    switch (t) {
        case duck_type::bigint:
            return "BIGINT";
        case duck_type::double_:
            return "DOUBLE";
        case duck_type::boolean:
            return "BOOLEAN";
        case duck_type::varchar:
            return "VARCHAR";
        case duck_type::blob:
            return "BLOB";
        case duck_type::date:
            return "DATE";
        case duck_type::timestamp:
            return "TIMESTAMP";
        case duck_type::timestamptz:
            return "TIMESTAMPTZ";
        case duck_type::time:
            return "TIME";
        case duck_type::dynamic:
            break;
    }
    return "ANY";
}

duck_type map_declared(std::string_view declared) {
    auto u = upper(declared);
    if (const auto paren = u.find('('); paren != std::string::npos) u.resize(paren);
    while (!u.empty() && u.back() == ' ') u.pop_back();
    while (!u.empty() && u.front() == ' ') u.erase(0, 1);
    static const std::map<std::string, duck_type, std::less<>> by_name{
        {"BOOLEAN", duck_type::boolean},
        {"BOOL", duck_type::boolean},
        {"DATE", duck_type::date},
        {"TIMESTAMP", duck_type::timestamp},
        {"DATETIME", duck_type::timestamp},
        {"TIMESTAMP WITHOUT TIME ZONE", duck_type::timestamp},
        {"TIMESTAMPTZ", duck_type::timestamptz},
        {"TIMESTAMP WITH TIME ZONE", duck_type::timestamptz},
        {"TIME", duck_type::time},
        {"TIME WITHOUT TIME ZONE", duck_type::time},
        {"BYTEA", duck_type::blob},
        {"JSON", duck_type::varchar},
        {"JSONB", duck_type::varchar},
        {"UUID", duck_type::varchar},
    };
    if (auto it = by_name.find(u); it != by_name.end()) return it->second;
    const auto has = [&](const char* s) { return u.find(s) != std::string::npos; };
    if (has("INT")) return duck_type::bigint;
    if (has("CHAR") || has("CLOB") || has("TEXT")) return duck_type::varchar;
    if (u.empty()) return duck_type::dynamic;
    if (has("BLOB")) return duck_type::blob;
    return duck_type::double_;  // REAL, FLOA, DOUB, and NUMERIC affinity
}

bool fits(duck_type t, const sqlite_value& v) {
    using k = sqlite_value::kind;
    if (v.k == k::null) return true;
    switch (t) {
        case duck_type::bigint:
            return v.k == k::integer;
        case duck_type::double_:
            if (v.k == k::real) return true;
            return v.k == k::integer && v.i > -(int64_t{1} << 53) && v.i < (int64_t{1} << 53);
        case duck_type::boolean:
            return v.k == k::integer && (v.i == 0 || v.i == 1);
        case duck_type::varchar:
            return v.k == k::integer || v.k == k::real ||
                   (v.k == k::text && is_valid_utf8(v.bytes));
        case duck_type::blob:
            return true;
        case duck_type::date:
        case duck_type::timestamp:
        case duck_type::timestamptz:
        case duck_type::time: {
            if (v.k != k::text || !is_valid_utf8(v.bytes)) return false;
            d::Value out;
            std::string err;
            return d::Value(std::string(v.bytes)).DefaultTryCastAs(logical(t), out, &err, true);
        }
        case duck_type::dynamic:
            break;
    }
    return false;
}

result<report> migrate(const std::filesystem::path& data_dir, const std::filesystem::path& file,
                       uint64_t memory_limit_bytes) {
    report rep;
    const auto sql_dir = data_dir / "sql";
    std::error_code ec;
    if (!std::filesystem::exists(sql_dir / "main.db", ec)) return rep;
    try {
        std::filesystem::create_directories(file.parent_path(), ec);
        if (ec)
            return error{errc::io_error,
                         fmt::format("{}: {}", file.parent_path().string(), ec.message())};
        d::DBConfig config;
        config.SetOptionByName(
            "memory_limit",
            d::Value(fmt::format("{}KiB", std::max<uint64_t>(memory_limit_bytes / 1024, 1024))));
        config.SetOptionByName("threads", d::Value::BIGINT(1));
        config.SetOptionByName("autoinstall_known_extensions", d::Value::BOOLEAN(false));
        config.SetOptionByName("autoload_known_extensions", d::Value::BOOLEAN(false));
        config.SetOptionByName("temp_directory", d::Value((data_dir / "sql-duck-tmp").string()));
        d::DuckDB db(file.string(), &config);
        d::Connection con(db);
        auto done = con.Query(fmt::format(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND "
            "schema_name = 'main' AND table_name = '{}'",
            expansion::meta_table));
        if (done->HasError()) return error{errc::io_error, done->GetError()};
        if (done->GetValue(0, 0).GetValue<int64_t>() > 0) {
            auto m = con.Query(fmt::format("SELECT count(*) FROM main.{} WHERE key = '{}'",
                                           expansion::meta_table, marker_key));
            if (m->HasError()) return error{errc::io_error, m->GetError()};
            if (m->GetValue(0, 0).GetValue<int64_t>() > 0) return rep;
        }
        log_info("sql", "copying the SQLite engine's tables ({}) into DuckDB ({}), once",
                 sql_dir.string(), file.string());
        con.BeginTransaction();
        copier c(con, rep);
        c.run(sql_dir);
        auto m = con.Query(fmt::format("INSERT INTO main.{} VALUES ('{}', '{}'), ('{}', {})",
                                       expansion::meta_table, marker_key, marker_version,
                                       report_key, quote_literal(marker_json(rep, c.copied()))));
        if (m->HasError()) throw failed(m->GetError());
        con.Commit();
        auto cp = con.Query("CHECKPOINT");
        if (cp->HasError())
            log_warn("sql", "checkpoint after the copy: {} (DuckDB replays its WAL)",
                     cp->GetError());
    } catch (const failed& e) {
        return error{errc::io_error,
                     fmt::format("copying the SQLite engine's tables into DuckDB: {} "
                                 "(nothing was copied; the SQLite files are "
                                 "unchanged)",
                                 e.what())};
    } catch (const std::exception& e) {
        return error{errc::io_error,
                     fmt::format("copying the SQLite engine's tables into DuckDB: {} (nothing was "
                                 "copied; the SQLite files are unchanged)",
                                 message_of(e))};
    }
    rep.ran = true;
    log_info("sql",
             "copied {} tables ({} rows, {} expansion progress rows) from the SQLite "
             "engine's files into DuckDB; the SQLite files are kept",
             rep.tables, rep.rows, rep.progress_rows);
    return rep;
}

}  // namespace sluice::sql::duck_migration
