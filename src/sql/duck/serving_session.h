#pragma once

// The session and statement of duck/serving.h. Internal to src/sql/duck.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "sql/budget.h"
#include "sql/duck/duck_internal.h"
#include "sql/duck/session_memory.h"
#include "sql/engine.h"
#include "sql/engine_options.h"
#include "sql/statement_context.h"

namespace sluice::sql::duck {

class watchdog;

// What both the stepping thread and the watchdog see of a session's running statement.
struct run_state {
    std::atomic<bool> cancel{false};
    std::atomic<int64_t> deadline_ns{0};  // steady clock; 0 while no statement runs
    std::atomic<int> interrupted{0};      // 0, or 1 + the failure the watchdog stopped it for
};

class serving_session final : public sql::session {
  public:
    serving_session(engine::impl& db, const engine_options& opts, watchdog& dog);
    ~serving_session() override;

    outcome<std::unique_ptr<sql::statement>> prepare(std::string_view sql,
                                                     std::string_view* tail) override {
        return prepare_declared(sql, tail, {});
    }
    outcome<std::unique_ptr<sql::statement>> prepare_declared(
        std::string_view sql, std::string_view* tail,
        std::span<const param_type> declared) override;
    void set_limits(const limits& l) override;
    limits current_limits() const override { return _limits; }
    limits default_limits() const override { return _opts.defaults; }
    void cancel() override { _run.cancel.store(true); }
    void set_interrupt_check(std::function<bool()> check) override { _check = std::move(check); }
    bool in_transaction() const override { return !_con->IsAutoCommit(); }
    bool is_engine_setting(std::string_view name) const override;
    void set_client_parameters(const std::map<std::string, std::string>& params) override {
        _client_params = params;
    }
    void set_principal(security::principal p) override;
    const security::principal& current_principal() const override { return _ctx.principal(); }

    // --- for statements ---
    d::Connection& con() { return *_con; }
    run_state& run() { return _run; }
    const engine_options& opts() const { return _opts; }
    const std::function<bool()>& check() const { return _check; }
    // A statement starts running: a new cut, its deadline set. False (and the error) when
    // a cancel came first.
    std::optional<query_error> start_statement();
    void end_statement();
    // Changes whenever the policies may have changed (statement_context).
    uint64_t access_generation() const { return _ctx.access_generation(); }
    // The topics whose records the last statement prepared reads through tables
    // (expansion targets, duck/table_access.h), and their check before a run.
    const std::vector<std::string>& bound_topics() const { return _bound_topics; }
    std::optional<query_error> check_topics(const std::vector<std::string>& topics);
    // DuckDB's error as the interface's, told apart by why the watchdog interrupted and
    // which bound refused memory (duck/session_memory.h).
    query_error error_for(const d::ErrorData& e);
    // The statement's memory is charged to the session unless it is transaction control.
    void charge_tasks(bool on) { _charging->enable(on); }

  private:
    outcome<std::unique_ptr<sql::statement>> prepare_statement(
        std::string_view sql, std::string_view* tail, std::span<const param_type> declared);

    engine::impl& _db;
    const engine_options& _opts;
    watchdog& _dog;
    // What the session's statements hold outside DuckDB's buffer pool; released after the
    // connection closes.
    budget_account* _account;
    std::unique_ptr<d::Connection> _con;
    std::unique_ptr<task_charging> _charging;
    statement_context _ctx;
    std::mutex _mu;  // guards _ctx against DuckDB's threads
    scan_counters _counters;
    limits _limits;
    std::function<bool()> _check;
    run_state _run;
    std::vector<std::string> _bound_topics;
    std::map<std::string, std::string> _client_params;
};

// Interrupts the connections whose statement ran past its deadline or was canceled,
// checking every few milliseconds on a thread of its own; and every running statement
// when DuckDB's temp directory holds more than `temp_bytes` (DuckDB 1.5.6 writes a hash
// join's spill past its own max_temp_directory_size), measured every 20 ms while a
// statement runs.
class watchdog {
  public:
    explicit watchdog(std::filesystem::path temp_dir = {}, uint64_t temp_bytes = 0);
    ~watchdog();
    void add(run_state* r, d::Connection* c);
    void remove(run_state* r);

  private:
    void loop();
    bool temp_full();
    std::filesystem::path _temp_dir;
    uint64_t _temp_bytes;
    int64_t _next_temp_check_ns = 0;
    std::mutex _mu;
    std::vector<std::pair<run_state*, d::Connection*>> _sessions;
    bool _stop = false;
    std::condition_variable _cv;
    std::thread _thread;
};

}  // namespace sluice::sql::duck
