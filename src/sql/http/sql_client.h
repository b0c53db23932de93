#pragma once

// The client side of the broker's HTTP API for `sluice sql` and the admin commands: one
// request through libcurl (curl_exchange.h) over HTTP or HTTPS, the JSON result of
// POST /v1/sql decoded as it streams in and handed to a sink row by row, so that a large
// result piped to CSV never sits in memory whole.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"
#include "net/listener.h"
#include "sql/engine.h"
#include "sql/http/http_message.h"
#include "sql/http/result_format.h"

namespace sluice::sql::http {

struct client_request {
    std::string sql;
    std::optional<uint64_t> timeout_ms;
    std::optional<uint64_t> max_rows;
    std::vector<std::string> params;  // $1..$n, sent as param=
};

// Receives a result in the order result_writer does (begin_rows, row*, finish; or
// no_rows, finish). On an error after rows, run_sql returns it without finish.
class result_sink {
  public:
    virtual ~result_sink() = default;
    virtual void begin_rows(const std::vector<column>& cols) = 0;
    virtual void row(const std::vector<value>& r) = 0;
    virtual void no_rows(std::string_view command, int64_t changes) = 0;
    virtual void finish(const result_summary& s) = 0;
};

// A result_sink that renders through a result_writer into a string the caller drains.
class writer_sink : public result_sink {
  public:
    writer_sink(result_format f, std::string& out) : _w(make_result_writer(f, out)) {}
    void begin_rows(const std::vector<column>& cols) override { _w->begin_rows(cols); }
    void row(const std::vector<value>& r) override { _w->row(r); }
    void no_rows(std::string_view command, int64_t changes) override {
        _w->no_rows(command, changes);
    }
    void finish(const result_summary& s) override { _w->finish(s); }

  private:
    std::unique_ptr<result_writer> _w;
};

struct client_error {
    enum class origin {
        connect,    // no connection to the server
        transport,  // the connection broke, or the response was not one we read
        server,     // the server answered an error (HTTP status, or in the result)
    } where = origin::server;
    int http_status = 0;
    std::string kind;      // "syntax", "timeout", "not_found", ...
    std::string sqlstate;  // empty for HTTP-level errors
    std::string message;
};

struct client_options {
    int connect_timeout_ms = 10'000;  // the TLS handshake included
    // Receive timeout while waiting for the answer; 0 waits as long as the server runs.
    int read_timeout_ms = 0;
    // HTTPS: the server's certificate must verify against tls_ca_file (the system's CAs
    // when empty) and match the host name or address connected to.
    bool tls = false;
    std::string tls_ca_file;
    // A client certificate and its key (PEM), for a server that asks for one (mTLS).
    std::string tls_cert_file, tls_key_file;
    // Basic credentials (sent over HTTPS only) when auth_user is set.
    std::string auth_user;
    std::string auth_password;
};

// Where the command-line tools send their requests, from their flags:
//   --server URL   "https://HOST:PORT", "http://HOST:PORT" or "HOST:PORT" (HTTP)
//   --auth USER    log in as USER, with the password from $SLUICE_PASSWORD (HTTPS only)
//   --tls-ca FILE  the CA that signed the broker's certificate (HTTPS only; default:
//                  the system's CAs)
//   --tls-cert FILE, --tls-key FILE  a client certificate for mTLS (HTTPS only)
// Shared by `sluice sql`, `sluice expansion`, `sluice user` and `sluice policy`.
struct server_target {
    net::host_port address;
    client_options opts;
};
// Errors (invalid_argument) say which flag is wrong and what to do.
result<server_target> parse_server_flags(std::string_view server, const std::string& auth_user,
                                         const std::string& tls_ca,
                                         const std::string& tls_cert = {},
                                         const std::string& tls_key = {});
// The variable --auth reads the password from.
inline constexpr const char* password_env = "SLUICE_PASSWORD";

// One whole exchange with the broker's HTTP API (the expansions' routes): the status
// and the body, whatever the status. Errors: connect and transport failures only.
struct http_reply {
    int status = 0;
    std::string body;
};
std::variant<http_reply, client_error> http_call(const net::host_port& server,
                                                 std::string_view method, std::string_view target,
                                                 std::string_view body,
                                                 const client_options& opts = {});

// Runs `req` on the server at `server` (its HTTP address), feeding `sink`.
std::optional<client_error> run_sql(const net::host_port& server, const client_request& req,
                                    result_sink& sink, const client_options& opts = {});

// The request target run_sql posts the SQL to (path and query).
std::string sql_request_target(const client_request& req);

// Decodes a JSON result document (as /v1/sql writes it) from `in` into `sink`; an
// error the document carries, or a decoding failure (origin::transport).
std::optional<client_error> decode_json_result(buffered_reader& in, result_sink& sink);

}  // namespace sluice::sql::http
