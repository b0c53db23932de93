#include "sql/sqlite_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "catalog/catalog.h"
#include "common/logging.h"
#include "sql/functions.h"
#include "sql/pg_catalog.h"
#include "sql/row_table.h"
#include "sql/schema_commands.h"
#include "sql/schemas.h"
#include "sql/sql_metrics.h"
#include "sql/sql_text.h"
#include "sql/sqlite_statement.h"
#include "sql/system_tables.h"
#include "sql/topic_names.h"
#include "sql/topic_table.h"

namespace sluice::sql {

namespace {

// Whether a database file is in WAL mode already: bytes 18 and 19 of its header (the
// file format's read and write versions) are 2 (SQLite's "Database File Format", 1.3).
bool wal_on_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    char v[2] = {};
    return f.seekg(18) && f.read(v, 2) && v[0] == 2 && v[1] == 2;
}

// How often SQLite calls the progress handler, in virtual machine instructions: a few
// microseconds of work, so a cancel or the time limit takes effect within milliseconds
// while the check itself stays a small fraction of a scan's cost.
constexpr int progress_interval_ops = 1000;
// How often a front end's interrupt check (a poll() on its socket) runs at most.
constexpr auto interrupt_check_period = std::chrono::milliseconds(5);
// How long a write waits for another session's lock on a user database.
constexpr int busy_timeout_ms = 5000;

bool is_engine_schema(const char* db_name) {
    if (!db_name) return false;
    for (const char* s : {"kafka_topics", "system", "pg_catalog", "information_schema"})
        if (std::strcmp(db_name, s) == 0) return true;
    return false;
}

// PRAGMAs a user may run: the ones that only read. A PRAGMA given a value is refused
// unless its argument names a table or schema object to read about.
bool pragma_allowed(const char* name, const char* arg) {
    static const char* const with_arg[] = {
        "table_info",       "table_xinfo",       "index_list",      "index_info", "index_xinfo",
        "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check"};
    static const char* const read_only[] = {
        // Not database_list (nor temp_store_directory, data_store_directory): they show
        // the server's file paths. pragma_table_list names the schemas.
        "table_list",     "function_list",   "module_list",   "pragma_list",
        "collation_list", "compile_options", "data_version",  "page_count",  "page_size",
        "user_version",   "schema_version",  "journal_mode",  "encoding",    "freelist_count"};
    for (const char* p : with_arg)
        if (sqlite3_stricmp(name, p) == 0) return true;
    if (arg) return false;
    for (const char* p : read_only)
        if (sqlite3_stricmp(name, p) == 0) return true;
    return false;
}

std::string read_only_table(std::string_view table) {
    return fmt::format(
        "{} is read-only: topics are written by Kafka producers, and system "
        "tables by the broker",
        table);
}

std::string schema_owned(std::string_view schema) {
    return fmt::format(
        "schema {} belongs to the engine: create tables in main or in a schema "
        "of your own (CREATE SCHEMA)",
        schema);
}

}  // namespace

outcome<std::unique_ptr<sqlite_session>> sqlite_session::open(session_sources src) {
    std::unique_ptr<sqlite_session> s(new sqlite_session(src));
    if (auto r = s->setup(); !r) return r.error();
    return s;
}

sqlite_session::sqlite_session(session_sources src)
    : _src(src), _account(budget_account::acquire()), _limits(src.opts->defaults) {
    _ctx.set_access(src.opts->gate, {});
}

void sqlite_session::set_principal(security::principal p) {
    _ctx.set_access(_src.opts->gate, std::move(p));
    if (_db) install_authorizer();
}

void sqlite_session::install_authorizer() {
    // Setting it also expires every prepared statement: SQLite prepares each again,
    // asking the authorizer, before its next run.
    _access_gen = _ctx.access_generation();
    sqlite3_set_authorizer(
        _db,
        [](void* p, int action, const char* a1, const char* a2, const char* db_name, const char*) {
            return static_cast<sqlite_session*>(p)->authorize(action, a1, a2, db_name);
        },
        this);
}

