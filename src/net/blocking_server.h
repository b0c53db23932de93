#pragma once

// A TCP server with one thread per connection, for protocols whose requests run long
// and block (SQL over the PostgreSQL wire and HTTP): a query occupies its connection's
// thread, never the Kafka event loop. Bytes only; the handler speaks the protocol.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/result.h"
#include "net/accept_backoff.h"
#include "net/listener.h"
#include "net/log_throttle.h"
#include "net/tls.h"

namespace sluice::net {

// A connected, blocking socket. Reads and writes wait; stop() of the server wakes them
// (shutdown), and they then fail. After start_tls_*() they go through TLS; SO_RCVTIMEO
// and SO_SNDTIMEO set on fd() still bound them.
class stream_socket {
  public:
    explicit stream_socket(int fd, std::string peer) : _fd(fd), _peer(std::move(peer)) {}
    stream_socket(const stream_socket&) = delete;
    stream_socket& operator=(const stream_socket&) = delete;
    ~stream_socket();

    // A client connection to `addr` (TCP_NODELAY), given up after timeout_ms.
    static result<std::unique_ptr<stream_socket>> connect(const host_port& addr, int timeout_ms);

    // Runs the TLS handshake (blocking) as the server, e.g. after the PostgreSQL
    // SSLRequest; on error the socket is unusable and should be closed.
    result<void> start_tls_server(const tls_context& ctx);
    // As the client; the server certificate must match `server_name` (name or IP).
    result<void> start_tls_client(const tls_context& ctx, const std::string& server_name);
    bool is_tls() const { return _tls != nullptr; }
    // The verified peer certificate's subject CN (the client's on a server, the
    // server's on a client); nullopt without TLS or without a verified certificate.
    std::optional<std::string> peer_common_name() const;
    // TLS: sends close_notify so the peer sees a clean end, without waiting (the socket
    // stops blocking). Call from the thread that reads and writes. No-op without TLS.
    void send_close_notify();

    // Exactly n bytes; false on end of stream or error.
    bool read_exact(void* buf, size_t n);
    // Up to n bytes (at least one); 0 on end of stream or error.
    size_t read_some(void* buf, size_t n);
    bool write_all(const void* buf, size_t n);
    bool write_all(std::string_view s) { return write_all(s.data(), s.size()); }
    // Without blocking: whether the peer has closed or reset the connection. Bytes it
    // sent and we have not read do not count (a pipelined request is not a close).
    bool peer_closed() const;
    // SO_RCVTIMEO / SO_SNDTIMEO: a read or write (TLS included) that waits this long
    // fails; 0 waits forever.
    void set_read_timeout(std::chrono::milliseconds t);
    void set_write_timeout(std::chrono::milliseconds t);
    // Makes blocked reads and writes return (from any thread).
    void shutdown();
    // Ends our side after a final answer: stops sending, then reads and drops what the
    // peer still sends until it closes or `linger_ms` pass, since closing with unread
    // bytes resets the connection and can destroy the answer before the peer reads it.
    void finish(int linger_ms);

    int fd() const { return _fd; }
    const std::string& peer() const { return _peer; }

    // The client has finished its startup (PostgreSQL: logged in; HTTP: its first
    // request head is in): the connection takes one of the server's max_connections
    // slots and leaves those still starting. False when every slot is taken (the caller
    // refuses the client) or the server has given up on it. True outside a server.
    bool establish() { return !_establish || _establish(); }
    void on_establish(std::function<bool()> fn) { _establish = std::move(fn); }
    // An established connection waiting for its client's next request (HTTP keep-alive)
    // is idle: when every slot is taken, a client that has finished its startup takes
    // the slot of the connection idle the longest, which is shut down, rather than being
    // refused. Set false again before serving the next request. No-op outside a server.
    void set_idle(bool idle) {
        if (_set_idle) _set_idle(idle);
    }
    void on_set_idle(std::function<void(bool)> fn) { _set_idle = std::move(fn); }

