#include "sql/pg/pg_connection.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "common/logging.h"
#include "security/auth_metrics.h"
#include "security/gate.h"
#include "security/sasl.h"
#include "sql/pg/lexer.h"
#include "sql/pg/pg_server.h"
#include "sql/pg/types.h"

namespace sluice::sql::pg {

namespace {

// Output is sent at ReadyForQuery, Flush, before waiting for input, and whenever this
// much has piled up (a large result streams instead of being held in memory).
constexpr size_t flush_threshold = 64 * 1024;
// PostgreSQL's cap on the messages that carry no SQL or data (PQ_SMALL_MESSAGE_LIMIT).
constexpr uint32_t small_message_limit = 10'000;

uint32_t be32(const char* p) {
    return (static_cast<uint32_t>(static_cast<uint8_t>(p[0])) << 24) |
           (static_cast<uint32_t>(static_cast<uint8_t>(p[1])) << 16) |
           (static_cast<uint32_t>(static_cast<uint8_t>(p[2])) << 8) |
           static_cast<uint32_t>(static_cast<uint8_t>(p[3]));
}

bool is_large_message(char type) {
    return type == 'Q' || type == 'P' || type == 'B' || type == 'F' || type == 'd';
}

bool is_known_message(char type) {
    switch (type) {
        case 'Q':
        case 'P':
        case 'B':
        case 'D':
        case 'E':
        case 'C':
        case 'S':
        case 'H':
        case 'X':
        case 'F':
        case 'd':
        case 'c':
        case 'f':
            return true;
        default:
            return false;
    }
}

pg_error protocol_error(std::string message) {
    return {"08P01", std::move(message)};
}

// The only SASL mechanism offered: libpq and the drivers speak it, and it is what
// PostgreSQL itself offers (SCRAM-SHA-512 is not part of the PostgreSQL protocol).
constexpr std::string_view pg_sasl_mechanism = "SCRAM-SHA-256";
// A SCRAM exchange is client-first, server-first, client-final, server-final: more
// rounds than this is a broken client.
constexpr int max_sasl_rounds = 4;

}  // namespace

pg_connection::portal::~portal() {
    // A statement stepped part-way holds SQLite's read snapshot; let it go.
    if (stmt) stmt->reset();
}

pg_connection::pg_connection(net::stream_socket& sock, engine& eng, const pg_options& opts,
                             pg_server& server)
    : _sock(sock), _engine(eng), _opts(opts), _server(server) {}

pg_connection::~pg_connection() {
    // Statements first, then the registration a CancelRequest could reach, then the session.
    _portals.clear();
    _statements.clear();
    _ctx.reset();
    _settings.reset();
    if (_registered) _server.unregister_session(_pid);
    if (_session) _session->set_interrupt_check({});
    _session.reset();
}

// ---- I/O ----

bool pg_connection::flush() {
    if (_broken) return false;
    if (_out.empty()) return true;
    if (!_sock.write_all(_out)) {
        _broken = true;
        return false;
    }
    _out.clear();
    // A large row grew the buffer: give the memory back rather than keep it for the
    // connection's life, outside the SQL memory bound (sql/budget.h).
    if (_out.capacity() > 16 * flush_threshold) std::string().swap(_out);
    return true;
}

bool pg_connection::flush_if_large() {
    return _out.size() < flush_threshold || flush();
}

bool pg_connection::fill(size_t n) {
    while (_in.size() - _in_pos < n) {
        if (!flush()) return false;
        if (_in_pos > 0) {
            _in.erase(0, _in_pos);
            _in_pos = 0;
        }
        if (_read_deadline && !wait_readable()) return false;
        char buf[64 * 1024];
        size_t got = _sock.read_some(buf, sizeof buf);
        if (got == 0) return false;
        _in.append(buf, got);
    }
    return true;
}

bool pg_connection::wait_readable() {
    for (;;) {
        // Rounded up, so that a wait that ends finds the deadline passed.
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                              *_read_deadline - std::chrono::steady_clock::now())
                              .count();
        if (left <= 0) return false;
        if (_sock.is_tls()) {
            // OpenSSL may hold decrypted bytes that poll() cannot see: the socket's
            // receive timeout bounds the read instead.
            _sock.set_read_timeout(std::chrono::milliseconds(left));
            return true;
        }
        pollfd pfd{_sock.fd(), POLLIN, 0};
        const int r = ::poll(&pfd, 1, static_cast<int>(left));
        if (r > 0) return true;
        if (r < 0 && errno != EINTR) return false;
    }
}

