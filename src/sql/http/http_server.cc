#include "sql/http/http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "common/logging.h"
#include "security/auth_metrics.h"
#include "security/gate.h"
#include "security/sasl.h"

namespace sluice::sql {
namespace {

// The "kind" of an error answered by the HTTP layer itself (docs/sql-http.md).
const char* kind_for_status(int status) {
    switch (status) {
        case 401:
            return "unauthorized";
        case 403:
            return "forbidden";
        case 404:
            return "not_found";
        case 405:
            return "method_not_allowed";
        case 408:
            return "request_timeout";
        case 411:
            return "length_required";
        case 413:
            return "too_large";
        case 414:
            return "uri_too_long";
        case 417:
            return "expectation_failed";
        case 431:
            return "headers_too_large";
        case 500:
            return "internal";
        case 501:
            return "not_implemented";
        case 503:
            return "unavailable";
        case 505:
            return "version_not_supported";
        default:
            return "bad_request";
    }
}

// After an error that ends the connection the client may still be sending (the rest of
// an oversized head or body): how long to read and drop it so that our response is read
// first (RFC 9112 section 9.6; stream_socket::finish).
constexpr int lingering_close_ms = 2000;

// An entry of http_options::anonymous_paths: exact, or a prefix when it ends in "/*".
bool anonymous_path_matches(std::string_view entry, std::string_view path) {
    if (entry.size() >= 2 && entry.ends_with("/*"))
        return path.starts_with(entry.substr(0, entry.size() - 1));
    return entry == path;
}

// The challenge of every 401 (RFC 7617).
const http::header_list basic_challenge = {{"WWW-Authenticate", "Basic realm=\"sluice\""}};

// Connections still sending their first request head may be this many times the slots:
// they hold a thread each, no session, and a real client leaves the phase within a round
// trip or two, so clients that never send a head need many to keep one out.
constexpr size_t starting_per_slot = 4;

// How long a client over the limit of starting connections has to send its request
// head, which is then served if a slot is free, else answered 503.
constexpr std::chrono::milliseconds refused_head_timeout{2000};

using steady = std::chrono::steady_clock;

// Reads of a connection, with a deadline while one is set: each read waits at most until
// it (and never longer than the stall timeout), and `expired` says that it passed.
struct deadline_reader {
    net::stream_socket& sock;
    std::chrono::milliseconds stall;
    std::optional<steady::time_point> deadline;
    bool expired = false;

