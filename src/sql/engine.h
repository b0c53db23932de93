#pragma once

// The SQL engine as its front ends (PostgreSQL wire, HTTP, CLI) see it: sessions that
// prepare and step statements, with limits and cancellation. DuckDB does the work
// (sql/duck/serving.h); the topic and system tables are table functions over the
// partition logs and the broker's state (docs/sql.md).
//
// Threading: an engine is shared by every front end and is thread-safe. A session is
// used by one thread at a time (its connection's), except cancel(), which any thread
// may call. Statements belong to their session and must not outlive it.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/types.h"
#include "security/authorizer.h"

namespace sluice::sql {

// One cell: NULL, INTEGER, REAL, TEXT (UTF-8), BLOB; the column's declared type says more.
using value = std::variant<std::monostate, int64_t, double, std::string, bytes>;

// Why a statement failed. Each kind has the SQLSTATE a PostgreSQL client expects.
enum class failure {
    syntax,             // 42601 syntax_error
    undefined_table,    // 42P01 undefined_table (an unknown table or topic)
    undefined_column,   // 42703 undefined_column
    read_only,          // 42501 insufficient_privilege (writes into kafka_topics/system)
    not_authorized,     // 42501 insufficient_privilege (a policy denies the principal)
    timeout,            // 57014 query_canceled (the time limit)
    canceled,           // 57014 query_canceled (cancel(), or the client went away)
    row_limit,          // 54000 program_limit_exceeded
    program_limit,      // 54000 program_limit_exceeded (a value, SQL text, columns, depth...)
    memory_limit,       // 53200 out_of_memory (the session's memory bound)
    memory_exhausted,   // 53200 out_of_memory (every session's memory together)
    temp_exhausted,     // 53400 configuration_limit_exceeded (every session's together)
    invalid_parameter,  // 22023 invalid_parameter_value (bad bind values, bad limits)
    constraint,         // 23505 unique_violation / other constraint failures
    busy,               // 55P03 lock_not_available (the user database stayed locked)
    disk_full,          // 53100 disk_full (the data directory's file system has no room)
    shutting_down,      // 57P01 admin_shutdown
    not_supported,      // 0A000 feature_not_supported (savepoints)
    internal,           // XX000 internal_error
};
const char* sqlstate(failure f);
const char* failure_name(failure f);  // "syntax", "timeout", ...: for HTTP/JSON errors

struct query_error {
    failure kind = failure::internal;
    std::string message;  // one line, for the user (the engine's message, or ours)
};

// Either a T or a query_error.
template <typename T>
class [[nodiscard]] outcome {
  public:
    outcome(T v) : _v(std::move(v)) {}            // NOLINT(google-explicit-constructor)
    outcome(query_error e) : _v(std::move(e)) {}  // NOLINT(google-explicit-constructor)
    bool ok() const { return _v.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& operator*() { return std::get<0>(_v); }
    T* operator->() { return &std::get<0>(_v); }
    const query_error& error() const { return std::get<1>(_v); }

  private:
    std::variant<T, query_error> _v;
};

// The type a client declared for a statement's parameter (PostgreSQL's Parse names one per
// parameter, or none).
enum class param_type : uint8_t {
    unspecified,
    boolean,
    int16,
    int32,
    int64,
    float32,
    float64,
    numeric,
    text,
    bytes,
    date,
    timestamp,
    timestamptz,
};

// A result column. decl_type is the declared type of a table column ("INTEGER",
// "TEXT", "BLOB", "REAL", ...), empty for an expression: front ends then type the
// column by its values (see statement::step).
struct column {
    std::string name;
    std::string decl_type;
};

// Per-statement limits. A caller may only lower the engine's defaults
// (session::set_limits clamps to them).
struct limits {
    std::chrono::milliseconds timeout{30'000};
    uint64_t max_rows = 1'000'000;
};

class statement {
  public:
    virtual ~statement() = default;

