#include "sql/pg/pg_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <random>

#include "common/logging.h"
#include "sql/pg/pg_connection.h"
#include "sql/pg/pg_messages.h"

namespace sluice::sql {

namespace {

// How long a refused client gets to read its error before the socket closes.
constexpr int refuse_linger_ms = 100;

// How long a refused client has to send its startup packet.
constexpr int refuse_read_timeout_ms = 2000;
// Kafka-style magic numbers of PostgreSQL's pre-startup requests.
constexpr int32_t ssl_request_code = 80877103;
constexpr int32_t gssenc_request_code = 80877104;

// Reads the client's startup packet, answering SSLRequest ('S' and the handshake when
// TLS is on, else 'N') and GSSENCRequest ('N') first, as PostgreSQL does before it
// refuses a client over max_connections. False when the client sends nothing sensible
// in time.
bool read_startup(net::stream_socket& sock, const net::tls_context* tls) {
    // However slowly the bytes trickle in, the whole exchange ends by the deadline.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(refuse_read_timeout_ms);
    auto read_exact = [&](void* buf, size_t n) {
        auto* p = static_cast<char*>(buf);
        while (n > 0) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return false;
            sock.set_read_timeout(left);
            const size_t got = sock.read_some(p, n);
            if (got == 0) return false;
            p += got;
            n -= got;
        }
        return true;
    };
    sock.set_read_timeout(std::chrono::milliseconds(refuse_read_timeout_ms));
    for (int round = 0; round < 3; ++round) {
        uint8_t head[8];
        if (!read_exact(head, sizeof head)) return false;
        const int32_t len = (head[0] << 24) | (head[1] << 16) | (head[2] << 8) | head[3];
        const int32_t code = (head[4] << 24) | (head[5] << 16) | (head[6] << 8) | head[7];
        if (code == ssl_request_code && tls && !sock.is_tls()) {
            if (!sock.write_all("S") || !sock.start_tls_server(*tls)) return false;
            continue;
        }
        if (code == ssl_request_code || code == gssenc_request_code) {
            if (!sock.write_all("N")) return false;
            continue;
        }
        if (len < 8 || len > 10000) return false;
        std::string rest(static_cast<size_t>(len - 8), '\0');
        return read_exact(rest.data(), rest.size());
    }
    return false;
}

// Runs on its own thread for a connection over the limit: PostgreSQL's answer to the
// startup packet.
void refuse(net::stream_socket& sock, const net::tls_context* tls) {
    if (!read_startup(sock, tls)) return;
    std::string out;
    pg::put_error(out, {"53300", "sorry, too many clients already", "FATAL"});
    if (sock.write_all(out)) sock.finish(refuse_linger_ms);
}

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Backend "process ids" are connection numbers from a random start, so that two
// servers (or restarts) rarely hand out the same pid; they only name a session for
// CancelRequest, together with the secret.
constexpr int32_t first_pid_floor = 1000;
constexpr int32_t first_pid_span = 1 << 20;

}  // namespace

pg_server::pg_server(engine& eng, pg_options opts) : _engine(eng), _opts(std::move(opts)) {
    std::random_device rd;
    _rng_state = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    _next_pid = first_pid_floor + static_cast<int32_t>(splitmix64(_rng_state) % first_pid_span);
}

result<std::unique_ptr<pg_server>> pg_server::start(const net::host_port& addr, engine& eng,
                                                    pg_options opts) {
    std::unique_ptr<pg_server> srv(new pg_server(eng, std::move(opts)));
    net::blocking_server::options bo;
    bo.address = addr;
    bo.name = "pg";
    bo.max_connections = srv->_opts.max_connections;
    bo.max_starting = srv->_opts.max_starting;
    auto* self = srv.get();
    auto s = net::blocking_server::start(
        std::move(bo), [self](net::stream_socket& sock) { self->serve(sock); },
        [tls = srv->_opts.tls](net::stream_socket& sock) { refuse(sock, tls.get()); });
    if (!s) return s.err();
    srv->_server = std::move(*s);
    return srv;
}

pg_server::~pg_server() {
    stop();
}

const net::host_port& pg_server::address() const {
    return _server->address();
}

void pg_server::stop() {
    if (_server) _server->stop();
}

void pg_server::serve(net::stream_socket& sock) {
    ++_connections;
    try {
        pg::pg_connection conn(sock, _engine, _opts, *this);
        conn.run();
    } catch (const std::exception& e) {
        // Nothing is expected to throw; a bug must not take the broker down.
        log_error("pg", "{}: connection failed: {}", sock.peer(), e.what());
    } catch (...) {
        log_error("pg", "{}: connection failed", sock.peer());
    }
    --_connections;
}

pg_server::registration pg_server::register_session(session& s) {
    std::lock_guard lk(_mu);
    registration r;
    do {
        r.pid = _next_pid;
        _next_pid = _next_pid == INT32_MAX ? first_pid_floor : _next_pid + 1;
    } while (_sessions.count(r.pid));
    r.secret = static_cast<int32_t>(splitmix64(_rng_state));
    _sessions[r.pid] = entry{r.secret, &s};
    return r;
}

void pg_server::unregister_session(int32_t pid) {
    std::lock_guard lk(_mu);
    _sessions.erase(pid);
}

bool pg_server::cancel(int32_t pid, int32_t secret) {
    // Under the lock: a session unregisters (under it too) before it is destroyed.
    std::lock_guard lk(_mu);
    auto it = _sessions.find(pid);
    if (it == _sessions.end() || it->second.secret != secret) return false;
    it->second.sess->cancel();
    return true;
}

}  // namespace sluice::sql