bool pg_connection::read_message(char& type, std::string_view& body) {
    if (!fill(1)) return false;
    type = _in[_in_pos];
    // Check the type before trusting a length: garbage is rejected at its first byte.
    if (!is_known_message(type)) {
        protocol_violation(fmt::format("invalid frontend message type {}",
                                       static_cast<int>(static_cast<uint8_t>(type))));
        return false;
    }
    return read_body(type, body);
}

bool pg_connection::read_password_message(std::string_view& body) {
    if (!fill(1)) return false;
    const char type = _in[_in_pos];
    if (type == 'X') return false;  // the client gave up (psql asks for a password first)
    if (type != 'p') {
        protocol_violation(fmt::format("expected a password message, got message type {}",
                                       static_cast<int>(static_cast<uint8_t>(type))));
        return false;
    }
    return read_body(type, body);
}

bool pg_connection::read_body(char type, std::string_view& body) {
    if (!fill(5)) return false;
    uint32_t len = be32(_in.data() + _in_pos + 1);
    uint32_t cap = is_large_message(type) ? max_message_length : small_message_limit;
    if (len < 4 || len > cap) {
        protocol_violation(
            fmt::format("invalid message length {} for message type '{}'", len, type));
        return false;
    }
    if (!fill(1 + size_t{len})) return false;
    body = std::string_view(_in).substr(_in_pos + 5, len - 4);
    _in_pos += 1 + size_t{len};
    return true;
}

void pg_connection::fatal(const pg_error& e) {
    pg_error f = e;
    f.severity = "FATAL";
    put_error(_out, f);
    flush();
}

void pg_connection::protocol_violation(std::string_view why) {
    log_warn("pg", "{}: protocol violation: {}; closing", _sock.peer(), why);
    fatal(protocol_error(std::string(why)));
}

// ---- Startup ----

bool pg_connection::startup() {
    std::optional<startup_packet> pkt;
    // SSLRequest and GSSENCRequest each get 'N' once; then the real startup packet.
    for (int attempt = 0; attempt < 3; ++attempt) {
        if (!fill(4)) return false;
        uint32_t len = be32(_in.data() + _in_pos);
        if (len < 8 || len > max_startup_length) {
            protocol_violation(fmt::format("invalid length of startup packet: {}", len));
            return false;
        }
        if (!fill(len)) return false;
        pkt = decode_startup(std::string_view(_in).substr(_in_pos + 4, len - 4));
        _in_pos += len;
        if (!pkt) {
            protocol_violation("malformed startup packet");
            return false;
        }
        using kind = startup_packet::kind;
        if (pkt->what == kind::ssl_request && _opts.tls && !_sock.is_tls()) {
            if (!start_tls()) return false;
            continue;
        }
        if (pkt->what == kind::ssl_request || pkt->what == kind::gssenc_request) {
            // No TLS (or TLS already on) and no GSS encryption: the client goes on as it is.
            if (!_sock.write_all("N")) return false;
            continue;
        }
        if (pkt->what == kind::cancel) {
            bool found = _server.cancel(pkt->cancel_pid, pkt->cancel_secret);
            log_debug("pg", "{}: cancel request for pid {}{}", _sock.peer(), pkt->cancel_pid,
                      found ? "" : " (no such session)");
            return false;  // a CancelRequest gets no answer
        }
        if (pkt->what == kind::unsupported_version) {
            fatal({"0A000", fmt::format("unsupported frontend protocol {}.{}: server supports 3.0",
                                        pkt->version >> 16, pkt->version & 0xFFFF)});
            return false;
        }
        break;
    }
    if (!pkt || pkt->what != startup_packet::kind::startup) {
        protocol_violation("expected a startup packet");
        return false;
    }

    // Minor versions above 3.0 and protocol options (_pq_.*) are declined, not refused.
    std::vector<std::string> unknown_options;
    for (const auto& [k, v] : pkt->params) {
        if (k.rfind("_pq_.", 0) == 0) unknown_options.push_back(k);
        if (k == "user") _user = v;
    }
    if ((pkt->version & 0xFFFF) != 0 || !unknown_options.empty())
        put_negotiate_protocol_version(_out, 0, unknown_options);
    security::principal who;
    if (!authenticate(who)) return false;
    // Logged in: from here on the connection holds one of the sessions' slots.
    if (!_sock.establish()) {
        fatal({"53300", "sorry, too many clients already"});
        return false;
    }

    auto sess = _engine.open_session();
    if (!sess) {
        log_warn("pg", "{}: cannot open a session: {}", _sock.peer(), sess.error().message);
        fatal(to_pg_error(sess.error()));
        return false;
    }
    _session = std::move(*sess);
    _session->set_principal(who);
    _settings.emplace(*_session, _opts);
    _ctx.emplace(command_context{
        *_session, *_settings,
        [this](std::string_view name, std::string_view v) { put_parameter_status(_out, name, v); },
        [this](std::optional<std::string_view> name) {
            if (name)
                _statements.erase(std::string(*name));
            else
                _statements.clear();
        },
        _opts.server_version});

    if (!apply_startup_params(pkt->params)) return false;

    auto reg = _server.register_session(*_session);
    _pid = reg.pid;
    _registered = true;
    // A client that goes away cancels its query (checked every few ms of work).
    _session->set_interrupt_check([this] { return _sock.peer_closed(); });

    put_authentication_ok(_out);
    for (const auto& [name, v] : _settings->reported()) put_parameter_status(_out, name, v);
    put_backend_key_data(_out, reg.pid, reg.secret);
    put_ready_for_query(_out, 'I');
    log_debug("pg", "{}: connected as pid {} (user '{}'{}, database '{}'{})", _sock.peer(), _pid,
              _user, who.authenticated ? ", authenticated" : "", _database,
              _sock.is_tls() ? ", TLS" : "");
    return flush();
}