void sqlite_session::refresh_authorization() {
    if (_ctx.access_generation() != _access_gen) install_authorizer();
}

sqlite_session::~sqlite_session() {
    _topics.reset();
    if (_db) sqlite3_close_v2(_db);  // before _pg, which its functions use
    budget_account::release(_account);
}

std::string hide_paths(std::string msg, std::vector<std::string> paths) {
    static constexpr std::string_view placeholder = "<data-dir>";
    std::sort(paths.begin(), paths.end(),
              [](const auto& a, const auto& b) { return a.size() > b.size(); });
    for (const auto& p : paths) {
        if (p.empty() || p == "." || p == "/") continue;
        // A relative path ("data", as `--data-dir data` gives it) is a path only where a
        // separator follows: elsewhere it is a word of the message ("database").
        const bool relative = p.front() != '/';
        for (size_t at = msg.find(p); at != std::string::npos; at = msg.find(p, at)) {
            const size_t after = at + p.size();
            const bool starts_word = at == 0 || msg[at - 1] == ' ' || msg[at - 1] == '\'' ||
                                     msg[at - 1] == '"' || msg[at - 1] == '(';
            if (relative && (!starts_word || after >= msg.size() || msg[after] != '/')) {
                at = after;
                continue;
            }
            msg.replace(at, p.size(), placeholder);
            at += placeholder.size();  // never into the placeholder itself
        }
    }
    return msg;
}

std::string sqlite_session::without_paths(std::string msg) const {
    // SQL users see no file paths of the server (docs/sql.md): the data directory, in
    // each spelling the engine may have used, becomes a placeholder.
    std::vector<std::string> paths{_src.opts->data_dir.string(),
                                   _src.schemas->main_path().parent_path().string()};
    std::error_code ec;
    if (auto abs = std::filesystem::absolute(_src.opts->data_dir, ec); !ec)
        paths.push_back(abs.string());
    if (auto canon = std::filesystem::weakly_canonical(_src.opts->data_dir, ec); !ec)
        paths.push_back(canon.string());
    return hide_paths(std::move(msg), std::move(paths));
}

outcome<bool> sqlite_session::exec_internal(const std::string& sql) {
    _internal = true;
    char* msg = nullptr;
    int rc = sqlite3_exec(_db, sql.c_str(), nullptr, nullptr, &msg);
    _internal = false;
    if (rc != SQLITE_OK) {
        const std::string why = msg ? msg : sqlite3_errstr(rc);
        sqlite3_free(msg);
        log_warn("sql", "{}: {}", sql, why);
        return query_error{no_space(rc) ? failure::disk_full : failure::internal,
                           without_paths(fmt::format("{}: {}", sql, why))};
    }
    return true;
}

// When the last connection to a WAL database closes, SQLite deletes its -wal and -shm
// files, and the next one creates them again: on a full disk that fails ("disk I/O
// error" from journal_mode=WAL) and every new session with it. Kept (SQLite's
// SQLITE_FCNTL_PERSIST_WAL), they are reused, and reads go on while the disk is full.
void sqlite_session::keep_wal_files(const char* schema) {
    int on = 1;
    (void)sqlite3_file_control(_db, schema, SQLITE_FCNTL_PERSIST_WAL, &on);
}

