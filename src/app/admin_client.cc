#include "app/admin_client.h"

#include <cerrno>
#include <cstring>

#include "common/endian.h"
#include "protocol/error_code.h"
#include "protocol/messages/sasl.h"
#include "security/sasl.h"

namespace sluice::app {

admin_client::admin_client() = default;
admin_client::~admin_client() = default;

result<void> admin_client::connect(const net::host_port& addr, const client_config& cfg,
                                   int timeout_ms) {
    auto sock = net::stream_socket::connect(addr, timeout_ms);
    if (!sock) return sock.err();
    // The same bound for every answer: a broker that stops responding fails the command.
    (*sock)->set_read_timeout(std::chrono::milliseconds(timeout_ms));
    (*sock)->set_write_timeout(std::chrono::milliseconds(timeout_ms));
    if (cfg.tls()) {
        auto ctx = net::tls_context::create_client(cfg.ssl_ca, cfg.ssl_cert, cfg.ssl_key);
        if (!ctx) return {ctx.code(), "TLS: " + ctx.err().message};
        if (auto r = (*sock)->start_tls_client(**ctx, addr.host); !r)
            return {r.code(), "TLS handshake with " + addr.to_string() + ": " + r.err().message};
    }
    _sock = std::move(*sock);
    _plaintext = cfg.security == client_config::protocol::plaintext;
    if (cfg.sasl()) return authenticate(cfg);
    return {};
}

result<void> admin_client::authenticate(const client_config& cfg) {
    using protocol::error_code;
    // v1: the tokens then travel in SaslAuthenticate requests (KIP-152).
    auto hs = call<protocol::sasl_handshake_request, protocol::sasl_handshake_response>(
        protocol::api_key::sasl_handshake, 1, {cfg.sasl_mechanism});
    if (!hs) return hs.err();
    if (hs->error_code != 0) {
        std::string offered;
        for (const auto& m : hs->mechanisms) offered += (offered.empty() ? "" : ", ") + m;
        return {errc::unsupported, "SASL: the broker does not offer " + cfg.sasl_mechanism +
                                       " (it offers " + (offered.empty() ? "none" : offered) + ")"};
    }
    if (cfg.sasl_mechanism == "PLAIN") {
        // RFC 4616: authzid NUL authcid NUL password, with an empty authzid.
        std::string msg = '\0' + cfg.sasl_username + '\0' + cfg.sasl_password;
        auto r = sasl_round(msg);
        return r ? result<void>{} : result<void>{r.err()};
    }
    auto mech = security::parse_scram_mechanism(cfg.sasl_mechanism);
    security::scram_client scram(*mech, cfg.sasl_username, cfg.sasl_password);
    auto server_first = sasl_round(scram.client_first());
    if (!server_first) return server_first.err();
    auto final_msg = scram.client_final(*server_first);
    if (final_msg.empty()) return {errc::corrupt, "SASL: malformed SCRAM challenge"};
    auto server_final = sasl_round(final_msg);
    if (!server_final) return server_final.err();
    if (!scram.verify_server_final(*server_final))
        return {errc::corrupt, "SASL: the broker's SCRAM signature does not verify"};
    return {};
}

result<std::string> admin_client::sasl_round(std::string_view client_message) {
    protocol::sasl_authenticate_request req;
    req.auth_bytes.assign(client_message.begin(), client_message.end());
    auto resp = call<protocol::sasl_authenticate_request, protocol::sasl_authenticate_response>(
        protocol::api_key::sasl_authenticate, 2, req);
    if (!resp) return resp.err();
    if (resp->error_code != 0) {
        std::string why(protocol::error_name(static_cast<protocol::error_code>(resp->error_code)));
        if (resp->error_message && !resp->error_message->empty())
            why += ": " + *resp->error_message;
        return {errc::invalid_argument, "SASL authentication failed (" + why + ")"};
    }
    return std::string(resp->auth_bytes.begin(), resp->auth_bytes.end());
}

result<bytes> admin_client::round_trip(bytes frame, protocol::api_key key, int16_t version) {
    if (!_sock) return {errc::io_error, "not connected"};
    store_be<int32_t>(frame.data(), static_cast<int32_t>(frame.size() - 4));
    if (!_sock->write_all(frame.data(), frame.size()))
        return {errc::io_error, std::string("send: ") + std::strerror(errno)};
    uint8_t size_buf[4];
    if (!_sock->read_exact(size_buf, 4)) {
        // What a TLS or SASL listener does to a PLAINTEXT request.
        return {errc::io_error,
                std::string("the broker closed the connection or timed out") +
                    (_plaintext ? " (a TLS or SASL listener needs --command-config FILE or -X "
                                  "security.protocol=...)"
                                : "")};
    }
    auto size = load_be<int32_t>(size_buf);
    if (size < 4) return {errc::corrupt, "response too short"};
    bytes resp(static_cast<size_t>(size));
    if (!_sock->read_exact(resp.data(), resp.size())) return {errc::io_error, "short response"};
    protocol::reader r(resp);
    int32_t corr = r.fixed<int32_t>();
    if (corr != _correlation) return {errc::corrupt, "response correlation id does not match"};
    if (protocol::response_header_has_tags(static_cast<int16_t>(key), version)) {
        uint32_t n = r.uvarint();
        for (uint32_t i = 0; i < n && r.ok(); ++i) {
            r.uvarint();
            r.raw(r.uvarint());
        }
    }
    if (!r.ok()) return {errc::corrupt, "malformed response header"};
    return bytes(resp.begin() + static_cast<ptrdiff_t>(r.position()), resp.end());
}

}  // namespace sluice::app