bool pg_connection::start_tls() {
    // Bytes the client sent after its SSLRequest, before our answer, would pass as if
    // they had come over TLS (CVE-2021-23214): a client must wait for the 'S'.
    if (_in.size() > _in_pos) {
        protocol_violation("data received after SSLRequest, before the TLS handshake");
        return false;
    }
    if (!_sock.write_all("S")) return false;
    // The handshake is part of the startup, and its time limit.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          *_read_deadline - std::chrono::steady_clock::now())
                          .count();
    _sock.set_read_timeout(std::chrono::milliseconds(std::max<int64_t>(left, 1)));
    if (auto r = _sock.start_tls_server(*_opts.tls); !r) {
        log_warn("pg", "{}: TLS handshake failed: {}", _sock.peer(), r.err().message);
        return false;
    }
    return true;
}

// ---- Authentication ----

bool pg_connection::authenticate(security::principal& who) {
    if (!_opts.gate || !_opts.gate->authentication_required()) return true;  // trust: ANONYMOUS
    // Over TLS the password itself may travel (checked against every stored credential,
    // SCRAM-SHA-512 ones included); in plain text only a SCRAM proof does. The choice
    // depends on the connection alone, so it says nothing about the user.
    const login l = _sock.is_tls() ? password_login() : scram_login();
    if (l.what == login::outcome::ok) {
        who = security::principal{_user, true};
        return true;
    }
    if (l.what == login::outcome::gone) {
        log_debug("pg", "{}: left during authentication (user '{}')", _sock.peer(), _user);
        return false;
    }
    log_warn("pg", "{}: authentication of user '{}' failed ({}): {}", _sock.peer(), _user,
             _sock.is_tls() ? "password over TLS" : pg_sasl_mechanism, l.reason);
    security::count_authentication_failure("pg", _sock.is_tls() ? "password" : pg_sasl_mechanism);
    // One message whatever the reason, as PostgreSQL does: an unknown user and a wrong
    // password look alike.
    fatal({"28P01", fmt::format("password authentication failed for user \"{}\"", _user)});
    return false;
}