// A file already in WAL mode is left as it is: setting the mode again opens the WAL,
// which a full disk may refuse, and would refuse the session with it. The first read
// makes the -wal and -shm files, kept from then on (keep_wal_files); when it cannot,
// the session still serves topics and system tables, and a statement on the schema's
// tables gets the error. A file not yet in WAL mode (a new one: the switch writes its
// first page) that the disk has no room for stays in rollback mode in this session, and
// is switched before a later statement once there is room (retry_wal): reads need no
// WAL, and a database file is in one mode for every connection.
outcome<bool> sqlite_session::use_wal(const std::string& schema, const std::string& path) {
    keep_wal_files(schema.c_str());
    const auto q = quote_ident(schema);
    // Sessions opening at once on a new file would each switch it, and SQLite refuses all
    // but one of them at once ("database is locked", without waiting: two connections
    // upgrading their locks would deadlock). One switch at a time, the others see WAL.
    static std::mutex switching;
    std::unique_lock lock(switching);
    if (!wal_on_file(path)) {
        auto r = exec_internal(fmt::format("PRAGMA {}.journal_mode=WAL", q));
        if (!r && r.error().kind != failure::disk_full) return r;
        if (!r) {
            _wal_pending.insert(schema);
            return true;
        }
    }
    lock.unlock();
    _internal = true;
    const int rc = sqlite3_exec(
        _db, fmt::format("SELECT count(*) FROM {}.sqlite_master", q).c_str(), nullptr, nullptr,
        nullptr);
    _internal = false;
    if (rc != SQLITE_OK)
        log_warn("sql", "schema {}: {}; its tables are unreadable until the disk has room",
                 schema, sqlite3_errmsg(_db));
    else if (!_wal_pending.count(schema))
        _src.schemas->keep_open(path, _src.vfs);
    return true;
}

outcome<bool> sqlite_session::setup() {
    const auto main_path = _src.schemas->main_path().string();
    int rc =
        sqlite3_open_v2(main_path.c_str(), &_db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, _src.vfs);
    if (rc != SQLITE_OK) {
        const std::string why = _db ? sqlite3_errmsg(_db) : sqlite3_errstr(rc);
        log_warn("sql", "cannot open {}: {}", main_path, why);
        return query_error{failure::internal,
                           without_paths(fmt::format("cannot open schema main: {}", why))};
    }
    sqlite3_extended_result_codes(_db, 1);
    restrict_connection();
    keep_wal_files("main");
    sqlite3_busy_timeout(_db, busy_timeout_ms);
    sqlite3_progress_handler(
        _db, progress_interval_ops,
        [](void* p) { return static_cast<sqlite_session*>(p)->progress(); }, this);
    install_authorizer();
    sqlite3_rollback_hook(
        _db, [](void* p) { static_cast<sqlite_session*>(p)->_rolled_back = true; }, this);
    // WAL: readers and a writer of users' tables do not block each other; FULL: a
    // committed row survives power loss, like an acknowledged record.
    if (auto r = use_wal("main", main_path); !r) return r.error();
    for (const char* sql : {"PRAGMA main.synchronous=FULL", "ATTACH ':memory:' AS kafka_topics",
                            "ATTACH ':memory:' AS system"})
        if (auto r = exec_internal(sql); !r) return r.error();
    if (auto r = register_functions(_db, &_ctx); !r) return r.error();
    const auto& o = *_src.opts;
    const catalog::topic_store* topics =
        o.topics ? o.topics : static_cast<const catalog::topic_store*>(o.catalog);
    if (topics && (o.partitions || o.logs)) {
        // Shared mode reads the partitions through o.partitions, never o.logs.
        _topics = std::make_unique<topic_tables>(*topics, o.partitions ? nullptr : o.logs,
                                                 o.partitions, _ctx);
        _internal = true;
        auto r = _topics->install(_db);
        _internal = false;
        if (!r) return r.error();
    }
    _internal = true;
    auto sys = install_system_tables(
        _db, system_sources{o.partitions ? nullptr : o.logs, o.catalog, o.state, &_ctx, o.topics,
                            o.security, o.partitions});
    if (sys) {
        // After the engine's schemas: users' schemas are attached after it, and the catalog
        // lists them in that order.
        _pg = std::make_unique<pg_catalog_reader>(_db, &_ctx);
        sys = install_pg_catalog(_db, _pg.get());
        _pg_attached = sys.ok();
        if (sys) sys = register_pg_functions(_db, _pg.get());
    }
    _internal = false;
    if (!sys) return sys.error();
    return sync_schemas();
}

