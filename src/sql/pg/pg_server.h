#pragma once

// The PostgreSQL wire protocol front end of the SQL engine (`sluice serve --pg
// HOST:PORT`): psql, psycopg2, JDBC and other drivers connect to it and run queries on
// sessions of the engine. One thread per connection (net/blocking_server.h): a query
// blocks its own connection only. What is supported: docs/sql-pg.md.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/result.h"
#include "net/blocking_server.h"
#include "net/listener.h"
#include "net/tls.h"
#include "sql/engine.h"

namespace sluice::security {
class gate;
}

namespace sluice::sql {

namespace pg {
class pg_connection;
}

struct pg_options {
    // Logged-in sessions; one more gets FATAL 53300 after its login.
    size_t max_connections = 64;
    // Connections still in their startup (startup packet, TLS, authentication): a cap
    // of their own (net::blocking_server::options::max_starting), so that clients that
    // never log in cannot take the sessions' slots; beyond, FATAL 53300 too.
    size_t max_starting = 64;
    // Reported as server_version; clients parse the leading number (15.0 -> 150000).
    std::string server_version = "15.0 (Sluice)";
    // A client must finish its startup within this time (PostgreSQL's
    // authentication_timeout), or its connection slot is taken back.
    std::chrono::milliseconds startup_timeout{10'000};
    // A session that sends nothing for this long is closed with FATAL 57P05 (25P03 in a
    // transaction block), as PostgreSQL's idle_session_timeout and
    // idle_in_transaction_session_timeout do; 0: never.
    std::chrono::milliseconds idle_session_timeout{600'000};
    // Set: an SSLRequest is answered 'S' and the connection goes on over TLS (else 'N').
    std::shared_ptr<net::tls_context> tls;
    // Set: its policies decide what each session may read, and when it requires
    // authentication, clients log in with a password checked against its credentials
    // (SCRAM-SHA-256 in plain text, the password itself only over TLS). Must outlive
    // the server. Null: any user name is trusted, and sessions run as ANONYMOUS.
    const security::gate* gate = nullptr;
};

class pg_server {
  public:
    // Binds `addr` (port 0 picks a free port) and starts serving. The engine must outlive
    // the server.
    static result<std::unique_ptr<pg_server>> start(const net::host_port& addr, engine& eng,
                                                    pg_options opts = {});
    ~pg_server();  // stop()
    pg_server(const pg_server&) = delete;
    pg_server& operator=(const pg_server&) = delete;

    const net::host_port& address() const;
    // Stops accepting and closes every connection; running queries are canceled.
    void stop();

    // Connections being served now (for tests and metrics).
    size_t connection_count() const { return _connections.load(); }

    // Cancels the running query of the session with this BackendKeyData (CancelRequest).
    // False when no session matches.
    bool cancel(int32_t pid, int32_t secret);

  private:
    friend class pg::pg_connection;
    // The registry of sessions a CancelRequest may reach. A connection registers after
    // its session opens and unregisters before closing it.
    struct registration {
        int32_t pid = 0;
        int32_t secret = 0;
    };
    registration register_session(session& s);
    void unregister_session(int32_t pid);

    pg_server(engine& eng, pg_options opts);
    void serve(net::stream_socket& sock);

    engine& _engine;
    pg_options _opts;
    std::unique_ptr<net::blocking_server> _server;
    std::atomic<size_t> _connections{0};

    struct entry {
        int32_t secret;
        session* sess;
    };
    std::mutex _mu;
    std::unordered_map<int32_t, entry> _sessions;  // by pid
    int32_t _next_pid;
    uint64_t _rng_state;
};

}  // namespace sluice::sql