pg_connection::login pg_connection::scram_login() {
    put_authentication_sasl(_out, {pg_sasl_mechanism});
    std::string_view body;
    if (!read_password_message(body)) return {login::outcome::gone, {}};
    sasl_initial_msg first;
    if (!decode(body, first)) {
        protocol_violation("malformed SASLInitialResponse message");
        return {login::outcome::gone, {}};
    }
    if (first.mechanism != pg_sasl_mechanism)
        return {login::outcome::failed,
                fmt::format("the client chose SASL mechanism '{}'", first.mechanism)};
    // PostgreSQL clients leave the SCRAM user name empty: the startup packet's is meant.
    auto server = security::make_sasl_server(pg_sasl_mechanism, _opts.gate->credentials(), _user);
    if (!server) return {login::outcome::failed, "SCRAM-SHA-256 is not available"};
    std::string_view message = first.data;  // points into _in until the next read
    for (int round = 0; round < max_sasl_rounds; ++round) {
        auto step = server->step(message);
        using step_outcome = security::sasl_server::step_result::outcome;
        if (step.result == step_outcome::failure) return {login::outcome::failed, step.reason};
        if (step.result == step_outcome::success) {
            if (server->user() != _user)
                return {login::outcome::failed,
                        fmt::format("the SCRAM exchange named user '{}'", server->user())};
            put_authentication_sasl_final(_out, step.response);
            return {login::outcome::ok, {}};
        }
        put_authentication_sasl_continue(_out, step.response);
        if (!read_password_message(body)) return {login::outcome::gone, {}};
        message = body;
    }
    return {login::outcome::failed, "too many SCRAM messages"};
}

pg_connection::login pg_connection::password_login() {
    put_authentication_cleartext_password(_out);
    std::string_view body, password;
    if (!read_password_message(body)) return {login::outcome::gone, {}};
    if (!decode_password(body, password)) {
        protocol_violation("malformed password message");
        return {login::outcome::gone, {}};
    }
    auto why = security::check_password(_opts.gate->credentials(), _user, password);
    if (why.empty()) return {login::outcome::ok, {}};
    return {login::outcome::failed, std::move(why)};
}

bool pg_connection::apply_startup_params(
    const std::vector<std::pair<std::string, std::string>>& params) {
    // Every other startup parameter is a run-time parameter, as in PostgreSQL; "options"
    // carries more of them as "-c name=value" or "--name=value".
    std::vector<std::pair<std::string, std::string>> sets;
    for (const auto& [k, v] : params) {
        if (k == "user") {
            _user = v;
        } else if (k == "database") {
            _database = v;
        } else if (k == "options") {
            std::string_view rest = v;
            size_t i = 0;
            while (i < rest.size()) {
                while (i < rest.size() && rest[i] == ' ') ++i;
                size_t j = rest.find(' ', i);
                if (j == std::string_view::npos) j = rest.size();
                std::string_view opt = rest.substr(i, j - i);
                i = j;
                if (opt == "-c") continue;  // the next word is name=value
                if (opt.rfind("--", 0) == 0) opt.remove_prefix(2);
                if (opt.rfind("-c", 0) == 0) opt.remove_prefix(2);
                auto eq = opt.find('=');
                if (eq == std::string_view::npos) continue;
                std::string name(opt.substr(0, eq));
                std::replace(name.begin(), name.end(), '-', '_');
                sets.emplace_back(name, std::string(opt.substr(eq + 1)));
            }
        } else if (k != "replication" && k.rfind("_pq_.", 0) != 0) {
            sets.emplace_back(k, v);
        }
    }
    for (const auto& [k, v] : sets) {
        std::optional<std::string> val = v;
        if (auto err = _settings->check(k, val)) {
            log_warn("pg", "{}: startup parameter {}={} refused: {}", _sock.peer(), k, v,
                     err->message);
            fatal(*err);
            return false;
        }
        _settings->apply(k, val);
    }
    return true;
}

// ---- The message loop ----

bool pg_connection::deadline_passed() const {
    return _read_deadline && std::chrono::steady_clock::now() >= *_read_deadline;
}

// Waits for the first byte of the next message, at most idle_session_timeout; false when
// the client left, or (after a FATAL naming the timeout) stayed silent.
bool pg_connection::wait_for_message() {
    const auto idle = _opts.idle_session_timeout;
    if (idle.count() <= 0 || _in.size() > _in_pos) return true;
    _read_deadline = std::chrono::steady_clock::now() + idle;
    const bool got = fill(1);
    const bool timed_out = !got && deadline_passed();
    _read_deadline.reset();
    if (_sock.is_tls()) _sock.set_read_timeout(std::chrono::milliseconds(0));
    if (!timed_out) return got;
    const bool in_tx = _session->in_transaction() || _tx_failed;
    log_info("pg", "{}: pid {} idle{} for {} ms; closing", _sock.peer(), _pid,
             in_tx ? " in a transaction" : "", idle.count());
    // PostgreSQL's idle_in_transaction_session_timeout and idle_session_timeout.
    fatal(in_tx ? pg_error{"25P03", "terminating connection due to idle-in-transaction timeout"}
                : pg_error{"57P05", "terminating connection due to idle-session timeout"});
    return false;
}