void sqlite_session::retry_wal() {
    if (_wal_pending.empty() || in_transaction()) return;  // the mode changes outside one
    for (auto it = _wal_pending.begin(); it != _wal_pending.end();) {
        _internal = true;
        const int rc = sqlite3_exec(
            _db, fmt::format("PRAGMA {}.journal_mode=WAL", quote_ident(*it)).c_str(), nullptr,
            nullptr, nullptr);
        _internal = false;
        it = rc == SQLITE_OK ? _wal_pending.erase(it) : std::next(it);
    }
}

outcome<bool> sqlite_session::sync_schemas() {
    const uint64_t gen = _src.schemas->generation();
    if (gen == _schema_gen || in_transaction()) return true;  // ATTACH needs autocommit
    auto names = _src.schemas->list();
    std::set<std::string> want(names.begin(), names.end());
    for (auto it = _attached.begin(); it != _attached.end();) {
        if (want.count(*it)) {
            ++it;
            continue;
        }
        if (auto r = exec_internal("DETACH " + quote_ident(*it)); !r) return r.error();
        _wal_pending.erase(*it);
        it = _attached.erase(it);
    }
    _unopened.clear();
    for (const auto& name : want) {
        if (_attached.count(name)) continue;
        // A schema whose file cannot be opened is left out (exec_internal logs why):
        // the session and the other schemas keep working.
        const auto path = _src.schemas->path_of(name).string();
        const auto attach = fmt::format("ATTACH {} AS {}", quote_literal(path), quote_ident(name));
        auto r = exec_internal(attach);
        // Users' schemas come first: when SQLite's 10 attached schemas are used up, the
        // catalog's two give way to a 7th and 8th user schema in this session.
        if (!r && _pg_attached && r.error().message.find("too many attached") != std::string::npos &&
            exec_internal("DETACH information_schema") && exec_internal("DETACH pg_catalog")) {
            log_info("sql", "schema {} takes the place of pg_catalog and information_schema in "
                            "this session", name);
            _pg_attached = false;
            r = exec_internal(attach);
        }
        if (!r) {
            _unopened[name] = r.error().message;
            continue;
        }
        if (auto wal = use_wal(name, path); !wal) return wal.error();
        if (auto sync = exec_internal(fmt::format("PRAGMA {}.synchronous=FULL", quote_ident(name)));
            !sync)
            return sync.error();
        _attached.insert(name);
    }
    _schema_gen = gen;
    return true;
}

outcome<bool> sqlite_session::sync_topics() {
    if (!_topics) return true;
    _internal = true;
    auto r = _topics->sync(_db);
    _internal = false;
    return r;
}

void sqlite_session::set_limits(const limits& l) {
    const auto& d = _src.opts->defaults;
    _limits.timeout = l.timeout.count() <= 0 ? d.timeout : std::min(l.timeout, d.timeout);
    _limits.max_rows = l.max_rows == 0 ? d.max_rows : std::min(l.max_rows, d.max_rows);
}

void sqlite_session::statement_started() {
    refresh_authorization();
    const auto now = std::chrono::steady_clock::now();
    _deadline = now + _limits.timeout;
    _next_check = now + interrupt_check_period;
    _account->clear_refusal();
    _ctx.begin_statement();
}

int sqlite_session::progress() {
    // The engine's own statements (setting up the session, creating a new topic's table)
    // run outside any user statement, so its time limit and cancels are not theirs: with
    // hundreds of topics, setup ran past the epoch-old deadline and every session failed.
    if (_internal) return 0;
    if (_cancel.exchange(false, std::memory_order_relaxed)) {  // a cancel stops one statement
        _interrupted = failure::canceled;
        return 1;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= _deadline) {
        _interrupted = failure::timeout;
        return 1;
    }
    if (_check && now >= _next_check) {
        _next_check = now + interrupt_check_period;
        if (_check()) {
            _interrupted = failure::canceled;
            return 1;
        }
    }
    return 0;
}

