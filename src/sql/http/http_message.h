#pragma once

// A minimal, strict HTTP/1.1 (RFC 9112) message layer for the SQL endpoint: request
// heads and bodies (Content-Length or chunked), responses with a length or chunked,
// keep-alive. Strict means: CRLF line endings only, no obsolete line folding, no
// whitespace before a header's colon, one Content-Length, never Content-Length together
// with Transfer-Encoding, Host required in HTTP/1.1. Anything else is refused with the
// status RFC 9110 names rather than guessed at (docs/sql-http.md).
//
// The reader is shared by the server (requests) and the command-line client
// (responses), over any source of bytes.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/ascii.h"
#include "security/authorizer.h"

namespace sluice::sql::http {

using header_list = std::vector<std::pair<std::string, std::string>>;

// Buffered reading over a `fill` function that returns up to n bytes, 0 at the end of
// the stream (or on error or timeout).
class buffered_reader {
  public:
    using fill_fn = std::function<size_t(char* buf, size_t n)>;
    explicit buffered_reader(fill_fn fill) : _fill(std::move(fill)) {}

    enum class line_status { ok, end_of_stream, too_long };
    // One line ending in CRLF, without it, of at most `max` bytes (CRLF not counted).
    // A bare LF inside the line is left in `out` for the caller to refuse.
    line_status read_line(std::string& out, size_t max);
    // Exactly n bytes appended to `out`; false at the end of the stream.
    bool read_exact(std::string& out, size_t n);
    // Up to n bytes (at least one); 0 at the end of the stream.
    size_t read_some(char* buf, size_t n);
    // The next byte (0-255), or -1 at the end of the stream; peek leaves it unread.
    int get() {
        return _pos < _buf.size() || fill_more() ? static_cast<unsigned char>(_buf[_pos++]) : -1;
    }
    int peek() {
        return _pos < _buf.size() || fill_more() ? static_cast<unsigned char>(_buf[_pos]) : -1;
    }
    // Whether bytes are buffered already (a pipelined request).
    bool has_buffered() const { return _pos < _buf.size(); }

  private:
    bool fill_more();

    fill_fn _fill;
    std::string _buf;
    size_t _pos = 0;
};

struct http_request {
    std::string method;
    std::string target;  // as sent
    std::string path;    // percent-decoded, without the query
    std::string query;   // raw, after '?'
    int minor_version = 1;
    header_list headers;  // names lower-cased, values without surrounding whitespace
    std::string body;
    // Set by the router for a prefix route ("/v1/expansions/*"): the rest of the path.
    std::string path_suffix;
    // Who is asking, set by the server before the route runs: the user whose Basic
    // credentials it verified, else the common name of the client certificate verified
    // on an HTTPS listener asking for one (--http-tls-client-auth), else ANONYMOUS when
    // the broker requires no login.
    security::principal principal;
    // Whether `principal` is the client certificate's name.
    bool principal_from_certificate = false;

    // The first header of that (lower-case) name.
    std::optional<std::string_view> header(std::string_view name) const;
    // Decoded query parameters in order ('+' is a space); nullopt when an escape is bad.
    std::optional<std::vector<std::pair<std::string, std::string>>> query_params() const;
    // Whether the client wants the connection kept open after the response.
    bool keep_alive() const;
};

struct parse_limits {
    size_t max_head = 64 * 1024;    // request line and headers: beyond it 431 (or 414)
    size_t max_headers = 100;       // header fields: beyond it 431
    size_t max_body = 1024 * 1024;  // decoded body (a 1 MiB statement): beyond it 413
};

// The outcome of reading a request: a request, the quiet end of a connection, or an
// error to answer with `status` before closing.
struct read_result {
    enum class kind { request, closed, error } what = kind::closed;
    int status = 0;       // for error
    std::string message;  // for error
};

// Reads a request head (request line and headers) into `req`. Leading empty lines are
// skipped (RFC 9112 section 2.2).
read_result read_request_head(buffered_reader& in, http_request& req, const parse_limits& lim);
// Reads the body the head announces. `before_body` runs when the client sent
// "Expect: 100-continue" and a body is known to follow and to fit (the server answers
// "100 Continue" there).
read_result read_request_body(buffered_reader& in, http_request& req, const parse_limits& lim,
                              const std::function<void()>& before_body = {});

// "404 Not Found" and friends.
const char* reason_phrase(int status);
// "HTTP/1.1 <status> <reason>\r\n" + Date, Server, the given headers and either
// Content-Length (when `content_length` is set) or, when `chunked`, Transfer-Encoding:
// chunked (else the body ends with the connection), plus Connection: close when
// `close`; ends with the empty line.
std::string response_head(int status, const header_list& headers,
                          std::optional<size_t> content_length, bool close, bool chunked = true);
// One chunk of a chunked body ("<hex size>\r\n<data>\r\n"); empty data is not a chunk.
void append_chunk(std::string& out, std::string_view data);
inline constexpr std::string_view last_chunk = "0\r\n\r\n";

// Percent-decoding; `plus_is_space` for query strings. nullopt on a bad escape.
std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space);
std::string percent_encode(std::string_view s);
// The value of an Authorization header with Basic credentials (RFC 7617):
// "Basic " + base64(user ":" password). The user may not hold ':'.
std::string basic_authorization(std::string_view user, std::string_view password);
// The user and password of such a value; nullopt when it is not one (another scheme,
// bad base64, no ':').
struct basic_credentials {
    std::string user;
    std::string password;
};
std::optional<basic_credentials> parse_basic_authorization(std::string_view value);

}  // namespace sluice::sql::http
