#pragma once

// A session: one SQLite connection with the user schemas attached, kafka_topics and
// system as in-memory schemas holding the virtual tables, an authorizer that keeps
// users' statements out of the engine's schemas, and the limits and cancellation of
// statements (a progress handler). See docs/sql.md.

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sql/budget.h"
#include "sql/engine.h"
#include "sql/sqlite_engine.h"
#include "sql/statement_context.h"

namespace sluice::sql {

class schema_registry;
class pg_catalog_reader;
struct topic_tables;

struct session_sources {
    const engine_options* opts;
    schema_registry* schemas;
    const char* vfs;  // install_temp_vfs()'s (sql/budget.h)
};

// `msg` with each of `paths` (the data directory's spellings) replaced by "<data-dir>",
// longest first. An absolute path is replaced wherever it occurs; a relative one only
// where it begins a word and a '/' follows it, so that `--data-dir data` leaves
// "database" alone.
std::string hide_paths(std::string msg, std::vector<std::string> paths);

class sqlite_session final : public session {
  public:
    static outcome<std::unique_ptr<sqlite_session>> open(session_sources src);
    ~sqlite_session() override;

    outcome<std::unique_ptr<statement>> prepare(std::string_view sql,
                                                std::string_view* tail) override;
    void set_limits(const limits& l) override;
    limits current_limits() const override { return _limits; }
    limits default_limits() const override { return _src.opts->defaults; }
    void cancel() override { _cancel.store(true); }
    void set_interrupt_check(std::function<bool()> check) override { _check = std::move(check); }
    bool in_transaction() const override { return sqlite3_get_autocommit(_db) == 0; }
    void set_principal(security::principal p) override;
    const security::principal& current_principal() const override { return _ctx.principal(); }

    // --- for statements ---
    sqlite3* db() const { return _db; }
    // What the session's statements are charged to: SQLite calls run inside a
    // budget_scope of it (sql/budget.h).
    budget_account* account() const { return _account; }
    // The first step of a statement: its time limit starts and the virtual tables'
    // snapshot is reset.
    void statement_started();
    // The error for a failed SQLite call (rc), told apart by the progress handler's
    // reason for an interrupt and the authorizer's for a denial.
    query_error error_for(int rc) const;
    statement_context& context() { return _ctx; }
    schema_registry& schemas() { return *_src.schemas; }
    // Re-attaches user schemas after CREATE/DROP SCHEMA (outside a transaction). A
    // schema whose file cannot be attached is logged and left out.
    outcome<bool> sync_schemas();
    // CREATE SCHEMA / DROP SCHEMA (schema_commands.cc).
    outcome<bool> create_schema(const std::string& name, bool if_not_exists);
    outcome<bool> drop_schema(const std::string& name, bool if_exists, bool cascade);
    // A schema CREATE SCHEMA made in the middle of a transaction (which it had to step
    // out of): dropped again, when still empty, if that transaction rolls back.
    void schema_created_in_transaction(const std::string& name);

  private:
    // prepare() without the metrics.
    outcome<std::unique_ptr<statement>> prepare_statement(std::string_view sql,
                                                          std::string_view* tail);
    explicit sqlite_session(session_sources src);
    outcome<bool> setup();
    // Runs one of the engine's own statements; a failure is logged in full and
    // returned without_paths.
    outcome<bool> exec_internal(const std::string& sql);
    void keep_wal_files(const char* schema);
    outcome<bool> use_wal(const std::string& schema, const std::string& path);
    // Switches the schemas that could not be switched to WAL (a full disk) once there is
    // room, before a statement; quietly, as long as the disk stays full.
    void retry_wal();
    // `msg` with the server's paths (the data directory) replaced by "<data-dir>".
    std::string without_paths(std::string msg) const;
    outcome<bool> sync_topics();
    int progress();
    int authorize(int action, const char* a1, const char* a2, const char* db_name);
    // SQLITE_DENY for reading a topic table, or an expansion's target, without
    // KafkaRead on its topic.
    int authorize_read(const char* db_name, const char* table);
    // (Re)installs the authorizer, which expires the prepared statements.
    void install_authorizer();
    // Expires the prepared statements when users or policies changed since they were
    // authorized, so that each is checked again before its next run.
    void refresh_authorization();
    // SQLITE_DENY (with the reason kept for the error) for a table the broker maintains.
    int guard(const char* db_name, const char* table);
    // SQLITE_DENY for a write inside an explicit transaction into a schema holding
    // expansion targets.
    int guard_transaction(const char* db_name);
    // VACUUM, with its own reason (it would otherwise meet the ATTACH refusal).
    static std::optional<query_error> refuse_statement(std::string_view sql);
    // Limits and options of the connection that keep users' SQL bounded and away from
    // the process (sqlite3_limit, sqlite3_db_config).
    void restrict_connection();
    // The errors of a refused allocation, temporary write or SQLite limit.
    // Logged (once a second at most) when a memory or temporary-file bound refused.
    std::optional<query_error> resource_error(int rc, const std::string& msg) const;
    std::optional<query_error> bound_error(int rc, const std::string& msg) const;
    // Whether SQLite failed for want of space on the data directory's file system.
    bool no_space(int rc) const;
    // Why a SQL function is not available to users; empty when it is.
    static std::string refused_function(const char* name);
    // BEGIN IMMEDIATE or EXCLUSIVE locks every attached file until COMMIT: refused while
    // one of them holds expansion targets.
    std::optional<query_error> refuse_locking_begin(std::string_view sql) const;

    session_sources _src;
    budget_account* _account = nullptr;  // released after _db is closed
    sqlite3* _db = nullptr;
    limits _limits;
    std::atomic<bool> _cancel{false};
    std::function<bool()> _check;
    std::chrono::steady_clock::time_point _deadline{};
    std::chrono::steady_clock::time_point _next_check{};
    failure _interrupted = failure::canceled;  // why progress() stopped a statement
    std::string _denied;                       // why authorize() refused
    bool _internal = false;                    // the engine's own statements run unchecked
    uint64_t _schema_gen = 0;
    uint64_t _access_gen = 0;         // the gate's generation when the authorizer was installed
    std::set<std::string> _attached;  // user schemas attached, besides main
    std::map<std::string, std::string> _unopened;  // schemas that failed to attach: why
    std::set<std::string> _wal_pending;  // schemas still in rollback mode for want of space
    // Schemas created inside the open transaction, and whether it was rolled back (set
    // by SQLite's rollback hook; acted on at the next prepare, outside SQLite's calls).
    std::vector<std::string> _created_in_tx;
    bool _rolled_back = false;
    void undo_rolled_back_schemas();
    statement_context _ctx;
    std::unique_ptr<topic_tables> _topics;
    std::unique_ptr<pg_catalog_reader> _pg;  // the catalog's view of _db (sql/pg_catalog.h)
    bool _pg_attached = false;  // pg_catalog and information_schema are attached
};

}  // namespace sluice::sql
