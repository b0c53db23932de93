#include "expansion/target.h"

#include <fmt/format.h>

#include <map>

#include "common/logging.h"
#include "metrics/registry.h"
#include "sql/json_text.h"
#include "sql/schemas.h"
#include "sql/sql_text.h"

namespace sluice::expansion {
namespace {

using sql::quote_ident;

// How long one attempt to write waits for a user's statement on the same schema file;
// the expander then serves other expansions and tries again (service.cc).
constexpr int busy_timeout_ms = 200;

// SQLite's column affinity from a declared type (its rules, in order).
enum class affinity { integer, text, blob, real, numeric };
affinity affinity_of(std::string_view decl) {
    const auto u = sql::to_lower(decl);
    auto has = [&](const char* s) { return u.find(s) != std::string::npos; };
    if (has("int")) return affinity::integer;
    if (has("char") || has("clob") || has("text")) return affinity::text;
    if (has("blob") || u.empty()) return affinity::blob;
    if (has("real") || has("floa") || has("doub")) return affinity::real;
    return affinity::numeric;
}

// Whether a column declared `theirs` keeps the values of a column we declare `ours`
// unchanged. A column without a type (blob affinity) keeps anything.
bool compatible(const char* ours, std::string_view theirs) {
    const affinity a = affinity_of(ours), b = affinity_of(theirs);
    if (b == affinity::blob) return true;
    switch (a) {
        case affinity::integer:
        case affinity::numeric:  // BOOLEAN
            return b == affinity::integer || b == affinity::numeric;
        case affinity::real:
            return b == affinity::real || b == affinity::numeric;
        case affinity::text:
            return b == affinity::text;
        case affinity::blob:
            return false;
    }
    return false;
}

}  // namespace

result<int64_t> count_rows(const std::filesystem::path& file, const std::string& table) {
    sqlite3* db = nullptr;
    sqlite3_stmt* st = nullptr;
    int rc =
        sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, busy_timeout_ms);
        rc = sqlite3_prepare_v2(db, ("SELECT count(*) FROM main." + quote_ident(table)).c_str(), -1,
                                &st, nullptr);
    }
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    const int64_t rows = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    error e{errc::io_error, fmt::format("counting the rows of {}: {}", table,
                                        db ? sqlite3_errmsg(db) : sqlite3_errstr(rc))};
    sqlite3_finalize(st);
    sqlite3_close_v2(db);
    if (rc != SQLITE_ROW) return e;
    return rows;
}

error target_table::fail(const std::string& what) const {
    // Busy: a user's transaction on the same file held the lock past the busy timeout.
    const int rc = sqlite3_errcode(_db) & 0xff;
    return {rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? errc::timed_out : errc::io_error,
            fmt::format("{}: {}: {}", _qualified, what, sqlite3_errmsg(_db))};
}

result<void> target_table::exec(const std::string& sql) {
    char* msg = nullptr;
    if (const int rc = sqlite3_exec(_db, sql.c_str(), nullptr, nullptr, &msg); rc != SQLITE_OK) {
        const bool busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
        error e{busy ? errc::timed_out : errc::io_error,
                fmt::format("{}: {}", _qualified, msg ? msg : sqlite3_errmsg(_db))};
        sqlite3_free(msg);
        return e;
    }
    return {};
}

