#pragma once

// SaslHandshake (17) and SaslAuthenticate (36).

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct sasl_handshake_request {
    std::string mechanism;

    template <typename F>
    void serde(F& f) {
        f(mechanism);
    }
};

struct sasl_handshake_response {
    int16_t error_code = 0;
    std::vector<std::string> mechanisms;

    template <typename F>
    void serde(F& f) {
        f(error_code);
        f(mechanisms);
    }
};

struct sasl_authenticate_request {
    bytes auth_bytes;

    template <typename F>
    void serde(F& f) {
        f(auth_bytes);
    }
};

struct sasl_authenticate_response {
    int16_t error_code = 0;
    std::optional<std::string> error_message;
    bytes auth_bytes;
    int64_t session_lifetime_ms = 0;

    template <typename F>
    void serde(F& f) {
        f(error_code);
        f(error_message);
        f(auth_bytes);
        f(session_lifetime_ms, since(1));
    }
};

}  // namespace sluice::protocol
