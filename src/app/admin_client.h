#pragma once

#include <memory>
#include <string>

#include "app/client_config.h"
#include "common/result.h"
#include "common/types.h"
#include "net/blocking_server.h"
#include "net/listener.h"
#include "protocol/api_key.h"
#include "protocol/serde.h"

namespace sluice::app {

// A blocking Kafka client for the command line: one connection, one request at a
// time, encoded and decoded with the same declarations the broker uses.
class admin_client {
public:
    admin_client();
    ~admin_client();
    // Connects, then runs the TLS handshake and the SASL login that `cfg` asks for. A
    // refused login is an error carrying the broker's reason.
    result<void> connect(const net::host_port& addr, const client_config& cfg = {},
                         int timeout_ms = 10000);

    template <typename Req, typename Resp>
    result<Resp> call(protocol::api_key key, int16_t version, const Req& req) {
        bool flexible = protocol::is_flexible(static_cast<int16_t>(key), version);
        bytes frame(4);
        protocol::writer w(frame);
        protocol::write_request_header(
            w, {static_cast<int16_t>(key), version, ++_correlation, "sluice-cli"}, flexible);
        protocol::encode_message(frame, version, flexible, req);
        auto body = round_trip(std::move(frame), key, version);
        if (!body) return body.err();
        Resp resp;
        if (!protocol::decode_message(*body, version, flexible, resp))
            return {errc::corrupt, "cannot decode the broker's response"};
        return resp;
    }

private:
    // SaslHandshake, then SaslAuthenticate rounds of cfg's mechanism.
    result<void> authenticate(const client_config& cfg);
    // One SaslAuthenticate round: the client's bytes out, the broker's back.
    result<std::string> sasl_round(std::string_view client_message);

    // Sends a request frame (size patched here) and returns the response body after
    // its header.
    result<bytes> round_trip(bytes frame, protocol::api_key key, int16_t version);

    std::unique_ptr<net::stream_socket> _sock;
    int32_t _correlation = 0;
    bool _plaintext = true;  // no TLS, no SASL: a secured listener hangs up on it
};

}  // namespace sluice::app