result<std::unique_ptr<target_table>> target_table::open(const std::filesystem::path& file,
                                                         const std::string& schema,
                                                         const std::string& table, const layout& l,
                                                         bool create, checkpointer* checkpoints) {
    std::unique_ptr<target_table> t(new target_table);
    t->_schema = schema;
    t->_table = table;
    t->_qualified = schema + "." + table;
    t->_key = sql::to_lower(table);
    t->_layout = l;
    if (sqlite3_open_v2(file.c_str(), &t->_db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK)
        return t->fail("cannot open " + file.string());
    sqlite3_extended_result_codes(t->_db, 1);
    sqlite3_busy_timeout(t->_db, busy_timeout_ms);
    // The -wal and -shm files stay when this connection is the last to close, so that SQL
    // sessions (and this table, after a restart) open the file on a full disk
    // (docs/operations.md, "Full disk").
    int keep = 1;
    (void)sqlite3_file_control(t->_db, "main", SQLITE_FCNTL_PERSIST_WAL, &keep);
    // NORMAL: a commit is not synced. The partition log is the record: after a power
    // loss the progress falls back with the rows it covers, and catching up re-expands
    // them from the log.
    if (auto r = t->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                         "PRAGMA cache_size=-16384");
        !r)
        return r.err();
    t->_file = file.string();
    if (checkpoints) {
        t->_checkpoints = checkpoints;
        if (auto r = t->exec("PRAGMA wal_autocheckpoint=0"); !r) return r.err();
        sqlite3_wal_hook(
            t->_db,
            [](void* self, sqlite3*, const char*, int pages) {
                auto* me = static_cast<target_table*>(self);
                if (pages >= checkpointer::wal_pages) me->_checkpoints->request(me->_file);
                return SQLITE_OK;
            },
            t.get());
    }
    if (auto r = t->exec(fmt::format(
            "CREATE TABLE IF NOT EXISTS {0} (key TEXT PRIMARY KEY, value TEXT NOT NULL) "
            "WITHOUT ROWID; "
            "INSERT OR IGNORE INTO {0} VALUES ('expansion_progress_format', '{1}'); "
            "CREATE TABLE IF NOT EXISTS {2} (target TEXT NOT NULL, partition INTEGER NOT NULL, "
            "next_offset INTEGER NOT NULL, backfill_start INTEGER NOT NULL, "
            "backfill_next INTEGER NOT NULL, backfill_end INTEGER NOT NULL, "
            "PRIMARY KEY (target, partition)) WITHOUT ROWID",
            meta_table, progress_format_version, progress_table));
        !r)
        return r.err();
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(
        t->_db,
        fmt::format("SELECT value FROM {} WHERE key = 'expansion_progress_format'", meta_table)
            .c_str(),
        -1, &st, nullptr);
    const int64_t version = st && sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (version != progress_format_version)
        return error{errc::invalid_argument,
                     fmt::format("{}: expansion progress format {} is not the one this build "
                                 "knows ({})",
                                 file.string(), version, progress_format_version)};
    if (auto r = t->ensure_table(l, create); !r) return r.err();
    if (auto r = t->ensure_position_index(); !r) return r.err();

    std::string cols;
    for (size_t i = 0; i < l.columns().size(); ++i)
        cols += (i ? ", " : "") + quote_ident(l.columns()[i].name);
    t->_insert_head = fmt::format("INSERT INTO main.{} ({}) VALUES ", quote_ident(table), cols);
    if (sqlite3_prepare_v3(t->_db,
                           fmt::format("INSERT OR REPLACE INTO {} (target, partition, next_offset, "
                                       "backfill_start, backfill_next, backfill_end) VALUES (?1, "
                                       "?2, ?3, ?4, ?5, ?6)",
                                       progress_table)
                               .c_str(),
                           -1, SQLITE_PREPARE_PERSISTENT, &t->_progress, nullptr) != SQLITE_OK)
        return t->fail("preparing the progress update");
    return t;
}

target_table::~target_table() {
    if (_in_txn) rollback();
    for (auto& [_, st] : _inserts) sqlite3_finalize(st);
    sqlite3_finalize(_progress);
    sqlite3_close_v2(_db);
}

