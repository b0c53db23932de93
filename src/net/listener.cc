#include "net/listener.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/logging.h"

namespace sluice::net {

result<host_port> parse_host_port(const std::string& s) {
    auto colon = s.rfind(':');
    if (colon == std::string::npos || colon + 1 == s.size())
        return {errc::invalid_argument, "expected HOST:PORT, got '" + s + "'"};
    host_port hp;
    hp.host = s.substr(0, colon);
    if (hp.host.size() >= 2 && hp.host.front() == '[' && hp.host.back() == ']')
        hp.host = hp.host.substr(1, hp.host.size() - 2);
    try {
        size_t used = 0;
        hp.port = std::stoi(s.substr(colon + 1), &used);
        if (used != s.size() - colon - 1) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
        return {errc::invalid_argument, "bad port in '" + s + "'"};
    }
    if (hp.port < 0 || hp.port > 65535)
        return {errc::invalid_argument, "port out of range in '" + s + "'"};
    return hp;
}

listener::listener(event_loop& loop, accept_fn fn, std::string name)
    : _loop(loop), _fn(std::move(fn)), _name(std::move(name)) {}

listener::~listener() {
    close();
}

result<bound_socket> open_listen_socket(const host_port& addr, bool nonblocking) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    std::string port = std::to_string(addr.port);
    int rc =
        getaddrinfo(addr.host.empty() ? nullptr : addr.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0)
        return {errc::invalid_argument, "cannot resolve " + addr.host + ": " + gai_strerror(rc)};
    std::string last_err = "no address";
    for (auto* ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family,
                        ai->ai_socktype | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
            last_err = std::strerror(errno);
            ::close(fd);
            continue;
        }
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
        host_port bound = addr;
        bound.port =
            ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
        freeaddrinfo(res);
        return bound_socket{fd, bound};
    }
    freeaddrinfo(res);
    return {errc::io_error, "cannot listen on " + addr.to_string() + ": " + last_err};
}

std::string peer_name(const sockaddr_storage& ss) {
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss.ss_family == AF_INET) {
        const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        port = ntohs(a->sin6_port);
    }
    return std::string(host) + ":" + std::to_string(port);
}

result<host_port> listener::open(const host_port& addr) {
    auto s = open_listen_socket(addr, true);
    if (!s) return s.err();
    _fd = s->fd;
    _backoff = std::make_unique<accept_backoff>(_name + " " + s->address.to_string());
    _loop.watch(_fd, EPOLLIN, this);
    return s->address;
}

void listener::close() {
    if (_fd < 0) return;
    if (_resume_timer != 0) {
        _loop.cancel_timer(_resume_timer);
        _resume_timer = 0;
    } else {
        _loop.unwatch(_fd);
    }
    ::close(_fd);
    _fd = -1;
}

void listener::on_io(uint32_t) {
    for (;;) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        int fd = accept4(_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            const int err = errno;
            if (err == EINTR || err == ECONNABORTED) continue;
            if (accept_backoff::is_resource_error(err)) {
                _backoff->failed(err);
                pause_accepting();
            } else if (err != EAGAIN && err != EWOULDBLOCK) {
                log_warn("net", "{}: accept: {}", _name, std::strerror(err));
            }
            return;
        }
        _backoff->succeeded();
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        _fn(fd, peer_name(ss));
    }
}

}  // namespace sluice::net

namespace sluice::net {

void listener::pause_accepting() {
    _loop.unwatch(_fd);
    _resume_timer = _loop.add_timer(accept_backoff::pause, [this] {
        _resume_timer = 0;
        _loop.watch(_fd, EPOLLIN, this);  // level-triggered: pending clients wake it at once
    });
}

}  // namespace sluice::net
