#pragma once

// One client of the PostgreSQL front end, on its own thread: the startup handshake,
// then the simple and extended query protocols over one engine session.
//
// Invariants: every Query and every Sync is answered by exactly one ReadyForQuery;
// after an error in the extended protocol, messages up to the next Sync are discarded;
// after an error inside a transaction block the status is 'E' until ROLLBACK (or
// COMMIT, which rolls back), as in PostgreSQL, whatever SQLite did with its own
// transaction. Statements (held by prepared statements and portals) never outlive the
// session.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/blocking_server.h"
#include "sql/engine.h"
#include "sql/pg/pg_commands.h"
#include "sql/pg/pg_messages.h"

namespace sluice::sql {
class pg_server;
struct pg_options;
}  // namespace sluice::sql

namespace sluice::sql::pg {

class pg_connection {
  public:
    pg_connection(net::stream_socket& sock, engine& eng, const pg_options& opts, pg_server& server);
    ~pg_connection();
    pg_connection(const pg_connection&) = delete;
    pg_connection& operator=(const pg_connection&) = delete;

    // Serves the client until it leaves, breaks the protocol, or the server stops.
    void run();

  private:
    struct prepared_stmt {
        std::shared_ptr<statement> stmt;  // null: an empty query
        query_info info;
        std::string sql;                   // as the client sent it (stmt's may be rewritten)
        std::vector<uint32_t> param_oids;  // one per parameter; 0: unspecified
        // Result column types as Describe announced them: portals of this statement that
        // are not described themselves keep to these.
        std::optional<std::vector<uint32_t>> described;
    };
    struct portal {
        std::shared_ptr<prepared_stmt> source;
        std::shared_ptr<statement> stmt;  // null: an empty query
        std::vector<int16_t> formats;     // one per result column
        std::optional<std::vector<uint32_t>> oids;
        // has_row: the statement holds a row not sent yet (stepped ahead for Describe).
        enum class state { fresh, has_row, running, done, failed } st = state::fresh;
        ~portal();
    };
    // What the transaction state allows for a statement.
    struct tx_gate {
        enum class action { run, skip, reject } what = action::run;
        std::string tag;                 // skip: the CommandComplete tag
        std::optional<pg_error> notice;  // skip: a WARNING to send first
        pg_error error;                  // reject
    };

    // ---- I/O ----
    bool fill(size_t n);   // at least n unread input bytes; flushes output before blocking
    bool wait_readable();  // until _read_deadline; false when it passes
    bool deadline_passed() const;
    bool wait_for_message();  // idle_session_timeout
    bool flush();
    bool flush_if_large();
    bool read_message(char& type, std::string_view& body);
    bool read_body(char type, std::string_view& body);  // after the type byte, checked
    // The client's answer to an authentication request (a 'p' message).
    bool read_password_message(std::string_view& body);
    void fatal(const pg_error& e);  // FATAL ErrorResponse, flushed; the caller then closes
    void protocol_violation(std::string_view why);

    // ---- Phases ----
    bool startup();
    bool start_tls();  // after an SSLRequest: 'S', then the handshake

    // ---- Authentication ----
    struct login {
        enum class outcome { ok, failed, gone } what = outcome::failed;
        std::string reason;  // failed: why, for the log only
    };
    // Logs the client in when the gate requires it and sets the principal; false when
    // the client failed (it got a FATAL 28P01) or left.
    bool authenticate(security::principal& who);
    login scram_login();     // SCRAM-SHA-256 (RFC 7677) in SASL messages
    login password_login();  // the password itself: over TLS only
    bool apply_startup_params(const std::vector<std::pair<std::string, std::string>>& params);
    bool dispatch(char type, std::string_view body);  // false: close the connection

    // ---- Simple query protocol ----
    void simple_query(std::string_view sql);
    bool run_simple(prepared_query& q);  // false: an error was sent
    bool run_copy_out(prepared_query& q);  // COPY ... TO STDOUT (pg_copy.cc)

    // ---- Extended query protocol ----
    bool on_parse(std::string_view body);
    bool on_bind(std::string_view body);
    bool on_describe(std::string_view body);
    bool on_execute(std::string_view body);
    bool on_close(std::string_view body);
    void on_sync();
    void execute_portal(portal& p, int32_t max_rows);
    void prime(portal& p);
    void describe_portal(portal& p);

    // ---- Shared ----
    tx_gate check_tx(const query_info& info);
    void succeeded(const query_info& info);  // leaves the failed state after ROLLBACK
    void send_error(const pg_error& e, bool was_in_transaction);
    void extended_error(const pg_error& e);  // send_error, then discard until Sync
    char tx_status() const;
    // A column's type: its declared type, else the first row's value.
    std::vector<uint32_t> choose_oids(const std::vector<column>& cols,
                                      const std::vector<value>* first_row) const;
    // RowDescription's fields for columns announced as `oids`, in `formats` (one per
    // column; null: all text).
    static std::vector<field_desc> fields_for(const std::vector<column>& cols,
                                              const std::vector<uint32_t>& oids,
                                              const std::vector<int16_t>* formats);
    // Appends a DataRow; false (nothing appended) when a value cannot be sent.
    bool put_data_row(const std::vector<value>& row, const std::vector<uint32_t>& oids,
                      const std::vector<int16_t>* formats, pg_error& err);
    void drop_portals_outside_transaction();

    net::stream_socket& _sock;
    engine& _engine;
    const pg_options& _opts;
    pg_server& _server;

    std::string _in;
    size_t _in_pos = 0;
    std::string _out;
    bool _broken = false;  // a write failed: the client is gone
    // While set (during startup), reads give up at this time.
    std::optional<std::chrono::steady_clock::time_point> _read_deadline;

    std::unique_ptr<session> _session;
    std::optional<settings> _settings;
    std::optional<command_context> _ctx;
    int32_t _pid = 0;
    bool _registered = false;
    std::string _user;
    std::string _database;

    std::map<std::string, std::shared_ptr<prepared_stmt>> _statements;
    std::map<std::string, std::unique_ptr<portal>> _portals;
    bool _skip_until_sync = false;
    bool _tx_failed = false;
};

}  // namespace sluice::sql::pg