result<void> target_table::ensure_table(const layout& l, bool create) {
    struct existing {
        std::string name, type;
        bool not_null = false, has_default = false, rowid_alias = false, generated = false;
    };
    std::map<std::string, existing> have;  // by lower-case name
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(_db,
                           fmt::format("SELECT name, type, \"notnull\", dflt_value, pk, hidden "
                                       "FROM pragma_table_xinfo({}, 'main')",
                                       sql::quote_literal(_table))
                               .c_str(),
                           -1, &st, nullptr) != SQLITE_OK)
        return fail("reading the table's columns");
    int pk_columns = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        existing c;
        c.name = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        const auto* type = sqlite3_column_text(st, 1);
        c.type = type ? reinterpret_cast<const char*>(type) : "";
        c.not_null = sqlite3_column_int(st, 2) != 0;
        c.has_default = sqlite3_column_type(st, 3) != SQLITE_NULL;
        c.rowid_alias = sqlite3_column_int(st, 4) != 0 && sql::to_lower(c.type) == "integer";
        pk_columns += sqlite3_column_int(st, 4) != 0;
        c.generated = sqlite3_column_int(st, 5) >= 2;
        have[sql::to_lower(c.name)] = std::move(c);
    }
    sqlite3_finalize(st);
    if (have.empty()) {
        if (!create)
            return error{errc::not_found, fmt::format("table {} does not exist", _qualified)};
        std::string ddl = "CREATE TABLE main." + quote_ident(_table) + " (";
        for (size_t i = 0; i < l.columns().size(); ++i) {
            const auto& c = l.columns()[i];
            const bool nullable = l.expanded(i) || (l.copy_source() && i == l.source_column()) ||
                                  (l.key() && i == l.key_column());
            ddl += fmt::format("{}{} {}{}", i ? ", " : "", quote_ident(c.name), c.decl_type,
                               nullable ? "" : " NOT NULL");
        }
        ddl += ")";
        if (auto r = exec(ddl); !r) return r;
        log_info("expansion", "created table {}", _qualified);
        return {};
    }
    if (!create) return {};
    for (size_t i = 0; i < l.columns().size(); ++i) {
        const auto& c = l.columns()[i];
        auto it = have.find(sql::to_lower(c.name));
        if (it == have.end())
            return error{errc::invalid_argument,
                         fmt::format("table {} exists but has no column {} ({})", _qualified,
                                     c.name, c.decl_type)};
        if (it->second.generated)
            return error{errc::invalid_argument,
                         fmt::format("table {}: column {} is generated, so rows cannot set it",
                                     _qualified, it->second.name)};
        if (!compatible(c.decl_type, it->second.type))
            return error{
                errc::invalid_argument,
                fmt::format("table {}: column {} is declared {}, which cannot hold the "
                            "{} values it would get ({})",
                            _qualified, it->second.name,
                            it->second.type.empty() ? "without a type" : it->second.type,
                            c.decl_type, l.expanded(i) ? type_name(c.type) : "bookkeeping")};
        have.erase(it);
    }
    for (const auto& [_, c] : have) {
        if (c.generated || c.has_default || !c.not_null || (c.rowid_alias && pk_columns == 1))
            continue;
        return error{errc::invalid_argument,
                     fmt::format("table {}: column {} is NOT NULL without a default, and the "
                                 "expansion does not fill it",
                                 _qualified, c.name)};
    }
    return {};
}

result<void> target_table::ensure_position_index() {
    // Questions such as "which events have no row" look rows up by their place in the
    // topic: without an index each lookup scans the table. Targets made before the
    // index existed get it here, when they are opened.
    const std::string index = "_sluice_position_" + _table;
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(_db, "SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = ?1", -1,
                       &st, nullptr);
    sqlite3_bind_text(st, 1, index.data(), static_cast<int>(index.size()), SQLITE_STATIC);
    const bool have = st && sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (have) return {};
    // The planner also learns, as ANALYZE would tell it, that a partition holds many
    // rows and a (partition, offset) one: then a lookup by _offset alone seeks each
    // partition of the index (a skip-scan) instead of scanning the table. The figures
    // are only proportions; a user's ANALYZE replaces them with measured ones.
    // 1,000,000 rows, 100,000 per partition, 1 per position.
    if (auto r = exec(
            fmt::format("BEGIN; CREATE INDEX IF NOT EXISTS main.{0} ON {1} (_partition, _offset); "
                        "ANALYZE main.sqlite_schema; "
                        "DELETE FROM main.sqlite_stat1 WHERE idx = {2}; "
                        "INSERT INTO main.sqlite_stat1 (tbl, idx, stat) VALUES ({3}, {2}, "
                        "'1000000 100000 1'); COMMIT",
                        quote_ident(index), quote_ident(_table), sql::quote_literal(index),
                        sql::quote_literal(_table)));
        !r) {
        sqlite3_exec(_db, "ROLLBACK", nullptr, nullptr, nullptr);
        return r;
    }
    log_info("expansion", "{}: indexed by (_partition, _offset)", _qualified);
    return {};
}

