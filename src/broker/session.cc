#include "broker/session.h"

#include "broker/api_table.h"
#include "broker/broker.h"
#include "broker/broker_metrics.h"
#include "common/clock.h"
#include "common/endian.h"
#include "common/logging.h"
#include "net/log_throttle.h"
#include "protocol/error_code.h"
#include "protocol/messages/api_versions.h"
#include "security/auth_metrics.h"

namespace sluice::broker {

session::session(broker& b, std::shared_ptr<net::connection> conn, size_t listener)
    : _broker(b),
      _conn(std::move(conn)),
      _listener(listener),
      // The account lives and dies with the session, so `this` outlives its calls.
      _in_flight(b.in_flight(), [this] { update_reading(); }) {}

const listener_config& session::listener_cfg() const {
    return _broker.listener(_listener);
}

uint64_t session::reserve(size_t bytes) {
    _slots.emplace_back();
    _slots.back().request_bytes = bytes;
    _slot_bytes += bytes;
    _in_flight.add(bytes);
    const auto& c = _broker.config();
    if (_slots.size() >= c.max_in_flight_per_connection ||
        _slot_bytes >= c.max_in_flight_bytes_per_connection)
        _over_own_limit = true;
    update_reading();
    return _head + _slots.size() - 1;
}

void session::update_reading() {
    if (_phase == sasl_phase::failed || closed()) return;
    if (_over_own_limit) {
        _conn->pause_reading();
        return;
    }
    const bool was_in_line = _in_flight.in_line();
    if (_in_flight.may_read()) {
        _conn->resume_reading();
        return;
    }
    _conn->pause_reading();
    if (was_in_line) return;
    count_in_flight_stop();
    // One line per 10 s, for every broker of the process: the event repeats at the rate
    // of requests while the bound is spent.
    static net::log_throttle throttle(std::chrono::seconds(10));
    if (uint64_t more = 0; throttle.allow(more)) {
        const auto& b = _in_flight.bound();
        log_warn("net",
                 "{}: in-flight request bound reached: requests read and not yet answered hold "
                 "{} bytes on all connections (--max-in-flight-bytes {}), {} on this one (its "
                 "share: {}); reading from it waits for answers to go out ({} more stops "
                 "since the last line)",
                 peer(), b.used(), b.capacity(), _in_flight.held(), b.fair_share(), more);
    }
}

void session::send(response& r) {
    size_t from = 0;
    for (auto& s : r.splices) {
        if (s.at > from) _conn->send(bytes(r.head.begin() + static_cast<ptrdiff_t>(from),
                                           r.head.begin() + static_cast<ptrdiff_t>(s.at)));
        _conn->send_file(std::move(s.slice));
        from = s.at;
    }
    if (from == 0) {
        _conn->send(std::move(r.head));
    } else if (from < r.head.size()) {
        _conn->send(bytes(r.head.begin() + static_cast<ptrdiff_t>(from), r.head.end()));
    }
}

void session::complete(uint64_t slot, response r) {
    if (slot < _head || slot - _head >= _slots.size()) return;
    auto& s = _slots[slot - _head];
    s.done = true;
    s.frame = std::move(r);
    count_request(s.api, s.frame.error, s.started);
    size_t answered = 0;
    while (!_slots.empty() && _slots.front().done) {
        if (!_slots.front().frame.head.empty()) send(_slots.front().frame);
        answered += _slots.front().request_bytes;
        _slots.pop_front();
        ++_head;
    }
    _slot_bytes -= answered;
    const auto& c = _broker.config();
    if (_slots.size() < c.max_in_flight_per_connection / 2 &&
        _slot_bytes < c.max_in_flight_bytes_per_connection / 2)
        _over_own_limit = false;
    if (answered > 0) {
        // Other connections in line may read again from here.
        _in_flight.release(answered);
    }
    update_reading();
    if (_slots.empty() && _broker.shutting_down()) _broker.check_drained();
}

void session::close(const std::string& reason) { _conn->close(reason); }

void session::on_frame(std::span<uint8_t> frame) {
    if (_phase == sasl_phase::raw_tokens) {
        on_raw_token(frame);
        return;
    }
    if (_phase == sasl_phase::failed) return;
    if (!_principal_known) {
        // A verified client certificate names the principal of an SSL listener; the
        // handshake is over once a frame arrives.
        _principal_known = true;
        if (listener_cfg().protocol == security_protocol::ssl) {
            if (auto cn = _conn->peer_common_name()) {
                _principal.user = *cn;
                _principal.authenticated = true;
            }
        }
    }
    protocol::reader r(frame);
    protocol::request_header h;
    h.api_key = r.fixed<int16_t>();
    h.api_version = r.fixed<int16_t>();
    h.correlation_id = r.fixed<int32_t>();
    if (!r.ok()) {
        log_warn("protocol", "{}: request of {} bytes is too short for a header; closing",
                 peer(), frame.size());
        close("short request header");
        return;
    }
    const api_def* api = find_api(h.api_key);
    if (api == nullptr) {
        log_warn("protocol", "{}: unknown api key {} (version {}); closing the connection", peer(),
                 h.api_key, h.api_version);
        close("unknown api key");
        return;
    }
    if (!admitted(h.api_key)) return;
    uint64_t slot = reserve(frame.size());
    _slots.back().api = h.api_key;
    _slots.back().started = std::chrono::steady_clock::now();
    if (_broker.shared() && !served_in_shared_mode(api->key)) {
        log_shared_unsupported(fmt::format("{} ({})", peer(), _client_id), api->name);
        send_unsupported_version(h.api_key, h.api_version, h.correlation_id, slot);
        return;
    }
    if (h.api_version < api->min_version || h.api_version > api->max_version) {
        log_warn("protocol", "{}: {} v{} is not supported (v{}-v{}); answering UNSUPPORTED_VERSION",
                 peer(), api->name, h.api_version, api->min_version, api->max_version);
        send_unsupported_version(h.api_key, h.api_version, h.correlation_id, slot);
        return;
    }
    bool flexible = protocol::is_flexible(h.api_key, h.api_version);
    protocol::read_request_header_rest(r, h, flexible);
    if (!r.ok()) {
        log_warn("protocol", "{}: malformed {} v{} request header; closing", peer(), api->name,
                 h.api_version);
        close("malformed request header");
        return;
    }
    if (h.client_id && _client_id != *h.client_id) _client_id = *h.client_id;
    request_context ctx{_broker, shared_from_this(), std::move(h), slot};
    api->handle(ctx, frame.subspan(r.position()));
}

// ApiVersions gets a full v0 answer with the table so the client can pick a version;
// any other API gets its header and the error code alone (the body layout of an
// unknown version cannot be known).
void session::send_unsupported_version(int16_t key, int16_t version, int32_t correlation_id,
                                       uint64_t slot) {
    bytes frame(4);
    protocol::writer w(frame);
    w.fixed<int32_t>(correlation_id);
    auto unsupported = static_cast<int16_t>(protocol::error_code::unsupported_version);
    if (key == static_cast<int16_t>(protocol::api_key::api_versions)) {
        protocol::api_versions_response resp;
        resp.error_code = unsupported;
        for (const auto& a : supported_apis())
            resp.api_keys.push_back({static_cast<int16_t>(a.key), a.min_version, a.max_version});
        protocol::encode_message(frame, 0, false, resp);
    } else {
        if (protocol::response_header_has_tags(key, version)) w.uvarint(0);
        w.fixed<int16_t>(unsupported);
    }
    store_be<int32_t>(frame.data(), static_cast<int32_t>(frame.size() - 4));
    complete(slot, {std::move(frame), {}, unsupported});
}

bool session::admitted(int16_t key) {
    using protocol::api_key;
    if (!listener_cfg().sasl()) return true;
    auto k = static_cast<api_key>(key);
    if (k == api_key::api_versions || k == api_key::sasl_handshake ||
        k == api_key::sasl_authenticate)
        return true;
    if (!_authenticated) {
        log_warn("security", "{}: {} before authenticating on SASL listener {}; closing", peer(),
                 find_api(key)->name, listener_cfg().to_string());
        close("request before SASL authentication");
        return false;
    }
    if (_expires_ms != 0 && steady_ms() >= _expires_ms) {
        log_info("security", "{}: SASL session of {} expired without re-authentication; closing",
                 peer(), _principal.to_string());
        close("SASL session expired");
        return false;
    }
    return true;
}

void session::begin_sasl(const std::string& mechanism, int16_t handshake_version) {
    _mechanism = mechanism;
    _sasl = security::make_sasl_server(mechanism, _broker.access());
    _phase = handshake_version == 0 ? sasl_phase::raw_tokens : sasl_phase::tokens;
}

session::sasl_outcome session::sasl_step(bytes_view token) {
    using outcome = security::sasl_server::step_result::outcome;
    sasl_outcome out;
    auto res =
        _sasl->step(std::string_view(reinterpret_cast<const char*>(token.data()), token.size()));
    out.result = res.result;
    out.response = std::move(res.response);
    if (res.result == outcome::challenge) return out;
    if (res.result == outcome::success && _authenticated && _sasl->user() != _principal.user) {
        // KIP-368: re-authentication may renew a session, never change who it is.
        res.result = out.result = outcome::failure;
        res.reason = "re-authentication as '" + _sasl->user() + "' on a session of '" +
                     _principal.user + "'";
    }
    if (res.result == outcome::failure) {
        log_warn("security", "{}: {} authentication failed: {}", peer(), _mechanism, res.reason);
        out.error = "Authentication failed: invalid credentials with SASL mechanism " + _mechanism;
        _sasl.reset();
        return out;
    }
    bool renewed = _authenticated;
    _principal.user = _sasl->user();
    _principal.authenticated = true;
    _authenticated = true;
    _sasl.reset();
    _phase = sasl_phase::none;
    int64_t lifetime = _broker.config().sasl_session_lifetime_ms;
    _expires_ms = lifetime > 0 ? steady_ms() + lifetime : 0;
    out.lifetime_ms = lifetime;
    log_info("security", "{}: {} {} with {}", peer(), _principal.to_string(),
             renewed ? "re-authenticated" : "authenticated", _mechanism);
    return out;
}

void session::fail_authentication() {
    security::count_authentication_failure(listener_cfg().to_string(), _mechanism);
    _phase = sasl_phase::failed;
    _conn->pause_reading();
    std::weak_ptr<session> weak = shared_from_this();
    _broker.loop().add_timer(
        std::chrono::milliseconds(_broker.config().failed_authentication_delay_ms), [weak] {
            if (auto s = weak.lock()) s->close("failed authentication");
        });
}

// After SaslHandshake v0 (kafka-python), tokens travel as bare size-prefixed frames in
// both directions, without Kafka headers.
void session::on_raw_token(bytes_view frame) {
    using outcome = security::sasl_server::step_result::outcome;
    uint64_t slot = reserve(frame.size());
    auto res = sasl_step(frame);
    if (res.result == outcome::failure) {
        // Kafka closes the connection without an answer.
        complete(slot, {});
        fail_authentication();
        return;
    }
    bytes out(4 + res.response.size());
    store_be<int32_t>(out.data(), static_cast<int32_t>(res.response.size()));
    std::copy(res.response.begin(), res.response.end(), out.begin() + 4);
    complete(slot, {std::move(out), {}});
}

}  // namespace sluice::broker