    // The statement's text as prepared (without the tail).
    virtual const std::string& text() const = 0;
    // Number of parameters ($1..$n or ?). Bind before the first step.
    virtual int param_count() const = 0;
    virtual outcome<bool> bind(const std::vector<value>& params) = 0;
    // Result columns; empty when the statement returns no rows (DDL, INSERT, ...).
    virtual const std::vector<column>& columns() const = 0;

    enum class step_state { row, done, failed };
    // Runs to the next row. row: row() holds it until the next step. done: finished
    // (changes() is final). failed: error() says why; the statement is finished. The
    // time limit counts from the first step; the row limit fails the step that would
    // return one row too many.
    virtual step_state step() = 0;
    virtual const std::vector<value>& row() const = 0;
    virtual const query_error& error() const = 0;
    // Rows inserted, updated or deleted by a finished INSERT/UPDATE/DELETE.
    virtual int64_t changes() const = 0;
    // The statement's leading keyword, upper-case ("SELECT", "INSERT", "CREATE", "BEGIN",
    // ...), for PostgreSQL command tags.
    virtual std::string verb() const = 0;
    // Ready to run again from the start, keeping the bindings.
    virtual void reset() = 0;
};

class session {
  public:
    virtual ~session() = default;

    // Prepares the first statement of `sql`; `tail` (when given) receives the rest, for
    // strings holding several statements separated by ';'. A string holding only
    // whitespace and comments gives a null pointer and no error.
    virtual outcome<std::unique_ptr<statement>> prepare(std::string_view sql,
                                                        std::string_view* tail = nullptr) = 0;
    // As prepare(), with the types the client declared for the parameters (the first ones;
    // any further are unspecified). An engine that types parameters as it prepares (DuckDB)
    // takes them where the statement alone leaves a parameter's type, and so its result
    // columns, open (`? + 9000000000`).
    virtual outcome<std::unique_ptr<statement>> prepare_declared(
        std::string_view sql, std::string_view* tail, std::span<const param_type> /*declared*/) {
        return prepare(sql, tail);
    }

    // Limits for statements stepped from now on, clamped to the engine's defaults.
    virtual void set_limits(const limits& l) = 0;
    virtual limits current_limits() const = 0;
    virtual limits default_limits() const = 0;

    // From any thread: the statement running now, or the next one stepped if none is
    // running, fails with `canceled` at its next check (within a few milliseconds). A
    // cancel stops one statement; prepare() forgets one that came while idle.
    virtual void cancel() = 0;
    // Called on the stepping thread every few milliseconds of work; returning true
    // cancels the running statement (front ends use it to notice a client that went
    // away). Replaces any earlier check; an empty function removes it.
    virtual void set_interrupt_check(std::function<bool()> check) = 0;

    // Whether `name` is one of the engine's own settings (DuckDB's memory_limit, threads,
    // enable_external_access, ...; any spelling of case). They are the broker's: the
    // PostgreSQL front end refuses to SET them and SHOWs them as current_setting() does.
    virtual bool is_engine_setting(std::string_view /*name*/) const { return false; }

    // The front end's run-time parameters (PostgreSQL's SET: application_name,
    // statement_timeout, custom ones such as myapp.x), by lower-case name, with their
    // values as SHOW gives them: current_setting('name') of one answers that value in
    // this session's statements from now on. Replaces the earlier ones.
    virtual void set_client_parameters(const std::map<std::string, std::string>& /*params*/) {}

    // Whether an explicit transaction (BEGIN ...) is open: PostgreSQL's
    // ReadyForQuery status 'T'.
    virtual bool in_transaction() const = 0;

    // Who runs the statements from now on: the front end sets it once the client has
    // logged in (ANONYMOUS until then). With a gate (engine_options::gate), reading a
    // topic table needs KafkaRead on the topic, and the system tables list only what
    // the principal may describe (docs/sql.md).
    virtual void set_principal(security::principal p) = 0;
    virtual const security::principal& current_principal() const = 0;
};

class engine {
  public:
    virtual ~engine() = default;
    // A new session; fails with shutting_down once the engine is stopping.
    virtual outcome<std::unique_ptr<session>> open_session() = 0;
    virtual limits default_limits() const = 0;
};

}  // namespace sluice::sql