result<progress_map> target_table::load_progress() {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(
            _db,
            fmt::format("SELECT partition, next_offset, backfill_start, backfill_next, "
                        "backfill_end "
                        "FROM {} WHERE target = ?1",
                        progress_table)
                .c_str(),
            -1, &st, nullptr) != SQLITE_OK)
        return fail("reading progress");
    sqlite3_bind_text(st, 1, _key.data(), static_cast<int>(_key.size()), SQLITE_STATIC);
    progress_map out;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        partition_progress p;
        p.next = sqlite3_column_int64(st, 1);
        p.backfill_start = sqlite3_column_int64(st, 2);
        p.backfill_next = sqlite3_column_int64(st, 3);
        p.backfill_end = sqlite3_column_int64(st, 4);
        out[static_cast<int32_t>(sqlite3_column_int64(st, 0))] = p;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return fail("reading progress");
    return out;
}

result<void> target_table::begin() {
    if (auto r = exec("BEGIN IMMEDIATE"); !r) return r;
    _in_txn = true;
    return {};
}

result<void> target_table::commit() {
    if (auto r = flush(); !r) {
        rollback();
        return r;
    }
    if (auto r = exec("COMMIT"); !r) {
        rollback();
        return r;
    }
    _in_txn = false;
    return {};
}

void target_table::rollback() {
    _held.clear();
    _arena.clear();
    _held_rows = 0;
    sqlite3_exec(_db, "ROLLBACK", nullptr, nullptr, nullptr);
    _in_txn = false;
}

namespace {

struct error_counters {
    metrics::counter& parse;
    metrics::counter& types;
};

const error_counters& expansion_errors() {
    static const error_counters c{
        metrics::global().counter_of(
            "sluice_expansion_parse_errors_total",
            "Events an expansion could not parse (rows with _parse_error set)"),
        metrics::global().counter_of(
            "sluice_expansion_type_errors_total",
            "Fields an expansion found of the wrong type (the rows' _type_errors, added up)"),
    };
    return c;
}

}  // namespace

void declare_metrics() {
    (void)expansion_errors();
}

// Events expanded with an error flagged in their row (docs/operations.md). A transaction
// rolled back and written again counts its rows again.
void count_expansion_errors(bool parse_error, int64_t type_errors) {
    if (parse_error) expansion_errors().parse.inc();
    if (type_errors > 0) expansion_errors().types.inc(static_cast<uint64_t>(type_errors));
}

void target_table::hold_bytes(cell::kind k, std::string_view bytes) {
    _held.push_back({k, 0, 0, _arena.size(), bytes.size()});
    _arena.append(bytes);
}

result<void> target_table::insert(int32_t partition, offset_t offset, timestamp_ms broker_time,
                                  const expanded_row& row, std::optional<bytes_view> source,
                                  std::optional<bytes_view> key) {
    auto integer = [&](int64_t v) { _held.push_back({cell::kind::integer, v, 0, 0, 0}); };
    integer(partition);
    integer(offset);
    integer(broker_time);
    for (const auto& c : row.fields) {
        if (c.k == cell::kind::text || c.k == cell::kind::blob)
            hold_bytes(c.k, c.s);
        else
            _held.push_back({c.k, c.i, c.d, 0, 0});
    }
    // A key that is not text counts as one more type error when _key is its text.
    const std::string_view key_bytes =
        key ? std::string_view(reinterpret_cast<const char*>(key->data()), key->size())
            : std::string_view();
    const bool key_not_text =
        key && _layout.key() == field_type::string && !sql::is_valid_utf8(key_bytes);
    integer(row.missing);
    integer(row.excess);
    integer(row.type_errors + (key_not_text ? 1 : 0));
    integer(row.parse_error ? 1 : 0);
    count_expansion_errors(row.parse_error, row.type_errors + (key_not_text ? 1 : 0));
    if (_layout.copy_source()) {
        if (!source) {
            _held.push_back({cell::kind::null, 0, 0, 0, 0});
        } else {
            const std::string_view bytes(reinterpret_cast<const char*>(source->data()),
                                         source->size());
            // Text when it is text (JSON, or most things that fail to be), bytes otherwise.
            hold_bytes(sql::is_valid_utf8(bytes) ? cell::kind::text : cell::kind::blob, bytes);
        }
    }
    if (_layout.key()) {
        if (!key || key_not_text)
            _held.push_back({cell::kind::null, 0, 0, 0, 0});
        else
            hold_bytes(_layout.key() == field_type::string ? cell::kind::text : cell::kind::blob,
                       key_bytes);
    }
    if (++_held_rows == rows_per_insert) return flush();
    return {};
}