int sqlite_session::authorize(int action, const char* a1, const char* a2, const char* db_name) {
    if (_internal) return SQLITE_OK;
    auto deny = [&](std::string why) {
        _denied = std::move(why);
        return SQLITE_DENY;
    };
    switch (action) {
        case SQLITE_READ:
            return authorize_read(db_name, a1);
        case SQLITE_INSERT:
        case SQLITE_UPDATE:
        case SQLITE_DELETE:
            if (!is_engine_schema(db_name)) {
                if (int rc = guard_transaction(db_name); rc != SQLITE_OK) return rc;
                return guard(db_name, a1);
            }
            if (a1 && (sqlite3_stricmp(a1, "sqlite_master") == 0 ||
                       sqlite3_stricmp(a1, "sqlite_schema") == 0))
                return deny(schema_owned(db_name));
            return deny(read_only_table(fmt::format("{}.{}", db_name, a1 ? a1 : "?")));
        case SQLITE_CREATE_TABLE:
        case SQLITE_CREATE_INDEX:
        case SQLITE_CREATE_TRIGGER:
        case SQLITE_CREATE_VIEW:
        case SQLITE_DROP_TABLE:
        case SQLITE_DROP_INDEX:
        case SQLITE_DROP_TRIGGER:
        case SQLITE_DROP_VIEW:
            if (is_engine_schema(db_name)) return deny(schema_owned(db_name));
            if (int rc = guard_transaction(db_name); rc != SQLITE_OK) return rc;
            if (action == SQLITE_DROP_TABLE) return guard(db_name, a1);
            // A trigger on a maintained table could make its writes fail.
            if (action == SQLITE_CREATE_TRIGGER) return guard(db_name, a2);
            return SQLITE_OK;
        case SQLITE_ALTER_TABLE:
            if (is_engine_schema(a1)) return deny(schema_owned(a1));
            if (int rc = guard_transaction(a1); rc != SQLITE_OK) return rc;
            return guard(a1, a2);
        case SQLITE_CREATE_VTABLE:
        case SQLITE_DROP_VTABLE:
            return deny(
                "virtual tables are the engine's: topics appear in kafka_topics by themselves");
        case SQLITE_ATTACH:
        case SQLITE_DETACH:
            return deny("ATTACH and DETACH are not available; use CREATE SCHEMA and DROP SCHEMA");
        case SQLITE_FUNCTION:
            if (auto why = refused_function(a2); !why.empty()) return deny(std::move(why));
            return SQLITE_OK;
        case SQLITE_PRAGMA:
            if (pragma_allowed(a1, a2)) return SQLITE_OK;
            return deny(fmt::format("PRAGMA {} is not available", a1 ? a1 : "?"));
        case SQLITE_CREATE_TEMP_TABLE:
        case SQLITE_CREATE_TEMP_INDEX:
        case SQLITE_CREATE_TEMP_TRIGGER:
        case SQLITE_CREATE_TEMP_VIEW:
        case SQLITE_DROP_TEMP_TABLE:
        case SQLITE_DROP_TEMP_INDEX:
        case SQLITE_DROP_TEMP_TRIGGER:
        case SQLITE_DROP_TEMP_VIEW:
        default:
            return SQLITE_OK;
    }
}

int sqlite_session::authorize_read(const char* db_name, const char* table) {
    // Called for every column a statement reads, whatever the path to it (a view, a
    // subquery, a CTE, a join, a trigger), and once with an empty column for a table
    // read without columns (count(*)). The topic table checks again when a scan opens,
    // so that a statement prepared before a policy changed cannot keep reading.
    if (!db_name || !table) return SQLITE_OK;
    if (std::strcmp(db_name, "kafka_topics") == 0) {
        if (sqlite3_stricmp(table, "sqlite_master") == 0 ||
            sqlite3_stricmp(table, "sqlite_schema") == 0)
            return SQLITE_OK;
        return _ctx.check_topic_read(topic_of_table(table)) ? SQLITE_DENY : SQLITE_OK;
    }
    // An expansion's target holds its topic's records: reading it needs KafkaRead on
    // the topic as well. Statements prepared before a policy changed are prepared (and
    // so checked) again at their next run (refresh_authorization).
    if (!_src.opts->guard || is_engine_schema(db_name)) return SQLITE_OK;
    const auto topic = _src.opts->guard->source_topic(db_name, table);
    if (topic.empty()) return SQLITE_OK;
    return _ctx.check_topic_read(topic) ? SQLITE_DENY : SQLITE_OK;
}

