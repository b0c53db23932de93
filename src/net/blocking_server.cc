#include "net/blocking_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>

#include "common/logging.h"

namespace sluice::net {

stream_socket::~stream_socket() {
    if (_fd < 0) return;
    send_close_notify();
    ::close(_fd);
}

result<std::unique_ptr<stream_socket>> stream_socket::connect(const host_port& addr,
                                                              int timeout_ms) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(addr.port);
    if (int rc = getaddrinfo(addr.host.c_str(), port.c_str(), &hints, &res); rc != 0)
        return {errc::invalid_argument, "cannot resolve " + addr.host + ": " + gai_strerror(rc)};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::string why = "no address";
    errc code = errc::io_error;
    for (auto* ai = res; ai != nullptr; ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            why = std::strerror(errno);
            continue;
        }
        int err = ::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
        while (err == EINPROGRESS || err == EINTR) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  deadline - std::chrono::steady_clock::now())
                                  .count();
            pollfd pfd{fd, POLLOUT, 0};
            int r = left > 0 ? ::poll(&pfd, 1, static_cast<int>(left)) : 0;
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                err = ETIMEDOUT;
                break;
            }
            socklen_t len = sizeof err;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
        if (err == 0) {
            freeaddrinfo(res);
            ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return std::make_unique<stream_socket>(fd, addr.to_string());
        }
        ::close(fd);
        code = err == ETIMEDOUT ? errc::timed_out : errc::io_error;
        why = err == ETIMEDOUT ? "timed out" : std::strerror(err);
    }
    freeaddrinfo(res);
    return {code, "cannot connect to " + addr.to_string() + ": " + why};
}

result<void> stream_socket::start_tls_server(const tls_context& ctx) {
    if (_tls) return {errc::invalid_argument, "TLS is already on for " + _peer};
    auto s = tls_session::accept(ctx, _fd);
    if (!s) return s.err();
    _tls = std::move(*s);
    return run_handshake();
}

result<void> stream_socket::start_tls_client(const tls_context& ctx,
                                             const std::string& server_name) {
    if (_tls) return {errc::invalid_argument, "TLS is already on for " + _peer};
    auto s = tls_session::connect(ctx, _fd, server_name);
    if (!s) return s.err();
    _tls = std::move(*s);
    return run_handshake();
}

result<void> stream_socket::run_handshake() {
    for (;;) {
        auto st = _tls->handshake();
        if (st == tls_session::status::ok) return {};
        if (st == tls_session::status::want_read || st == tls_session::status::want_write) {
            if (tls_should_retry(st)) continue;
            return {errc::timed_out, "TLS handshake with " + _peer + " timed out"};
        }
        return {errc::io_error, _tls->error()};
    }
}

bool stream_socket::tls_should_retry(tls_session::status st) const {
    if (_tls->last_errno() == EINTR) return true;
    pollfd pfd{_fd, static_cast<short>(st == tls_session::status::want_read ? POLLIN : POLLOUT), 0};
    return ::poll(&pfd, 1, 0) > 0;
}

std::optional<std::string> stream_socket::peer_common_name() const {
    if (!_tls) return std::nullopt;
    return _tls->peer_common_name();
}

void stream_socket::send_close_notify() {
    if (!_tls) return;
    // Never block on a peer that does not read: the alert is best effort.
    ::fcntl(_fd, F_SETFL, ::fcntl(_fd, F_GETFL) | O_NONBLOCK);
    _tls->close_notify();
}

bool stream_socket::read_exact(void* buf, size_t n) {
    auto* p = static_cast<char*>(buf);
    while (n > 0) {
        size_t got = read_some(p, n);
        if (got == 0) return false;
        p += got;
        n -= got;
    }
    return true;
}

size_t stream_socket::read_some(void* buf, size_t n) {
    while (_tls) {
        size_t got = 0;
        auto st = _tls->read(buf, n, got);
        if (st == tls_session::status::ok) return got;
        if ((st == tls_session::status::want_read || st == tls_session::status::want_write) &&
            tls_should_retry(st))
            continue;
        return 0;
    }
    for (;;) {
        ssize_t r = ::recv(_fd, buf, n, 0);
        if (r > 0) return static_cast<size_t>(r);
        if (r < 0 && errno == EINTR) continue;
        return 0;
    }
}