result<sqlite3_stmt*> target_table::insert_statement(size_t rows) {
    auto& st = _inserts[rows];
    if (st) return st;
    std::string row = "(";
    for (size_t i = 0; i < _layout.columns().size(); ++i) row += i ? ",?" : "?";
    row += ')';
    std::string sql = _insert_head;
    for (size_t r = 0; r < rows; ++r) sql += (r ? "," : "") + row;
    if (sqlite3_prepare_v3(_db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr) !=
        SQLITE_OK)
        return fail("preparing the insert");
    return st;
}

result<void> target_table::flush() {
    if (_held_rows == 0) return {};
    auto st_or = insert_statement(_held_rows);
    if (!st_or) return st_or.err();
    sqlite3_stmt* st = *st_or;
    const char* arena = _arena.data();
    int i = 1;
    for (const auto& c : _held) {
        switch (c.k) {
            case cell::kind::null:
                sqlite3_bind_null(st, i);
                break;
            case cell::kind::integer:
                sqlite3_bind_int64(st, i, c.i);
                break;
            case cell::kind::real:
                sqlite3_bind_double(st, i, c.d);
                break;
            case cell::kind::text:
                sqlite3_bind_text64(st, i, arena + c.at, c.len, SQLITE_STATIC, SQLITE_UTF8);
                break;
            case cell::kind::blob:
                sqlite3_bind_blob64(st, i, arena + c.at, c.len, SQLITE_STATIC);
                break;
        }
        ++i;
    }
    const int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    const size_t rows = _held_rows;
    _held.clear();
    _arena.clear();
    _held_rows = 0;
    if (rc != SQLITE_DONE) return fail(fmt::format("inserting {} rows", rows));
    return {};
}

result<void> target_table::save_progress(int32_t partition, const partition_progress& p) {
    sqlite3_stmt* st = _progress;
    sqlite3_bind_text(st, 1, _key.data(), static_cast<int>(_key.size()), SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, partition);
    sqlite3_bind_int64(st, 3, p.next);
    sqlite3_bind_int64(st, 4, p.backfill_start);
    sqlite3_bind_int64(st, 5, p.backfill_next);
    sqlite3_bind_int64(st, 6, p.backfill_end);
    const int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return fail("saving progress");
    return {};
}

result<int64_t> target_table::delete_from(int32_t partition, offset_t from) {
    if (auto r = exec(fmt::format("DELETE FROM main.{} WHERE _partition = {} AND _offset >= {}",
                                  quote_ident(_table), partition, from));
        !r)
        return r.err();
    return static_cast<int64_t>(sqlite3_changes64(_db));
}

result<void> target_table::reset_progress(const progress_map& progress) {
    return in_transaction([&]() -> result<void> {
        if (auto r = exec(fmt::format("DELETE FROM {} WHERE target = {}", progress_table,
                                      sql::quote_literal(_key)));
            !r)
            return r;
        for (const auto& [p, pp] : progress)
            if (auto d = delete_from(p, pp.first_written()); !d) return d.err();
        for (const auto& [p, pp] : progress)
            if (auto r = save_progress(p, pp); !r) return r;
        return {};
    });
}

result<void> target_table::remove(bool drop_table) {
    return in_transaction([&]() -> result<void> {
        if (auto r = exec(fmt::format("DELETE FROM {} WHERE target = {}", progress_table,
                                      sql::quote_literal(_key)));
            !r)
            return r;
        if (drop_table) return exec("DROP TABLE IF EXISTS main." + quote_ident(_table));
        return {};
    });
}

result<std::unique_ptr<target_store>> sqlite_targets::open(const std::string& schema,
                                                           const std::string& table,
                                                           const layout& l, bool create) {
    if (create && schema != "main") {
        auto made = _schemas->create(schema);
        if (!made) return error{errc::io_error, made.error().message};
        if (*made) log_info("expansion", "created schema {} for {}.{}", schema, schema, table);
    }
    auto t = target_table::open(_schemas->path_of(schema), schema, table, l, create, _checkpoints);
    if (!t) return t.err();
    return std::unique_ptr<target_store>(std::move(*t));
}

result<int64_t> sqlite_targets::count_rows(const std::string& schema, const std::string& table) {
    return expansion::count_rows(_schemas->path_of(schema), table);
}

}  // namespace sluice::expansion