    size_t operator()(char* buf, size_t n) {
        if (deadline) {
            const auto left =
                std::chrono::ceil<std::chrono::milliseconds>(*deadline - steady::now());
            if (left.count() <= 0) {
                expired = true;
                return 0;
            }
            sock.set_read_timeout(std::min(stall, left));
        }
        const size_t got = sock.read_some(buf, n);
        if (got == 0 && deadline && steady::now() >= *deadline) expired = true;
        return got;
    }
    void clear() {
        if (!deadline) return;
        deadline.reset();
        sock.set_read_timeout(stall);
    }
};

}  // namespace

http_server::http_server(engine& eng, http_options opts) : _eng(eng), _opts(std::move(opts)) {}

http_server::~http_server() {
    stop();
}

result<std::unique_ptr<http_server>> http_server::start(const net::host_port& addr, engine& eng,
                                                        http_options opts) {
    std::unique_ptr<http_server> srv(new http_server(eng, std::move(opts)));
    http_server* self = srv.get();
    srv->add_route("POST", "/v1/sql", [self](const auto& req, auto& resp) {
        http::handle_sql(self->_eng, self->_opts.sql, req, resp);
    });
    srv->add_route("GET", "/v1/health", [](const auto&, auto& resp) {
        resp.send(200, "application/json", "{\"status\":\"ok\"}\n");
    });
    net::blocking_server::options bo;
    bo.address = addr;
    bo.name = "http";
    bo.max_connections = srv->_opts.max_connections;
    // A connection takes a slot once its first request head is in (serve), as a pg
    // session does once logged in: clients that connect and send nothing, or trickle,
    // are starting, and the oldest of them gives way to a new client; between requests
    // a connection is idle, and gives its slot to a new client when all are taken.
    bo.max_starting = starting_per_slot * srv->_opts.max_connections;
    // When they are all taken, a new client replaces the oldest, however young: a real
    // client sends its head at once after connecting (or after the TLS handshake's two
    // round trips), so it is the oldest of hundreds only under a flood of connections.
    bo.evict_within_grace = true;
    auto s = net::blocking_server::start(
        std::move(bo),
        [self](net::stream_socket& sock) { self->serve(sock, self->_opts.header_timeout); },
        [self](net::stream_socket& sock) {
            self->serve(sock, std::min(self->_opts.header_timeout, refused_head_timeout));
        });
    if (!s) return s.err();
    srv->_server = std::move(*s);
    return srv;
}

void http_server::add_route(std::string method, std::string path, route_handler h) {
    _router.add(std::move(method), std::move(path), std::move(h));
}

const net::host_port& http_server::address() const {
    return _server->address();
}

void http_server::stop() {
    if (_server) _server->stop();
}

void http_server::serve(net::stream_socket& sock, std::chrono::milliseconds first_head_timeout) {
    deadline_reader read{sock, _opts.io_timeout, steady::now() + first_head_timeout};
    sock.set_write_timeout(_opts.io_timeout);
    if (_opts.tls) {
        // The first head's deadline bounds the handshake too.
        sock.set_read_timeout(std::min(_opts.io_timeout, first_head_timeout));
        if (auto r = sock.start_tls_server(*_opts.tls); !r) {
            log_debug("http", "{}: TLS handshake failed: {}", sock.peer(), r.err().message);
            return;
        }
    }
    // Mutual TLS: the client certificate verified in the handshake, if any.
    const std::optional<std::string> cert_user = sock.peer_common_name();
    http::buffered_reader in(std::ref(read));
    auto write = [&sock](std::string_view d) { return sock.write_all(d); };
    auto closed = [&sock] { return sock.peer_closed(); };
    for (bool first = true;; first = false) {
        // After the first request: idle under the stall timeout, then the head's deadline
        // from its first byte.
        if (!first) {
            sock.set_idle(true);
            const bool more = in.peek() >= 0;
            sock.set_idle(false);
            if (!more) return;
            read.deadline = steady::now() + _opts.header_timeout;
        }
        http::http_request req;
        auto r = http::read_request_head(in, req, _opts.limits);
        const auto head_timeout = first ? first_head_timeout : _opts.header_timeout;
        if (r.what != http::read_result::kind::error && read.expired) {
            log_info("http", "{}: no complete request head within {} ms; answering 408",
                     sock.peer(), head_timeout.count());
            r = {http::read_result::kind::error, 408,
                 fmt::format("the request head was not complete within {} ms",
                             head_timeout.count())};
        }
        read.clear();
        // The first request head is in: the connection takes a slot, or the client is
        // answered 503 when every one is taken by a connection that is not idle.
        if (first && r.what == http::read_result::kind::request && !sock.establish())
            r = {http::read_result::kind::error, 503,
                 "too many open HTTP connections; retry later"};
        if (r.what == http::read_result::kind::request) {
            r = http::read_request_body(in, req, _opts.limits, [&] {
                // Expect: 100-continue (curl sends it with bodies over 1 KiB).
                sock.write_all("HTTP/1.1 100 Continue\r\n\r\n");
            });
        }
        if (r.what == http::read_result::kind::closed) return;
        if (r.what == http::read_result::kind::error) {
            log_debug("http", "{}: {} ({})", sock.peer(), r.status, r.message);
            http::http_response resp(write, closed, false);
            resp.send_error(r.status, kind_for_status(r.status), r.message);
            sock.finish(lingering_close_ms);
            return;
        }
        http::http_response resp(write, closed, req.keep_alive(), req.minor_version >= 1);
        if (req.method == "HEAD") resp.set_head_only();
        dispatch(req, resp, sock.is_tls(), cert_user);
        if (!resp.finished()) {
            // A handler that answered nothing is a bug; one that started a stream and
            // did not end it leaves the framing open, so the connection must end.
            if (resp.started()) return;
            resp.send_error(500, "internal", "the handler sent no response");
        }
        if (!resp.ok() || !resp.keep_alive()) return;
    }
}

bool http_server::authenticate(http::http_request& req, http::http_response& resp, bool tls,
                               const std::optional<std::string>& cert_user) const {
    // A verified client certificate names the principal, as on an SSL listener, unless
    // the request sends Basic credentials (checked below when logins are required).
    auto header = req.header("authorization");
    if (cert_user && !header) {
        req.principal = security::principal{*cert_user, true};
        req.principal_from_certificate = true;
        return true;
    }
    if (!_opts.gate || !_opts.gate->authentication_required()) return true;  // ANONYMOUS
    // Load balancers probe health without credentials; it tells nothing about the data.
    if ((req.method == "GET" || req.method == "HEAD") &&
        std::any_of(_opts.anonymous_paths.begin(), _opts.anonymous_paths.end(),
                    [&](const std::string& p) { return anonymous_path_matches(p, req.path); }))
        return true;
    // A script (the console's fetch(), marked X-Requested-With as jQuery and others do)
    // shows its own login form: without the challenge, browsers ask nothing themselves.
    const bool script = req.header("x-requested-with").has_value();
    auto refuse = [&](std::string_view message) {
        resp.send_error(401, kind_for_status(401), message, {},
                        script ? http::header_list{} : basic_challenge);
        return false;
    };
    if (!tls)
        return refuse(
            "this broker requires authentication, accepted over TLS only: use https:// with "
            "Basic credentials");
    if (!header)
        return refuse(_opts.tls->settings().client_auth == net::tls_settings::client_auth_mode::none
                          ? "authentication required: send Basic credentials"
                          : "authentication required: send Basic credentials or a client "
                            "certificate");
    auto creds = http::parse_basic_authorization(*header);
    if (!creds) return refuse("the Authorization header must hold Basic credentials");
    if (auto why =
            security::check_password(_opts.gate->credentials(), creds->user, creds->password);
        !why.empty()) {
        log_warn("http", "authentication failed: {}", why);
        security::count_authentication_failure("http", "basic");
        // One message whatever the reason: an unknown user and a wrong password look alike.
        return refuse("invalid user name or password");
    }
    req.principal = security::principal{creds->user, true};
    return true;
}

void http_server::dispatch(http::http_request& req, http::http_response& resp, bool tls,
                           const std::optional<std::string>& cert_user) {
    if (!authenticate(req, resp, tls, cert_user)) return;
    auto m = _router.find(req.method, req.path);
    // HEAD is GET without the body (RFC 9110 section 9.3.2) unless a route says otherwise.
    if (!m.handler && req.method == "HEAD") {
        auto get = _router.find("GET", req.path);
        if (get.handler) m = std::move(get);
    }
    log_debug("http", "{} {}", req.method, req.target);
    if (!m.handler) {
        if (m.status == 405) {
            resp.send_error(
                405, kind_for_status(405),
                req.method + " is not allowed on " + req.path + " (allowed: " + m.allow + ")", {},
                {{"Allow", m.allow}});
        } else {
            resp.send_error(404, kind_for_status(404), "no endpoint at " + req.path);
        }
        return;
    }
    req.path_suffix = std::move(m.suffix);
    try {
        (*m.handler)(req, resp);
    } catch (const std::exception& e) {
        // The connection's thread must not die with an exception (STYLE.md: only the
        // unrecoverable throws); answer 500 when still possible.
        log_error("http", "{} {}: {}", req.method, req.path, e.what());
        if (!resp.started()) resp.send_error(500, "internal", e.what());
    }
}

void send_error(http::http_response& resp, const error& e) {
    int status = 500;
    const char* kind = "internal";
    switch (e.code) {
        case errc::invalid_argument:
            status = 400, kind = "invalid";
            break;
        case errc::not_found:
            status = 404, kind = "not_found";
            break;
        case errc::already_exists:
            status = 409, kind = "already_exists";
            break;
        case errc::timed_out:
            status = 503, kind = "busy";
            break;
        default:
            break;
    }
    resp.send_error(status, kind, e.message);
}

bool authorize(const http_server& server, const http::http_request& req, http::http_response& resp,
               security::action a, const security::resource& r, std::string_view component) {
    const security::gate* gate = server.gate();
    if (!gate || gate->allowed(req.principal, a, r)) return true;
    const auto message = fmt::format("{} may not {} {}", req.principal.to_string(),
                                     security::action_name(a), security::resource_name(r));
    log_warn(component, "{} {} refused: {}", req.method, req.path, message);
    resp.send_error(403, "forbidden", message);
    return false;
}

bool authorize_cluster(const http_server& server, const http::http_request& req,
                       http::http_response& resp, security::action a, std::string_view component) {
    return authorize(server, req, resp, a, {security::resource_kind::cluster, {}}, component);
}

}  // namespace sluice::sql