bool stream_socket::write_all(const void* buf, size_t n) {
    const auto* p = static_cast<const char*>(buf);
    while (_tls && n > 0) {
        size_t w = 0;
        auto st = _tls->write(p, n, w);
        if (st == tls_session::status::ok) {
            p += w;
            n -= w;
            continue;
        }
        if ((st == tls_session::status::want_read || st == tls_session::status::want_write) &&
            tls_should_retry(st))
            continue;
        return false;
    }
    while (_tls && _tls->has_unflushed()) {  // a send timed out after the last write
        auto st = _tls->flush();
        if (st == tls_session::status::want_write && tls_should_retry(st)) continue;
        if (st != tls_session::status::ok) return false;
    }
    while (n > 0) {
        ssize_t w = ::send(_fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= static_cast<size_t>(w);
    }
    return true;
}

namespace {
void set_socket_timeout(int fd, int option, std::chrono::milliseconds t) {
    timeval tv{static_cast<time_t>(t.count() / 1000),
               static_cast<suseconds_t>(t.count() % 1000 * 1000)};
    setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
}
}  // namespace

void stream_socket::set_read_timeout(std::chrono::milliseconds t) {
    set_socket_timeout(_fd, SO_RCVTIMEO, t);
}

void stream_socket::set_write_timeout(std::chrono::milliseconds t) {
    set_socket_timeout(_fd, SO_SNDTIMEO, t);
}

bool stream_socket::peer_closed() const {
    // Records OpenSSL has read but we have not are unread bytes, not a close.
    if (_tls && _tls->has_pending()) return false;
    pollfd pfd{_fd, POLLRDHUP, 0};
    if (::poll(&pfd, 1, 0) <= 0) return false;
    return (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

void stream_socket::shutdown() {
    ::shutdown(_fd, SHUT_RDWR);
}

void stream_socket::finish(int linger_ms) {
    send_close_notify();
    ::shutdown(_fd, SHUT_WR);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(linger_ms);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              deadline - std::chrono::steady_clock::now())
                              .count();
        if (left <= 0) return;
        pollfd pfd{_fd, POLLIN, 0};
        if (::poll(&pfd, 1, static_cast<int>(left)) <= 0) return;
        char buf[4096];
        if (::recv(_fd, buf, sizeof buf, MSG_DONTWAIT) <= 0) return;
    }
}

result<std::unique_ptr<blocking_server>> blocking_server::start(options opts, handler on_connection,
                                                                handler rejected) {
    auto s = open_listen_socket(opts.address, false);
    if (!s) return s.err();
    std::unique_ptr<blocking_server> srv(new blocking_server(
        std::move(opts), std::move(on_connection), std::move(rejected), s->fd, s->address));
    if (pipe2(srv->_wake, O_CLOEXEC) != 0) return {errc::io_error, std::strerror(errno)};
    srv->_backoff =
        std::make_unique<accept_backoff>(srv->_opts.name + " " + srv->_bound.to_string());
    srv->_acceptor = std::thread([p = srv.get()] { p->accept_loop(); });
    return srv;
}

blocking_server::blocking_server(options opts, handler h, handler rejected, int fd, host_port bound)
    : _opts(std::move(opts)),
      _handler(std::move(h)),
      _rejected(std::move(rejected)),
      _fd(fd),
      _bound(std::move(bound)) {}

blocking_server::~blocking_server() {
    stop();
    for (int& fd : _wake)
        if (fd >= 0) ::close(fd);
    if (_fd >= 0) ::close(_fd);
}

void blocking_server::reap_finished() {
    for (auto it = _conns.begin(); it != _conns.end();) {
        if (it->finished.load()) {
            it->thread.join();
            it = _conns.erase(it);
        } else {
            ++it;
        }
    }
}

bool blocking_server::wait_stop(std::chrono::milliseconds t) const {
    pollfd pfd{_wake[0], POLLIN, 0};
    return ::poll(&pfd, 1, static_cast<int>(t.count())) > 0;
}

void blocking_server::accept_loop() {
    for (;;) {
        pollfd pfds[2] = {{_fd, POLLIN, 0}, {_wake[0], POLLIN, 0}};
        if (::poll(pfds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            log_error(_opts.name, "poll: {}", std::strerror(errno));
            return;
        }
        if (pfds[1].revents) return;  // stop()
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        int fd = accept4(_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
        if (fd < 0) {
            const int err = errno;
            if (err == EINTR || err == ECONNABORTED || err == EAGAIN) continue;
            // EMFILE and the like: the client stays pending and poll() would return at
            // once; pause (stop() still wakes us), logging once per interval.
            _backoff->failed(err);
            if (wait_stop(accept_backoff::pause)) return;
            continue;
        }
        _backoff->succeeded();
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        // A client host that vanishes without a FIN would otherwise hold its thread and
        // session until stop(); keepalive probes end such connections.
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
        auto sock = std::make_unique<stream_socket>(fd, peer_name(ss));
        std::unique_lock lk(_mu);
        reap_finished();
        if (_stopped) return;
        admit(std::move(sock));
    }
}

size_t blocking_server::count(phase p) const {
    size_t n = 0;
    // Finished ones wait for the next accept to be reaped, but hold nothing.
    for (const auto& c : _conns) n += c.state == p && !c.evicted && !c.finished.load() ? 1 : 0;
    return n;
}

bool blocking_server::make_room() {
    if (count(phase::starting) < _opts.max_starting) return true;
    const auto now = std::chrono::steady_clock::now();
    conn* oldest = nullptr;
    for (auto& c : _conns) {
        if (c.state != phase::starting || c.evicted) continue;
        if (now - c.since < _opts.starting_grace && !_opts.evict_within_grace) continue;
        if (!oldest || c.since < oldest->since) oldest = &c;
    }
    if (!oldest) return false;
    oldest->evicted = true;
    oldest->socket->shutdown();  // its handler's reads fail, and its thread ends
    if (uint64_t quiet = 0; _refusals.allow(quiet))
        log_warn(_opts.name,
                 "{}: closed, still starting after {} ms while {} connections were starting "
                 "(the limit), to make room for a new one ({} refusals and such closes since "
                 "the last line)",
                 oldest->socket->peer(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(now - oldest->since).count(),
                 _opts.max_starting, quiet);
    return true;
}

size_t blocking_server::count_idle() const {
    size_t n = 0;
    for (const auto& c : _conns)
        n += c.state == phase::established && c.idle && !c.evicted && !c.finished.load() ? 1 : 0;
    return n;
}

bool blocking_server::evict_idle() {
    conn* oldest = nullptr;
    for (auto& c : _conns) {
        if (c.state != phase::established || !c.idle || c.evicted || c.finished.load()) continue;
        if (!oldest || c.since < oldest->since) oldest = &c;
    }
    if (!oldest) return false;
    oldest->evicted = true;
    oldest->socket->shutdown();  // its wait for a next request fails, and its thread ends
    if (uint64_t quiet = 0; _refusals.allow(quiet))
        log_info(_opts.name,
                 "{}: closed, idle for {} ms while every one of the {} connection slots was "
                 "taken, to serve a new client ({} refusals and such closes since the last "
                 "line)",
                 oldest->socket->peer(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - oldest->since)
                     .count(),
                 _opts.max_connections, quiet);
    return true;
}

void blocking_server::set_idle(conn& c, bool idle) {
    std::lock_guard lk(_mu);
    c.idle = idle;
    if (idle) c.since = std::chrono::steady_clock::now();
}

void blocking_server::admit(std::unique_ptr<stream_socket> sock) {
    // Every slot taken already, none of them by an idle connection: refused without
    // waiting for its startup (which would end refused anyway), as before the starting
    // phase had a cap of its own.
    const size_t open = count(phase::established);
    const bool full = open >= _opts.max_connections && count_idle() == 0;
    const bool refuse = full || !make_room();
    if (uint64_t quiet = 0; refuse && _refusals.allow(quiet)) {
        if (full) {
            log_warn(_opts.name, "{}: refused, {} connections open (the limit) ({} refusals "
                     "and closes since the last line)", sock->peer(), open, quiet);
        } else {
            log_warn(_opts.name,
                     "{}: refused, {} connections still starting (the limit), none for "
                     "longer than {} ms ({} refusals and closes since the last line)",
                     sock->peer(), _opts.max_starting, _opts.starting_grace.count(), quiet);
        }
    }
    if (refuse) {
        // A refusal reads the client's first request before answering, as a real
        // server would; a flood of them is cut short instead.
        if (!_rejected || count(phase::refused) >= max_refusing) return;
    }
    auto& c = _conns.emplace_back();
    c.socket = std::move(sock);
    c.state = refuse ? phase::refused : phase::starting;
    c.since = std::chrono::steady_clock::now();
    c.socket->on_establish([this, &c] { return establish(c); });
    c.socket->on_set_idle([this, &c](bool idle) { set_idle(c, idle); });
    try {
        c.thread = std::thread([this, &c] {
            (c.state == phase::refused ? _rejected : _handler)(*c.socket);
            c.socket->send_close_notify();  // on this thread, the socket's own
            c.socket->shutdown();
            c.finished.store(true);
        });
    } catch (const std::system_error& e) {
        // No thread to be had (resource limits): drop this one, keep serving.
        log_warn(_opts.name, "{}: refused, cannot start a thread: {}", c.socket->peer(), e.what());
        _conns.pop_back();
    }
}

bool blocking_server::establish(conn& c) {
    std::lock_guard lk(_mu);
    if (c.state == phase::established) return true;
    // A refused one (over max_starting) may still take a free slot once started.
    if (c.evicted) return false;
    if (const size_t open = count(phase::established);
        open >= _opts.max_connections && !evict_idle()) {
        if (uint64_t quiet = 0; _refusals.allow(quiet))
            log_warn(_opts.name, "{}: refused, {} connections open (the limit) ({} refusals "
                     "and closes since the last line)",
                     c.socket->peer(), open, quiet);
        return false;
    }
    c.state = phase::established;
    c.since = std::chrono::steady_clock::now();
    return true;
}

void blocking_server::stop() {
    {
        std::lock_guard lk(_mu);
        if (_stopped) return;
        _stopped = true;
        if (_wake[1] >= 0) {
            char b = 1;
            (void)!::write(_wake[1], &b, 1);
        }
    }
    if (_acceptor.joinable()) _acceptor.join();
    std::list<conn> conns;
    {
        std::lock_guard lk(_mu);
        for (auto& c : _conns) c.socket->shutdown();
        conns.splice(conns.end(), _conns);
    }
    for (auto& c : conns) c.thread.join();
}

}  // namespace sluice::net