void pg_connection::run() {
    _read_deadline = std::chrono::steady_clock::now() + _opts.startup_timeout;
    if (!startup()) {
        if (deadline_passed())
            log_warn("pg", "{}: no complete startup within {} ms; closing", _sock.peer(),
                     _opts.startup_timeout.count());
        return;
    }
    _read_deadline.reset();
    if (_sock.is_tls())
        _sock.set_read_timeout(std::chrono::milliseconds(0));  // queries may be far apart
    for (;;) {
        char type = 0;
        std::string_view body;
        if (!wait_for_message()) break;
        if (!read_message(type, body)) break;
        if (type == 'X') break;
        if (!dispatch(type, body)) break;
        if (_broken) break;
    }
    log_debug("pg", "{}: pid {} disconnected", _sock.peer(), _pid);
}

bool pg_connection::dispatch(char type, std::string_view body) {
    if (type == 'S') {
        on_sync();
        return flush();
    }
    if (type == 'H') return flush();
    // After an error in the extended protocol, everything up to Sync is discarded.
    if (_skip_until_sync) return true;
    switch (type) {
        case 'Q': {
            std::string_view sql;
            if (!decode_query(body, sql)) {
                protocol_violation("malformed Query message");
                return false;
            }
            simple_query(sql);
            return true;
        }
        case 'P':
            return on_parse(body);
        case 'B':
            return on_bind(body);
        case 'D':
            return on_describe(body);
        case 'E':
            return on_execute(body);
        case 'C':
            return on_close(body);
        case 'F':
            send_error({"0A000", "the function call protocol is not supported"}, false);
            put_ready_for_query(_out, tx_status());
            return true;
        default:
            // CopyData, CopyDone, CopyFail outside COPY: ignored, as PostgreSQL does.
            return true;
    }
}

// ---- Simple query protocol ----

void pg_connection::simple_query(std::string_view sql) {
    bool any = false;
    bool failed = false;
    std::string_view rest = sql.substr(skip_separators(sql));
    while (!rest.empty() && !_broken) {
        std::string_view tail;
        auto r = prepare_query(*_ctx, rest, &tail);
        if (auto* e = std::get_if<pg_error>(&r)) {
            send_error(*e, _session->in_transaction());
            failed = true;
            break;
        }
        auto& q = std::get<prepared_query>(r);
        if (!q.stmt) break;  // only comments were left
        any = true;
        bool ok = run_simple(q);
        q.stmt.reset();
        if (!ok) {
            failed = true;  // the rest of the string is skipped
            break;
        }
        if (tail.data() == rest.data()) break;  // no progress: stop rather than loop
        rest = tail.substr(skip_separators(tail));
    }
    if (!any && !failed) put_empty(_out, empty_query_response);
    drop_portals_outside_transaction();
    put_ready_for_query(_out, tx_status());
    flush();
}

bool pg_connection::run_simple(prepared_query& q) {
    auto gate = check_tx(q.info);
    if (gate.what == tx_gate::action::reject) {
        send_error(gate.error, true);
        return false;
    }
    if (gate.what == tx_gate::action::skip) {
        if (gate.notice) put_notice(_out, *gate.notice);
        put_command_complete(_out, gate.tag);
        return true;
    }
    if (q.info.copy != copy_format::none) return run_copy_out(q);
    bool was_in_tx = _session->in_transaction();
    statement& st = *q.stmt;
    const auto& cols = st.columns();
    auto s = st.step();
    int64_t rows = 0;
    if (s != statement::step_state::failed && !cols.empty()) {
        // The first row is stepped before RowDescription so expressions get types.
        auto oids = choose_oids(cols, s == statement::step_state::row ? &st.row() : nullptr);
        put_row_description(_out, fields_for(cols, oids, nullptr));
        while (s == statement::step_state::row) {
            pg_error err;
            if (!put_data_row(st.row(), oids, nullptr, err)) {
                st.reset();
                send_error(err, was_in_tx);
                return false;
            }
            ++rows;
            if (!flush_if_large()) return false;
            s = st.step();
        }
    }
    while (s == statement::step_state::row) s = st.step();  // rows of a statement without columns
    if (s == statement::step_state::failed) {
        send_error(to_pg_error(st.error()), was_in_tx);
        return false;
    }
    succeeded(q.info);
    put_command_complete(_out, command_tag(q.info, st, rows));
    return true;
}

// ---- Shared by both protocols ----