  private:
    result<void> run_handshake();
    // After want_read/want_write on this blocking socket: whether to retry (a signal,
    // or spurious) rather than give up (the socket's timeout passed).
    bool tls_should_retry(tls_session::status st) const;

    int _fd;
    std::string _peer;
    std::unique_ptr<tls_session> _tls;
    std::function<bool()> _establish;
    std::function<void(bool)> _set_idle;
};

class blocking_server {
  public:
    // A connection is accepted "starting" and runs `handler`, which calls
    // stream_socket::establish() once the client is past its startup. Each phase has a
    // cap of its own, so that clients that never finish starting cannot hold the slots
    // of those that did. The handler bounds the startup's time.
    struct options {
        host_port address;
        std::string name;             // for log lines: "pg", "http"
        size_t max_connections = 64;  // established connections; establish() is false beyond
        // Connections still starting. When a new one would exceed it, the oldest that has
        // been starting for `starting_grace` is shut down to make room (a real client
        // finishes in a few round trips); when none has, `rejected` runs instead.
        size_t max_starting = 64;
        std::chrono::milliseconds starting_grace{1000};
        // When none has been starting for starting_grace: true shuts the oldest down all
        // the same (for a protocol whose clients finish starting within a round trip, so
        // that clients that never do cannot keep others out by their number alone);
        // false runs `rejected`.
        bool evict_within_grace = false;
    };
    // Runs on the connection's own thread; the socket closes when it returns.
    using handler = std::function<void(stream_socket&)>;

    // Binds and starts accepting. `rejected` (may be empty: such connections are closed
    // at once) answers a connection over max_starting, on its own thread like any
    // other, so it may read the client's first request (briefly) before refusing it,
    // or serve it when establish() then finds a slot free; at most max_refusing run at
    // once, and connections beyond are closed at once.
    static result<std::unique_ptr<blocking_server>> start(options opts, handler on_connection,
                                                          handler rejected = {});
    ~blocking_server();  // stop()

    const host_port& address() const { return _bound; }
    // Stops accepting, shuts every open connection down and waits for its thread.
    void stop();

  private:
    static constexpr size_t max_refusing = 16;

    enum class phase { starting, established, refused };
    struct conn {
        std::unique_ptr<stream_socket> socket;
        phase state = phase::starting;  // refused: runs `rejected`, counts toward no cap
        bool evicted = false;           // shut down to make room (starting, or idle)
        bool idle = false;              // established, between requests (set_idle)
        std::chrono::steady_clock::time_point since;  // of the phase, or of being idle
        std::thread thread;
        std::atomic<bool> finished{false};
    };

    blocking_server(options opts, handler h, handler rejected, int fd, host_port bound);
    void accept_loop();
    void admit(std::unique_ptr<stream_socket> sock);  // _mu held
    // Whether a new connection may start: room among the starting, or made by evicting
    // the oldest past its grace. _mu held.
    bool make_room();
    bool establish(conn& c);
    void set_idle(conn& c, bool idle);
    // Shuts the established connection idle the longest down; false when none is idle.
    // _mu held.
    bool evict_idle();
    size_t count_idle() const;  // _mu held
    size_t count(phase p) const;  // _mu held; evicted and finished ones not counted
    void reap_finished();         // _mu held
    // Waits up to t for stop(); true when it came.
    bool wait_stop(std::chrono::milliseconds t) const;

    options _opts;
    handler _handler;
    handler _rejected;
    int _fd;
    int _wake[2] = {-1, -1};  // a pipe: stop() writes to wake the acceptor
    host_port _bound;
    std::thread _acceptor;
    std::mutex _mu;
    std::list<conn> _conns;
    bool _stopped = false;
    std::unique_ptr<accept_backoff> _backoff;
    log_throttle _refusals{std::chrono::seconds(10)};  // "refused" and "evicted" lines
};

}  // namespace sluice::net