int sqlite_session::guard(const char* db_name, const char* table) {
    if (!_src.opts->guard || !table) return SQLITE_OK;
    auto why = _src.opts->guard->protected_table(db_name ? db_name : "main", table);
    if (why.empty()) return SQLITE_OK;
    _denied = std::move(why);
    return SQLITE_DENY;
}

std::optional<query_error> sqlite_session::refuse_locking_begin(std::string_view sql) const {
    if (!_src.opts->guard) return std::nullopt;
    size_t i = skip_separators(sql);
    if (sqlite3_stricmp(next_word(sql, i).c_str(), "BEGIN") != 0) return std::nullopt;
    const auto mode = next_word(sql, i);
    if (sqlite3_stricmp(mode.c_str(), "IMMEDIATE") != 0 &&
        sqlite3_stricmp(mode.c_str(), "EXCLUSIVE") != 0)
        return std::nullopt;
    // Such a transaction takes the write lock of every attached file at once.
    std::vector<std::string> schemas(_attached.begin(), _attached.end());
    schemas.emplace_back("main");
    for (const auto& schema : schemas)
        if (!_src.opts->guard->protected_schema(schema).empty())
            return query_error{failure::read_only,
                               fmt::format("BEGIN {} would lock schema {}, which holds expansion "
                                           "targets, for the whole transaction; use BEGIN",
                                           mode, schema)};
    return std::nullopt;
}

int sqlite_session::guard_transaction(const char* db_name) {
    if (!_src.opts->guard || !in_transaction()) return SQLITE_OK;
    const std::string_view schema = db_name ? db_name : "main";
    if (_src.opts->guard->protected_schema(schema).empty()) return SQLITE_OK;
    // An open transaction would hold the file's write lock, and the expansions writing
    // into it, with their producers, would wait for as long as it stays open.
    _denied = fmt::format(
        "schema {} holds expansion targets, so its tables are written one statement at a time: "
        "run this outside BEGIN ... COMMIT",
        schema);
    return SQLITE_DENY;
}