pg_connection::tx_gate pg_connection::check_tx(const query_info& info) {
    tx_gate g;
    bool in_tx = _session->in_transaction();
    if (_tx_failed) {
        switch (info.tx) {
            case tx_effect::rollback_to:
                return g;
            case tx_effect::rollback:
                if (in_tx) return g;
                // SQLite already ended the transaction; only our 'E' is left to clear.
                g.what = tx_gate::action::skip;
                g.tag = "ROLLBACK";
                _tx_failed = false;
                return g;
            case tx_effect::commit:
                // COMMIT of a failed transaction rolls it back, as in PostgreSQL.
                if (in_tx) {
                    auto rb = _session->prepare("ROLLBACK");
                    if (rb && *rb) (void)(*rb)->step();
                }
                g.what = tx_gate::action::skip;
                g.tag = "ROLLBACK";
                _tx_failed = false;
                return g;
            default:
                g.what = tx_gate::action::reject;
                g.error = {"25P02",
                           "current transaction is aborted, commands ignored until end of "
                           "transaction block"};
                return g;
        }
    }
    if (info.tx == tx_effect::begin && in_tx) {
        g.what = tx_gate::action::skip;
        g.tag = "BEGIN";
        g.notice = pg_error{"25001", "there is already a transaction in progress", "WARNING"};
    } else if ((info.tx == tx_effect::commit || info.tx == tx_effect::rollback) && !in_tx) {
        g.what = tx_gate::action::skip;
        g.tag = info.tx == tx_effect::commit ? "COMMIT" : "ROLLBACK";
        g.notice = pg_error{"25P01", "there is no transaction in progress", "WARNING"};
    }
    return g;
}

void pg_connection::succeeded(const query_info& info) {
    if (info.tx == tx_effect::rollback || info.tx == tx_effect::rollback_to ||
        info.tx == tx_effect::commit)
        _tx_failed = false;
}

void pg_connection::send_error(const pg_error& e, bool was_in_transaction) {
    put_error(_out, e);
    if (was_in_transaction || _session->in_transaction()) _tx_failed = true;
}

char pg_connection::tx_status() const {
    if (_tx_failed) return 'E';
    return _session->in_transaction() ? 'T' : 'I';
}

std::vector<uint32_t> pg_connection::choose_oids(const std::vector<column>& cols,
                                                 const std::vector<value>* first_row) const {
    std::vector<uint32_t> oids;
    oids.reserve(cols.size());
    for (size_t i = 0; i < cols.size(); ++i) {
        std::optional<uint32_t> o = oid_for_decl_type(cols[i].decl_type);
        if (!o && first_row && i < first_row->size()) o = oid_for_value((*first_row)[i]);
        oids.push_back(o.value_or(oid::text));  // NULL only, or no rows: text
    }
    return oids;
}

std::vector<field_desc> pg_connection::fields_for(const std::vector<column>& cols,
                                                  const std::vector<uint32_t>& oids,
                                                  const std::vector<int16_t>* formats) {
    std::vector<field_desc> fields;
    fields.reserve(cols.size());
    for (size_t i = 0; i < cols.size(); ++i) {
        // A modifier only with the type it belongs to (a column typed by its values has none).
        const auto& decl = cols[i].decl_type;
        const int32_t typmod =
            oids[i] == oid_for_decl_type(decl) ? type_modifier_for_decl(decl) : -1;
        fields.push_back({cols[i].name, oids[i], type_size(oids[i]),
                          formats ? (*formats)[i] : int16_t{0}, typmod});
    }
    return fields;
}

bool pg_connection::put_data_row(const std::vector<value>& row, const std::vector<uint32_t>& oids,
                                 const std::vector<int16_t>* formats, pg_error& err) {
    size_t mark = _out.size();
    bool ok = true;
    {
        msg_writer w(_out, 'D');
        w.i16(static_cast<int16_t>(oids.size()));
        for (size_t i = 0; i < oids.size() && ok; ++i) {
            static const value null_value;
            const value& v = i < row.size() ? row[i] : null_value;
            ok = append_cell(_out, v, oids[i], formats ? (*formats)[i] : int16_t{0}, err);
        }
    }
    if (!ok) _out.resize(mark);
    return ok;
}

void pg_connection::drop_portals_outside_transaction() {
    // Portals end with their transaction, as in PostgreSQL.
    if (!_session->in_transaction()) _portals.clear();
}

}  // namespace sluice::sql::pg
