#pragma once

// A TCP server with one thread per connection, for protocols whose requests run long
// and block (SQL over the PostgreSQL wire and HTTP): a query occupies its connection's
// thread, never the Kafka event loop. Bytes only; the handler speaks the protocol.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.h"
#include "net/listener.h"

namespace sluice::net {

// A connected, blocking socket. Reads and writes wait; stop() of the server wakes them
// (shutdown), and they then fail.
class stream_socket {
  public:
    explicit stream_socket(int fd, std::string peer) : _fd(fd), _peer(std::move(peer)) {}
    stream_socket(const stream_socket&) = delete;
    stream_socket& operator=(const stream_socket&) = delete;
    ~stream_socket();

    // Exactly n bytes; false on end of stream or error.
    bool read_exact(void* buf, size_t n);
    // Up to n bytes (at least one); 0 on end of stream or error.
    size_t read_some(void* buf, size_t n);
    bool write_all(const void* buf, size_t n);
    bool write_all(std::string_view s) { return write_all(s.data(), s.size()); }
    // Without blocking: whether the peer has closed or reset the connection. Bytes it
    // sent and we have not read do not count (a pipelined request is not a close).
    bool peer_closed() const;
    // Makes blocked reads and writes return (from any thread).
    void shutdown();
    // Ends our side after a final answer: stops sending, then reads and drops what the
    // peer still sends until it closes or `linger_ms` pass, since closing with unread
    // bytes resets the connection and can destroy the answer before the peer reads it.
    void finish(int linger_ms);

    int fd() const { return _fd; }
    const std::string& peer() const { return _peer; }

  private:
    int _fd;
    std::string _peer;
};

class blocking_server {
  public:
    struct options {
        host_port address;
        std::string name;              // for log lines: "pg", "http"
        size_t max_connections = 64;   // beyond it, `rejected` runs instead of `handler`
    };
    // Runs on the connection's own thread; the socket closes when it returns.
    using handler = std::function<void(stream_socket&)>;

    // Binds and starts accepting. `rejected` (may be empty: such connections are closed
    // at once) answers a connection over max_connections, on its own thread like any
    // other, so it may read the client's first request before refusing it; at most
    // max_refusing run at once, and connections beyond are closed at once.
    static result<std::unique_ptr<blocking_server>> start(options opts, handler on_connection,
                                                          handler rejected = {});
    ~blocking_server();  // stop()

    const host_port& address() const { return _bound; }
    // Stops accepting, shuts every open connection down and waits for its thread.
    void stop();

  private:
    static constexpr size_t max_refusing = 16;

    struct conn {
        std::unique_ptr<stream_socket> socket;
        bool refused = false;  // runs `rejected`; does not count toward the limit
        std::thread thread;
        std::atomic<bool> finished{false};
    };

    blocking_server(options opts, handler h, handler rejected, int fd, host_port bound);
    void accept_loop();
    void reap_finished();  // _mu held

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
};

}  // namespace sluice::net
