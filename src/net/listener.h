#pragma once

#include <sys/socket.h>

#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "net/accept_backoff.h"
#include "net/event_loop.h"

namespace sluice::net {

struct host_port {
    std::string host;
    int port = 0;
    std::string to_string() const { return host + ":" + std::to_string(port); }
};
// "HOST:PORT" or "[v6]:PORT".
result<host_port> parse_host_port(const std::string& s);

// A listening TCP socket and the address it is bound to (the real port when 0 was
// asked).
struct bound_socket {
    int fd = -1;
    host_port address;
};
result<bound_socket> open_listen_socket(const host_port& addr, bool nonblocking);
// "HOST:PORT" of a peer address.
std::string peer_name(const sockaddr_storage& ss);

// Accepts TCP connections and hands each new non-blocking socket to on_accept. Out of
// descriptors it stops watching the socket for a pause (accept_backoff) and then tries
// again, rather than being woken at once by the connection still pending.
class listener : public io_handler {
  public:
    using accept_fn = std::function<void(int fd, std::string peer)>;
    // `name` for log lines ("kafka").
    listener(event_loop& loop, accept_fn fn, std::string name = "kafka");
    ~listener() override;

    // Binds and listens; the bound address (with the real port when 0 was asked) is
    // returned.
    result<host_port> open(const host_port& addr);
    void close();
    void on_io(uint32_t events) override;

  private:
    void pause_accepting();

    event_loop& _loop;
    accept_fn _fn;
    std::string _name;
    int _fd = -1;
    std::unique_ptr<accept_backoff> _backoff;  // named once the address is bound
    event_loop::timer_id _resume_timer = 0;    // set while accepting is paused
};

}  // namespace sluice::net
