#pragma once

// The response side of one HTTP exchange, as a route handler sees it: a whole response
// (send), a JSON error (send_error), or a chunked stream (begin_stream, write,
// end_stream). Exactly one response per request; the server answers 500 for a handler
// that sends none.

#include <functional>
#include <string>
#include <string_view>

#include "sql/http/http_message.h"

namespace sluice::sql::http {

class http_response {
  public:
    // `write` sends bytes (false when the client is gone); `peer_closed` tells, without
    // blocking, whether the client has hung up.
    using write_fn = std::function<bool(std::string_view)>;
    using closed_fn = std::function<bool()>;
    // `chunked`: whether the client reads chunked bodies (HTTP/1.1); an HTTP/1.0 client
    // gets a stream delimited by the end of the connection instead.
    http_response(write_fn write, closed_fn peer_closed, bool keep_alive, bool chunked = true)
        : _write(std::move(write)),
          _peer_closed(std::move(peer_closed)),
          _keep_alive(keep_alive),
          _chunked(chunked) {}

    // A whole response with a Content-Length.
    bool send(int status, std::string_view content_type, std::string_view body,
              const header_list& extra = {});
    // {"error":{"kind":...,"sqlstate":...,"message":...}} (docs/sql-http.md).
    bool send_error(int status, std::string_view kind, std::string_view message,
                    std::string_view sqlstate = {}, const header_list& extra = {});

    // A chunked response: the head now, then chunks, then the last chunk.
    bool begin_stream(int status, std::string_view content_type, const header_list& extra = {});
    bool write(std::string_view data);
    bool end_stream();

    // Whether the head has gone out (a status can no longer change).
    bool started() const { return _started; }
    // Whether a complete response has gone out.
    bool finished() const { return _finished; }
    // Whether every write so far reached the socket.
    bool ok() const { return _ok; }
    // Whether the connection stays open after this response.
    bool keep_alive() const { return _keep_alive; }
    // Asks for Connection: close (before the head goes out).
    void close_after() { _keep_alive = false; }
    // For HEAD: heads go out, bodies do not.
    void set_head_only() { _head_only = true; }
    bool peer_closed() const { return _peer_closed && _peer_closed(); }

  private:
    bool put(std::string_view data);

    write_fn _write;
    closed_fn _peer_closed;
    bool _keep_alive;
    bool _chunked;
    bool _head_only = false;
    bool _started = false;
    bool _finished = false;
    bool _ok = true;
};

}  // namespace sluice::sql::http
