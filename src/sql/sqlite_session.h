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

#include "sql/engine.h"
#include "sql/sqlite_engine.h"
#include "sql/statement_context.h"

namespace sluice::sql {

class schema_registry;
struct topic_tables;

struct session_sources {
    const engine_options* opts;
    schema_registry* schemas;
};

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
    explicit sqlite_session(session_sources src);
    outcome<bool> setup();
    // Runs one of the engine's own statements; a failure is logged in full and
    // returned without_paths.
    outcome<bool> exec_internal(const std::string& sql);
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
    // BEGIN IMMEDIATE or EXCLUSIVE locks every attached file until COMMIT: refused while
    // one of them holds expansion targets.
    std::optional<query_error> refuse_locking_begin(std::string_view sql) const;

    session_sources _src;
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
    // Schemas created inside the open transaction, and whether it was rolled back (set
    // by SQLite's rollback hook; acted on at the next prepare, outside SQLite's calls).
    std::vector<std::string> _created_in_tx;
    bool _rolled_back = false;
    void undo_rolled_back_schemas();
    statement_context _ctx;
    std::unique_ptr<topic_tables> _topics;
};

}  // namespace sluice::sql
