#pragma once

// One HTTP exchange of the command-line tools, through libcurl: TLS with the server's
// certificate verified (a CA file or the system's), a client certificate when given
// (mTLS), Basic credentials; the response body read as it arrives (read_some), so a large
// result streams rather than sitting in memory. libcurl's multi interface is driven only
// while the reader wants bytes. Proxies from the environment are not used: the tools
// talk to a broker directly.

#include <curl/curl.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "net/listener.h"

namespace sluice::sql::http {

struct exchange_options {
    int connect_timeout_ms = 10'000;  // the TLS handshake included
    int read_timeout_ms = 0;          // no byte for this long fails it; 0: wait
    bool tls = false;
    std::string tls_ca_file;  // empty: the system's CAs
    std::string tls_cert_file, tls_key_file;
    std::string auth_user, auth_password;  // Basic, when auth_user is set
};

struct exchange_failure {
    bool connecting = false;  // before any response: no connection or TLS refused
    std::string message;
};

class curl_exchange {
  public:
    // Sends the request and waits for the response head (past any 1xx).
    static std::variant<std::unique_ptr<curl_exchange>, exchange_failure> start(
        const net::host_port& server, std::string_view method, std::string_view target,
        const std::vector<std::string>& headers, std::string body, const exchange_options& opts);
    ~curl_exchange();
    curl_exchange(const curl_exchange&) = delete;
    curl_exchange& operator=(const curl_exchange&) = delete;

    int status() const { return _status; }
    // Up to n bytes of the body; 0 at its end or on a failure (failure() says which).
    size_t read_some(char* buf, size_t n);
    const std::optional<exchange_failure>& failure() const { return _failure; }

  private:
    curl_exchange() = default;
    bool pump();  // one round of transfer; false once it is over
    static size_t on_body(char* data, size_t size, size_t n, void* self);
    static size_t on_header(char* data, size_t size, size_t n, void* self);

    CURLM* _multi = nullptr;
    CURL* _easy = nullptr;
    curl_slist* _headers = nullptr;
    std::string _body_out;  // the request body, alive for the transfer
    std::string _buf;       // body bytes received, not yet read
    size_t _pos = 0;
    int _status = 0;
    bool _head_done = false;
    bool _done = false;
    std::optional<exchange_failure> _failure;
    char _error[CURL_ERROR_SIZE] = {};
};

}  // namespace sluice::sql::http
