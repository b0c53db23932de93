#pragma once

// The front end's share of a statement: the PostgreSQL commands that never reach
// SQLite (SET, SHOW, RESET, DEALLOCATE, SELECT version()), the transaction commands in
// their PostgreSQL spellings (START TRANSACTION, BEGIN ISOLATION LEVEL ..., COMMIT WORK,
// ABORT), the session's run-time parameters, and command tags.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sql/engine.h"
#include "sql/pg/pg_messages.h"

namespace sluice::sql {
struct pg_options;
}

namespace sluice::sql::pg {

// How a statement moves the transaction state (PostgreSQL's I/T/E).
enum class tx_effect { none, begin, commit, rollback, rollback_to };

// COPY ... TO STDOUT: the statement's rows go out as CopyData (pg_copy.cc).
enum class copy_format { none, text, csv, binary };

struct query_info {
    tx_effect tx = tx_effect::none;
    // The command tag without its counts: "SELECT", "INSERT", "CREATE TABLE", "SET", ...
    std::string tag;
    copy_format copy = copy_format::none;
    bool copy_header = false;  // CSV HEADER
};

struct prepared_query {
    std::unique_ptr<statement> stmt;  // null: an empty query
    query_info info;
};

// The session's run-time parameters as SET and SHOW see them; the engine's own settings
// are the broker's and refused (docs/sql-pg.md). statement_timeout and
// sluice.max_rows are the session's limits (session::set_limits); the rest are stored
// and shown (application_name is reported back) but change nothing: the engine always
// speaks UTF8, ISO dates and UTC.
class settings {
  public:
    settings(session& s, const pg_options& opts);

    // The parameters sent as ParameterStatus at startup, in order.
    std::vector<std::pair<std::string, std::string>> reported() const;
    // Whether SET name TO value would be accepted (nullopt: yes). `value` nullopt is
    // DEFAULT.
    std::optional<pg_error> check(std::string_view name,
                                  const std::optional<std::string>& value) const;
    // Applies a checked SET. Returns the canonical name and new value when the change is
    // to be reported to the client (ParameterStatus).
    std::optional<std::pair<std::string, std::string>> apply(
        std::string_view name, const std::optional<std::string>& value);
    void reset_all();
    // SHOW: the canonical name and value; nullopt for a parameter never heard of.
    std::optional<std::pair<std::string, std::string>> show(std::string_view name) const;
    // Whether `name` is none of the session's parameters but one of the engine's settings
    // (DuckDB's memory_limit, ...): a SET of it is refused (42501), SHOW reads it as
    // current_setting() does.
    bool is_engine_setting(std::string_view name) const;
    // SHOW ALL: name, setting, description.
    std::vector<std::vector<std::string>> show_all() const;

  private:
    struct param {
        std::string canonical;  // as PostgreSQL spells it (DateStyle, TimeZone)
        std::string value;
        std::string description;
        bool read_only = false;
        bool reported = false;  // sent as ParameterStatus
    };
    std::string timeout_text() const;
    // apply() without publish().
    std::optional<std::pair<std::string, std::string>> change(
        std::string_view name, const std::optional<std::string>& value);
    // Gives the session every parameter's value (session::set_client_parameters), so that
    // current_setting() answers as SHOW does.
    void publish();

    session& _session;
    std::map<std::string, param> _params;  // by lower-case name
    std::map<std::string, std::string> _defaults;
};

// What a prepared command may do to its connection.
struct command_context {
    session& sess;
    settings& params;
    // Sends ParameterStatus.
    std::function<void(std::string_view name, std::string_view value)> report;
    // DEALLOCATE name (nullopt: ALL).
    std::function<void(std::optional<std::string_view> name)> deallocate;
    std::string server_version;
};

using prepare_result = std::variant<prepared_query, pg_error>;

// Prepares the first statement of `sql` (which starts at a statement, not at blanks);
// `tail` receives the rest. An empty prepared_query when `sql` holds only blanks.
// `declared`: the parameters' types as Parse named them (session::prepare_declared).
prepare_result prepare_query(command_context& ctx, std::string_view sql,
                             std::string_view* tail = nullptr,
                             std::span<const param_type> declared = {});

// The CommandComplete tag of a finished statement: "SELECT 3", "INSERT 0 1",
// "UPDATE 2", "CREATE TABLE", ... `rows` is the number of rows sent by this run.
std::string command_tag(const query_info& info, statement& st, int64_t rows);

pg_error to_pg_error(const query_error& e);

// COPY (query) TO STDOUT and COPY table [(columns)] TO STDOUT, with the options FORMAT
// text|csv|binary, HEADER, and the old spellings BINARY, CSV [HEADER] (pg_copy.cc);
// nullopt when `text` is not a COPY.
std::optional<prepare_result> prepare_copy(command_context& ctx, std::string_view text);

// Parses PostgreSQL's time syntax for statement_timeout: a number with an optional
// unit (us, ms, s, min, h, d; ms when none). nullopt when malformed or negative.
std::optional<int64_t> parse_duration_ms(std::string_view s);
// The other way, as SHOW prints it: "30s", "1500ms", "5min".
std::string format_duration_ms(int64_t ms);

}  // namespace sluice::sql::pg
