// The SQL functions of PostgreSQL's catalog that tools call (sql/pg_catalog.h), and the
// types the catalog knows.

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <regex>

#include "sql/pg_catalog.h"
#include "sql/row_table.h"
#include "sql/sql_text.h"

namespace sluice::sql {

namespace {

// OIDs, names and sizes as in PostgreSQL's pg_type.dat.
const std::vector<pg_type_info> types = {
    {16, "bool", "boolean", 1, "B", 1000},
    {17, "bytea", "bytea", -1, "U", 1001},
    {18, "char", "\"char\"", 1, "Z", 1002},
    {19, "name", "name", 64, "S", 1003},
    {20, "int8", "bigint", 8, "N", 1016},
    {21, "int2", "smallint", 2, "N", 1005},
    {22, "int2vector", "int2vector", -1, "A", 1006},
    {23, "int4", "integer", 4, "N", 1007},
    {24, "regproc", "regproc", 4, "N", 1008},
    {25, "text", "text", -1, "S", 1009},
    {26, "oid", "oid", 4, "N", 1028},
    {114, "json", "json", -1, "U", 199},
    {700, "float4", "real", 4, "N", 1021},
    {701, "float8", "double precision", 8, "N", 1022},
    {705, "unknown", "unknown", -2, "X", 0},
    {1000, "_bool", "boolean[]", -1, "A", 0},
    {1001, "_bytea", "bytea[]", -1, "A", 0},
    {1005, "_int2", "smallint[]", -1, "A", 0},
    {1007, "_int4", "integer[]", -1, "A", 0},
    {1009, "_text", "text[]", -1, "A", 0},
    {1016, "_int8", "bigint[]", -1, "A", 0},
    {1021, "_float4", "real[]", -1, "A", 0},
    {1022, "_float8", "double precision[]", -1, "A", 0},
    {1015, "_varchar", "character varying[]", -1, "A", 0},
    {1028, "_oid", "oid[]", -1, "A", 0},
    {1042, "bpchar", "character", -1, "S", 1014},
    {1043, "varchar", "character varying", -1, "S", 1015},
    {1082, "date", "date", 4, "D", 1182},
    {1083, "time", "time without time zone", 8, "D", 1183},
    {1114, "timestamp", "timestamp without time zone", 8, "D", 1115},
    {1184, "timestamptz", "timestamp with time zone", 8, "D", 1185},
    {1186, "interval", "interval", 16, "T", 1187},
    {1266, "timetz", "time with time zone", 12, "D", 1270},
    {1700, "numeric", "numeric", -1, "N", 1231},
    {2205, "regclass", "regclass", 4, "N", 2210},
    {2206, "regtype", "regtype", 4, "N", 2211},
    {2950, "uuid", "uuid", 16, "U", 2951},
    {3802, "jsonb", "jsonb", -1, "U", 3807},
};

std::string arg_text(sqlite3_value* v) {
    const auto* p = sqlite3_value_text(v);
    return p ? reinterpret_cast<const char*>(p) : "";
}

bool is_null(sqlite3_value* v) {
    return sqlite3_value_type(v) == SQLITE_NULL;
}

void result_text(sqlite3_context* c, const std::string& s) {
    sqlite3_result_text(c, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

pg_catalog_reader* reader_of(sqlite3_context* c) {
    return static_cast<pg_catalog_reader*>(sqlite3_user_data(c));
}

// The snapshot for a function, or nullptr with the error set.
const pg_snapshot* snapshot_for(sqlite3_context* c) {
    auto s = reader_of(c)->snapshot();
    if (!s) {
        sqlite3_result_error(c, s.error().message.c_str(), -1);
        return nullptr;
    }
    return *s;
}

// A relation's name as regclass prints it: qualified unless the name finds it.
std::string regclass_name(const pg_snapshot& s, const pg_relation& r) {
    const auto* v = s.visible(r.name);
    const std::string name = quote_ident(r.name);
    auto plain = [](const std::string& n) {
        if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
        for (char ch : n)
            if (!(std::islower(static_cast<unsigned char>(ch)) ||
                  std::isdigit(static_cast<unsigned char>(ch)) || ch == '_'))
                return false;
        return true;
    };
    auto ident = [&](const std::string& n) { return plain(n) ? n : quote_ident(n); };
    if (v == &r) return ident(r.name);
    return ident(r.schema) + "." + ident(r.name);
}

// The relation x::regclass stands for: a number (or numeric text) is an OID; text is a
// name, optionally schema-qualified and quoted. nullptr (with the error set, as in
// PostgreSQL) when none has it; an unknown OID gives nullptr without an error.
const pg_relation* regclass_of(sqlite3_context* c, const pg_snapshot& s, sqlite3_value* v) {
    if (sqlite3_value_numeric_type(v) == SQLITE_INTEGER) return s.by_oid(sqlite3_value_int64(v));
    const std::string text = arg_text(v);
    std::string schema, name = text;
    auto unq = [](std::string n) {
        if (n.size() >= 2 && n.front() == '"' && n.back() == '"') return n.substr(1, n.size() - 2);
        return to_lower(n);
    };
    if (auto dot = text.find('.'); dot != std::string::npos && text[0] != '"') {
        schema = unq(text.substr(0, dot));
        name = text.substr(dot + 1);
    }
    name = unq(name);
    const pg_relation* r = schema.empty() ? s.visible(name) : nullptr;
    for (const auto& rel : s.relations)
        if (!schema.empty() && rel.schema == schema &&
            sqlite3_stricmp(rel.name.c_str(), name.c_str()) == 0)
            r = &rel;
    if (!r) {
        const auto msg = fmt::format("relation \"{}\" does not exist", text);
        sqlite3_result_error(c, msg.c_str(), -1);
    }
    return r;
}

// x::regclass: a name gives its OID; an OID gives the relation's name, as regclass
// prints (x::regclass::text: pg_regclass_text, the name in both cases).
void regclass_fn(sqlite3_context* c, int, sqlite3_value** argv) {
    if (is_null(argv[0])) return sqlite3_result_null(c);
    const auto* s = snapshot_for(c);
    if (!s) return;
    const bool by_oid = sqlite3_value_numeric_type(argv[0]) == SQLITE_INTEGER;
    const auto* r = regclass_of(c, *s, argv[0]);
    if (by_oid) {
        if (r) return result_text(c, regclass_name(*s, *r));
        return result_text(c, std::to_string(sqlite3_value_int64(argv[0])));
    }
    if (r) sqlite3_result_int64(c, r->oid);
}

void regclass_text_fn(sqlite3_context* c, int, sqlite3_value** argv) {
    if (is_null(argv[0])) return sqlite3_result_null(c);
    const auto* s = snapshot_for(c);
    if (!s) return;
    if (const auto* r = regclass_of(c, *s, argv[0])) return result_text(c, regclass_name(*s, *r));
    if (sqlite3_value_numeric_type(argv[0]) == SQLITE_INTEGER)
        result_text(c, std::to_string(sqlite3_value_int64(argv[0])));
}

// OID -> name for regtype, regnamespace.
void regtype_fn(sqlite3_context* c, int, sqlite3_value** argv) {
    if (is_null(argv[0])) return sqlite3_result_null(c);
    if (sqlite3_value_numeric_type(argv[0]) != SQLITE_INTEGER) {
        const auto name = to_lower(arg_text(argv[0]));
        for (const auto& t : types)
            if (name == t.name || name == t.format) return sqlite3_result_int64(c, t.oid);
        const auto msg = fmt::format("type \"{}\" does not exist", name);
        return sqlite3_result_error(c, msg.c_str(), -1);
    }
    const auto* t = pg_type_by_oid(sqlite3_value_int64(argv[0]));
    result_text(c, t ? t->format : std::to_string(sqlite3_value_int64(argv[0])));
}

void regnamespace_fn(sqlite3_context* c, int, sqlite3_value** argv) {
    if (is_null(argv[0])) return sqlite3_result_null(c);
    const auto* s = snapshot_for(c);
    if (!s) return;
    if (sqlite3_value_numeric_type(argv[0]) != SQLITE_INTEGER) {
        if (auto oid = s->schema_oid(arg_text(argv[0]))) return sqlite3_result_int64(c, *oid);
        return sqlite3_result_error(c, "schema does not exist", -1);
    }
    const auto* n = s->schema_name(sqlite3_value_int64(argv[0]));
    result_text(c, n ? *n : std::to_string(sqlite3_value_int64(argv[0])));
}

void table_is_visible(sqlite3_context* c, int, sqlite3_value** argv) {
    const auto* s = snapshot_for(c);
    if (!s) return;
    const auto* r = s->by_oid(sqlite3_value_int64(argv[0]));
    sqlite3_result_int(c, r && s->visible(r->name) == r);
}

void always_true(sqlite3_context* c, int, sqlite3_value**) {
    sqlite3_result_int(c, 1);
}
void always_false(sqlite3_context* c, int, sqlite3_value**) {
    sqlite3_result_int(c, 0);
}
void null_fn(sqlite3_context* c, int, sqlite3_value**) {
    sqlite3_result_null(c);
}

void format_type(sqlite3_context* c, int, sqlite3_value** argv) {
    if (is_null(argv[0])) return sqlite3_result_null(c);
    const auto* t = pg_type_by_oid(sqlite3_value_int64(argv[0]));
    result_text(c, t ? t->format : "???");
}

void userbyid(sqlite3_context* c, int, sqlite3_value** argv) {
    // One role owns everything: the engine's (pg_roles).
    if (is_null(argv[0])) return sqlite3_result_null(c);
    result_text(c, sqlite3_value_int64(argv[0]) == 10
                       ? "sluice"
                       : fmt::format("unknown (OID={})", sqlite3_value_int64(argv[0])));
}

void current_user_fn(sqlite3_context* c, int, sqlite3_value**) {
    result_text(c, reader_of(c)->user());
}
void current_database_fn(sqlite3_context* c, int, sqlite3_value**) {
    result_text(c, reader_of(c)->database());
}
void current_schema_fn(sqlite3_context* c, int, sqlite3_value**) {
    result_text(c, "main");
}
void current_schemas_fn(sqlite3_context* c, int argc, sqlite3_value** argv) {
    const bool implicit = argc > 0 && sqlite3_value_int(argv[0]) != 0;
    result_text(c, implicit ? "{pg_catalog,main}" : "{main}");
}

void encoding_to_char(sqlite3_context* c, int, sqlite3_value** argv) {
    result_text(c, sqlite3_value_int(argv[0]) == 6 ? "UTF8" : "");
}

// The elements of an array in PostgreSQL's text form ({a,b}, "1 2" for int2vector), as
// a JSON array of numbers and strings, for json_each.
std::vector<std::string> array_items(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    std::string_view body = s;
    bool braces = !body.empty() && body.front() == '{';
    if (braces) body = body.substr(1, body.size() >= 2 ? body.size() - 2 : 0);
    const char sep = braces ? ',' : ' ';
    bool quoted = false, any = false;
    for (size_t i = 0; i < body.size(); ++i) {
        char ch = body[i];
        if (ch == '"') {
            quoted = !quoted;
            any = true;
        } else if (ch == '\\' && i + 1 < body.size()) {
            cur += body[++i];
        } else if (ch == sep && !quoted) {
            if (!cur.empty() || any) out.push_back(cur);
            cur.clear();
            any = false;
        } else {
            cur += ch;
        }
    }
    if (!cur.empty() || any) out.push_back(cur);
    return out;
}

bool is_number(const std::string& s) {
    if (s.empty()) return false;
    for (size_t i = 0; i < s.size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>(s[i])) && !(i == 0 && s[i] == '-'))
            return false;
    return s != "-";
}

void array_json(sqlite3_context* c, int, sqlite3_value** argv) {
    if (is_null(argv[0])) return sqlite3_result_null(c);
    std::string out = "[";
    bool first = true;
    for (const auto& item : array_items(arg_text(argv[0]))) {
        out += first ? "" : ",";
        first = false;
        if (is_number(item)) {
            out += item;
        } else {
            out += '"';
            for (char ch : item) {
                if (ch == '"' || ch == '\\') out += '\\';
                out += ch;
            }
            out += '"';
        }
    }
    result_text(c, out + "]");
}

// arr[i] (1-based), NULL past the end.
void array_get(sqlite3_context* c, int, sqlite3_value** argv) {
    if (is_null(argv[0]) || is_null(argv[1])) return sqlite3_result_null(c);
    const auto items = array_items(arg_text(argv[0]));
    const auto i = sqlite3_value_int64(argv[1]);
    if (i < 1 || static_cast<size_t>(i) > items.size()) return sqlite3_result_null(c);
    const auto& item = items[static_cast<size_t>(i - 1)];
    if (is_number(item)) return sqlite3_result_int64(c, std::stoll(item));
    result_text(c, item);
}

void array_upper(sqlite3_context* c, int, sqlite3_value** argv) {
    if (is_null(argv[0])) return sqlite3_result_null(c);
    const auto n = array_items(arg_text(argv[0])).size();
    if (n == 0) return sqlite3_result_null(c);
    sqlite3_result_int64(c, static_cast<int64_t>(n));
}

void array_to_string(sqlite3_context* c, int, sqlite3_value** argv) {
    if (is_null(argv[0])) return sqlite3_result_null(c);
    std::string out;
    bool first = true;
    for (const auto& item : array_items(arg_text(argv[0]))) {
        out += (first ? "" : arg_text(argv[1])) + item;
        first = false;
    }
    result_text(c, out);
}

// pg_array_agg(x): the values as an array's text, {a,b}.
void array_agg_step(sqlite3_context* c, int, sqlite3_value** argv) {
    auto** acc = static_cast<std::string**>(sqlite3_aggregate_context(c, sizeof(std::string*)));
    if (!acc) return sqlite3_result_error_nomem(c);
    if (!*acc) *acc = new std::string;
    std::string item = is_null(argv[0]) ? "NULL" : arg_text(argv[0]);
    **acc += (**acc).empty() ? item : "," + item;
}
void array_agg_final(sqlite3_context* c) {
    auto** acc = static_cast<std::string**>(sqlite3_aggregate_context(c, 0));
    if (!acc || !*acc) return result_text(c, "{}");
    result_text(c, "{" + **acc + "}");
    delete *acc;
}

// The REGEXP operator (X REGEXP Y calls regexp(Y, X)), which PostgreSQL's ~ becomes: an
// ECMAScript regular expression, which agrees with PostgreSQL's for the patterns tools
// send (psql's ^(name)$, [.], *); a leading (?i) makes it case-insensitive (~*).
void regexp_fn(sqlite3_context* c, int, sqlite3_value** argv) {
    if (is_null(argv[0]) || is_null(argv[1])) return sqlite3_result_null(c);
    std::string pattern = arg_text(argv[0]);
    auto flags = std::regex::ECMAScript;
    if (pattern.rfind("(?i)", 0) == 0) {
        pattern = pattern.substr(4);
        flags |= std::regex::icase;
    }
    try {
        std::regex re(pattern, flags);
        sqlite3_result_int(c, std::regex_search(arg_text(argv[1]), re));
    } catch (const std::regex_error& e) {
        const auto msg = fmt::format("invalid regular expression '{}': {}", pattern, e.what());
        sqlite3_result_error(c, msg.c_str(), -1);
    }
}

void get_expr(sqlite3_context* c, int, sqlite3_value** argv) {
    // Defaults and expressions are kept as SQL text already.
    if (is_null(argv[0])) return sqlite3_result_null(c);
    sqlite3_result_value(c, argv[0]);
}

// An index (or its constraint: they share the OID) as PostgreSQL prints it, from the
// index, its table and its key columns ("id, name").
void index_text(sqlite3_context* c, sqlite3_value* oid,
                std::string (*print)(const pg_relation& ix, const pg_relation& t,
                                     const std::string& cols)) {
    const auto* s = snapshot_for(c);
    if (!s) return;
    const auto* ix = s->by_oid(sqlite3_value_int64(oid));
    const auto* t = ix ? s->by_oid(ix->table_oid) : nullptr;
    if (!ix || !t) return sqlite3_result_null(c);
    std::string cols;
    for (int k : ix->keys)
        if (k > 0 && static_cast<size_t>(k) <= t->columns.size())
            cols += (cols.empty() ? "" : ", ") + t->columns[static_cast<size_t>(k - 1)].name;
    result_text(c, print(*ix, *t, cols));
}

void indexdef(sqlite3_context* c, int, sqlite3_value** argv) {
    index_text(c, argv[0], [](const pg_relation& ix, const pg_relation& t, const std::string& cols) {
        return fmt::format("CREATE {}INDEX {} ON {}.{} USING btree ({})",
                           ix.unique ? "UNIQUE " : "", ix.name, t.schema, t.name, cols);
    });
}

void constraintdef(sqlite3_context* c, int, sqlite3_value** argv) {
    index_text(c, argv[0], [](const pg_relation& ix, const pg_relation&, const std::string& cols) {
        return fmt::format("{} ({})", ix.primary ? "PRIMARY KEY" : "UNIQUE", cols);
    });
}

// generate_series(start, stop[, step]): the table-valued function of PostgreSQL (and of
// SQLite's shell, not its library), over integers.
struct series_cursor {
    sqlite3_vtab_cursor base{};
    int64_t value = 0, stop = 0, step = 1;
    int64_t rowid = 0;
};

int series_connect(sqlite3* db, void*, int, const char* const*, sqlite3_vtab** out, char**) {
    int rc = sqlite3_declare_vtab(
        db, "CREATE TABLE x(value INTEGER, start HIDDEN, stop HIDDEN, step HIDDEN)");
    if (rc != SQLITE_OK) return rc;
    *out = static_cast<sqlite3_vtab*>(sqlite3_malloc(sizeof(sqlite3_vtab)));
    if (!*out) return SQLITE_NOMEM;
    std::memset(*out, 0, sizeof(sqlite3_vtab));
    return SQLITE_OK;
}

int series_best_index(sqlite3_vtab*, sqlite3_index_info* info) {
    // Arguments are the hidden columns 1..3, given in order; start and stop are needed.
    int have = 0;
    for (int i = 0; i < info->nConstraint; ++i) {
        const auto& c = info->aConstraint[i];
        if (c.iColumn < 1 || c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
        if (!c.usable) return SQLITE_CONSTRAINT;
        info->aConstraintUsage[i].argvIndex = c.iColumn;
        info->aConstraintUsage[i].omit = 1;
        have |= 1 << (c.iColumn - 1);
    }
    if ((have & 3) != 3) return SQLITE_CONSTRAINT;
    info->idxNum = have;
    info->estimatedCost = 10;
    return SQLITE_OK;
}

int series_filter(sqlite3_vtab_cursor* cur, int idx, const char*, int argc, sqlite3_value** argv) {
    auto* c = reinterpret_cast<series_cursor*>(cur);
    c->value = sqlite3_value_int64(argv[0]);
    c->stop = sqlite3_value_int64(argv[1]);
    c->step = (idx & 4) && argc > 2 ? sqlite3_value_int64(argv[2]) : 1;
    if (c->step == 0) c->step = 1;
    c->rowid = 1;
    return SQLITE_OK;
}

const sqlite3_module series_module = {
    .iVersion = 0,
    .xCreate = nullptr,  // eponymous only
    .xConnect = series_connect,
    .xBestIndex = series_best_index,
    .xDisconnect = [](sqlite3_vtab* t) { sqlite3_free(t); return SQLITE_OK; },
    .xDestroy = nullptr,
    .xOpen =
        [](sqlite3_vtab*, sqlite3_vtab_cursor** out) {
            *out = &(new series_cursor)->base;
            return SQLITE_OK;
        },
    .xClose =
        [](sqlite3_vtab_cursor* c) {
            delete reinterpret_cast<series_cursor*>(c);
            return SQLITE_OK;
        },
    .xFilter = series_filter,
    .xNext =
        [](sqlite3_vtab_cursor* cur) {
            auto* c = reinterpret_cast<series_cursor*>(cur);
            c->value += c->step;
            ++c->rowid;
            return SQLITE_OK;
        },
    .xEof =
        [](sqlite3_vtab_cursor* cur) {
            auto* c = reinterpret_cast<series_cursor*>(cur);
            return static_cast<int>(c->step > 0 ? c->value > c->stop : c->value < c->stop);
        },
    .xColumn =
        [](sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int) {
            sqlite3_result_int64(ctx, reinterpret_cast<series_cursor*>(cur)->value);
            return SQLITE_OK;
        },
    .xRowid =
        [](sqlite3_vtab_cursor* cur, sqlite3_int64* out) {
            *out = reinterpret_cast<series_cursor*>(cur)->rowid;
            return SQLITE_OK;
        }};

// One number an engine query answers (0 when it answers NULL or nothing); nullopt, with
// the error set on `c`, when it fails.
std::optional<int64_t> count_of(sqlite3_context* c, const char* sql,
                                std::initializer_list<std::string> binds) {
    sqlite3* db = sqlite3_context_db_handle(c);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
        sqlite3_result_error(c, sqlite3_errmsg(db), -1);
        return std::nullopt;
    }
    int i = 0;
    for (const auto& b : binds)
        sqlite3_bind_text(st, ++i, b.data(), static_cast<int>(b.size()), SQLITE_TRANSIENT);
    int64_t n = 0;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        sqlite3_result_error(c, sqlite3_errmsg(db), -1);
        return std::nullopt;
    }
    return n;
}

// The bytes a relation takes: a topic's segment files (system.partitions), the pages of
// a table or index in its schema's file (SQLite's dbstat); 0 for the engine's in-memory
// tables and for a primary key that is the rowid.
std::optional<int64_t> relation_size(sqlite3_context* c, const pg_relation& r) {
    if (r.schema == "kafka_topics")
        return count_of(c, "SELECT sum(bytes) FROM system.partitions WHERE topic = ?1", {r.name});
    if (r.schema == "system" || r.schema == "pg_catalog" || r.schema == "information_schema")
        return 0;
    if (r.sqlite_name.empty()) return 0;
    return count_of(c, "SELECT sum(pgsize) FROM dbstat(?1) WHERE name = ?2",
                    {r.schema, r.sqlite_name});
}

void table_size(sqlite3_context* c, int, sqlite3_value** argv) {
    if (is_null(argv[0])) return sqlite3_result_null(c);
    const auto* s = snapshot_for(c);
    if (!s) return;
    const auto* r = s->by_oid(sqlite3_value_int64(argv[0]));
    if (!r) return sqlite3_result_null(c);
    if (auto n = relation_size(c, *r)) sqlite3_result_int64(c, *n);
}

void database_size(sqlite3_context* c, int, sqlite3_value**) {
    const auto* s = snapshot_for(c);
    if (!s) return;
    int64_t total = 0;
    for (const auto& r : s->relations) {
        auto n = relation_size(c, r);
        if (!n) return;
        total += *n;
    }
    sqlite3_result_int64(c, total);
}

// PostgreSQL's rounding and units: bytes below 10 kB, then kB, MB, GB, TB, halves
// rounded away from zero.
void size_pretty(sqlite3_context* c, int, sqlite3_value** argv) {
    if (is_null(argv[0])) return sqlite3_result_null(c);
    int64_t size = sqlite3_value_int64(argv[0]);
    constexpr int64_t limit = 10 * 1024, limit2 = limit * 2 - 1;
    auto half_rounded = [](int64_t x) { return (x + (x < 0 ? -1 : 1)) / 2; };
    if (std::abs(size) < limit) return result_text(c, fmt::format("{} bytes", size));
    size /= 512;  // one extra bit for rounding
    for (const char* unit : {"kB", "MB", "GB"}) {
        if (std::abs(size) < limit2) return result_text(c, fmt::format("{} {}", half_rounded(size), unit));
        size /= 1024;
    }
    result_text(c, fmt::format("{} TB", half_rounded(size)));
}

// A view's query, without its CREATE VIEW name AS.
void viewdef(sqlite3_context* c, int, sqlite3_value** argv) {
    const auto* s = snapshot_for(c);
    if (!s) return;
    const auto* r = s->by_oid(sqlite3_value_int64(argv[0]));
    if (!r || r->kind != 'v') return sqlite3_result_null(c);
    static const std::regex head(R"(^\s*CREATE\s+(TEMP\w*\s+)?VIEW\s+.*?\s+AS\s+)",
                                 std::regex::icase);
    std::smatch m;
    if (std::regex_search(r->sql, m, head)) return result_text(c, m.suffix().str());
    result_text(c, r->sql);
}

struct fn {
    const char* name;
    int args;  // -1: any number
    void (*call)(sqlite3_context*, int, sqlite3_value**);
};

const fn functions[] = {
    {"pg_regclass", 1, regclass_fn},
    {"pg_regclass_text", 1, regclass_text_fn},
    {"pg_regtype", 1, regtype_fn},
    {"pg_regnamespace", 1, regnamespace_fn},
    {"pg_table_is_visible", 1, table_is_visible},
    {"pg_type_is_visible", 1, always_true},
    {"pg_function_is_visible", 1, always_true},
    {"pg_relation_is_publishable", 1, always_false},
    {"format_type", 2, format_type},
    {"pg_get_userbyid", 1, userbyid},
    {"pg_encoding_to_char", 1, encoding_to_char},
    {"current_user", 0, current_user_fn},
    {"session_user", 0, current_user_fn},
    {"current_database", 0, current_database_fn},
    {"current_schema", 0, current_schema_fn},
    {"current_schemas", 1, current_schemas_fn},
    {"obj_description", -1, null_fn},
    {"col_description", 2, null_fn},
    {"shobj_description", 2, null_fn},
    {"pg_get_expr", -1, get_expr},
    {"pg_get_indexdef", -1, indexdef},
    {"pg_get_constraintdef", -1, constraintdef},
    {"pg_get_statisticsobjdef_columns", 1, null_fn},
    {"pg_get_serial_sequence", 2, null_fn},
    {"pg_get_function_result", 1, null_fn},
    {"pg_get_function_arguments", 1, null_fn},
    {"pg_array_json", 1, array_json},
    {"pg_array_get", 2, array_get},
    {"array_upper", 2, array_upper},
    {"array_length", 2, array_upper},
    {"array_to_string", 2, array_to_string},
    {"regexp", 2, regexp_fn},
    // Any user may connect to the database; privileges are the broker's policies.
    {"has_database_privilege", -1, always_true},
    {"pg_has_role", -1, always_true},
    {"pg_table_size", 1, table_size},
    {"pg_relation_size", -1, table_size},
    {"pg_total_relation_size", 1, table_size},
    {"pg_database_size", 1, database_size},
    {"pg_size_pretty", 1, size_pretty},
    {"pg_get_viewdef", -1, viewdef},
};

}  // namespace

const std::vector<pg_type_info>& pg_types() {
    return types;
}

const pg_type_info* pg_type_by_oid(int64_t oid) {
    for (const auto& t : types)
        if (t.oid == oid) return &t;
    return nullptr;
}

int64_t pg_oid_for_decl(std::string_view decl) {
    const auto u = to_upper(decl);
    auto has = [&](const char* s) { return u.find(s) != std::string::npos; };
    // Exact names only for these: a column declared TIMESTAMP or DATE in SQLite often
    // holds numbers, which a driver could not read as a timestamp.
    if (u == "TIMESTAMPTZ" || u == "TIMESTAMP WITH TIME ZONE") return 1184;
    if (u == "JSON" || u == "JSONB") return 114;
    // smallint[] by its catalog name (pg_constraint.conkey), held as its text form {1,2}.
    if (u == "_INT2") return 1005;
    if (has("INT")) return 20;
    if (has("CHAR") || has("CLOB") || has("TEXT")) return 25;
    if (has("BLOB") || u == "BYTEA") return 17;
    if (has("REAL") || has("FLOA") || has("DOUB")) return 701;
    if (has("BOOL")) return 16;
    return 0;
}

const pg_type_info& pg_type_for_decl(std::string_view decl) {
    const int64_t oid = pg_oid_for_decl(decl);
    return *pg_type_by_oid(oid == 0 ? 25 : oid);
}

outcome<bool> register_pg_functions(sqlite3* db, pg_catalog_reader* reader) {
    for (const auto& f : functions) {
        int rc = sqlite3_create_function_v2(db, f.name, f.args, SQLITE_UTF8, reader, f.call,
                                            nullptr, nullptr, nullptr);
        if (rc != SQLITE_OK)
            return query_error{failure::internal, fmt::format("{}: {}", f.name, sqlite3_errstr(rc))};
    }
    if (sqlite3_create_module(db, "generate_series", &series_module, nullptr) != SQLITE_OK)
        return query_error{failure::internal,
                           fmt::format("generate_series: {}", sqlite3_errmsg(db))};
    int rc = sqlite3_create_function_v2(db, "pg_array_agg", 1, SQLITE_UTF8, nullptr, nullptr,
                                        array_agg_step, array_agg_final, nullptr);
    if (rc != SQLITE_OK)
        return query_error{failure::internal, fmt::format("pg_array_agg: {}", sqlite3_errstr(rc))};
    return true;
}

}  // namespace sluice::sql