query_error sqlite_session::error_for(int rc) const {
    // A policy refused a topic, at prepare (the authorizer) or when a scan opened.
    if (_ctx.denied()) return {failure::not_authorized, *_ctx.denied()};
    const std::string msg = without_paths(sqlite3_errmsg(_db));
    if (auto e = resource_error(rc, msg)) return *e;
    switch (rc & 0xff) {
        case SQLITE_INTERRUPT:
            if (_interrupted == failure::timeout)
                return {failure::timeout,
                        fmt::format("canceling statement due to statement timeout ({} ms)",
                                    _limits.timeout.count())};
            return {failure::canceled, "canceling statement due to user request"};
        case SQLITE_AUTH:
            return {failure::read_only, _denied.empty() ? msg : _denied};
        case SQLITE_CONSTRAINT:
            return {failure::constraint, msg};
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            return {failure::busy, msg};
        default:
            break;
    }
    auto has = [&](const char* s) { return msg.find(s) != std::string::npos; };
    // A function the authorizer refused comes back as SQLITE_ERROR.
    if (!_denied.empty() && has("not authorized")) return {failure::read_only, _denied};
    // A direct-only function (fts3_tokenizer, load_extension) inside a view or trigger.
    if (has("unsafe use of")) return {failure::read_only, msg};
    if (has("syntax error") || has("incomplete input") || has("unrecognized token") ||
        has(" columns but ") || has("values for ") || has("wrong number of arguments"))
        return {failure::syntax, msg};
    if (has("no such table")) {
        // A topic the principal may not see has no table: it gets the error of a
        // refused read, whether the topic exists or not, so that the error does not
        // tell (as Kafka answers TOPIC_AUTHORIZATION_FAILED for both).
        constexpr std::string_view topic_table = "no such table: kafka_topics.";
        if (const auto at = msg.find(topic_table); at != std::string::npos) {
            const std::string topic = msg.substr(at + topic_table.size());
            if (!_ctx.may_see_topic(topic))
                return {failure::not_authorized, _ctx.read_denial(topic)};
        }
        if (!_pg_attached && (has("pg_catalog.") || has("information_schema.")))
            return {failure::undefined_table,
                    msg + " (the catalog is left out of sessions whose user schemas take all of "
                          "SQLite's attached schemas: at most 6 user schemas keep it)"};
        return {failure::undefined_table, msg};
    }
    if (has("no such column")) return {failure::undefined_column, msg};
    // SQLite refuses writes into a virtual table before the authorizer is asked:
    // "table <name> may not be modified".
    if (const auto at = msg.find("may not be modified"); at != std::string::npos) {
        const auto table = msg.rfind("table ", at) == 0 ? msg.substr(6, at - 7) : std::string("?");
        return {failure::read_only, read_only_table("table " + table)};
    }
    if (has("readonly")) return {failure::read_only, msg};
    return {failure::internal, msg};
}

outcome<std::unique_ptr<statement>> sqlite_session::prepare(std::string_view sql,
                                                            std::string_view* tail) {
    const auto started = std::chrono::steady_clock::now();
    auto r = prepare_statement(sql, tail);
    // A statement refused before it runs counts as failed too (sql_metrics.h).
    if (!r.ok()) count_query(started, query_outcome::failed);
    return r;
}

outcome<std::unique_ptr<statement>> sqlite_session::prepare_statement(std::string_view sql,
                                                                      std::string_view* tail) {
    // A cancel applies to the statement running or about to run: one that came while
    // the session was idle (before this prepare) is forgotten.
    _cancel.store(false);
    budget_scope charged(_account);
    _account->clear_refusal();
    undo_rolled_back_schemas();
    if (auto r = sync_schemas(); !r) return r.error();
    if (auto r = sync_topics(); !r) return r.error();
    retry_wal();
    if (auto cmd = parse_schema_command(*this, sql, tail)) {
        if (!cmd->ok()) return cmd->error();
        return std::unique_ptr<statement>(std::move(**cmd));
    }
    if (auto refused = refuse_locking_begin(sql)) return *refused;
    if (auto refused = refuse_statement(sql)) return *refused;
    // Topics whose tables carry escaped names are named in the statement as users know
    // them: kafka_topics."CaseT" becomes kafka_topics."~^Case^T" (sql/topic_names.h).
    std::vector<text_edit> edits;
    std::string rewritten;
    std::string_view text = sql;
    if (_topics && _topics->any_escaped()) {
        rewritten = rewrite_topic_refs(
            sql, [&](std::string_view name) { return _topics->table_for(name); }, &edits);
        text = rewritten;
    }
    sqlite3_stmt* st = nullptr;
    const char* end = nullptr;
    _denied.clear();
    _ctx.clear_denied();
    int rc = sqlite3_prepare_v3(_db, text.data(), static_cast<int>(text.size()), 0, &st, &end);
    const size_t used =
        original_position(edits, end ? static_cast<size_t>(end - text.data()) : text.size());
    if (tail) *tail = sql.substr(std::min(used, sql.size()));
    if (rc != SQLITE_OK) return error_for(rc);
    if (!st) return std::unique_ptr<statement>();
    return std::unique_ptr<statement>(
        std::make_unique<sqlite_statement>(*this, st, std::string(sql.substr(0, used))));
}

}  // namespace sluice::sql
