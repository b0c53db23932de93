#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

// FindCoordinator key types.
inline constexpr int8_t coordinator_key_group = 0;
inline constexpr int8_t coordinator_key_transaction = 1;

struct find_coordinator_request {
    std::string key;  // v0-3: the one group or transactional id asked about
    int8_t key_type = coordinator_key_group;
    std::vector<std::string> coordinator_keys;  // v4+: batched keys, one answer each

    template <typename F>
    void serde(F& f) {
        f(key, range(0, 3));
        f(key_type, since(1));
        f(coordinator_keys, since(4));
    }
};

struct find_coordinator_response {
    struct coordinator {
        std::string key;
        int32_t node_id = -1;
        std::string host;
        int32_t port = -1;
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        template <typename F>
        void serde(F& f) {
            f(key);
            f(node_id);
            f(host);
            f(port);
            f(error_code);
            f(error_message);
        }
    };
    int32_t throttle_time_ms = 0;
    // v0-3: the answer for the single key; v4+ answers in coordinators.
    int16_t error_code = 0;
    std::optional<std::string> error_message;
    int32_t node_id = -1;
    std::string host;
    int32_t port = -1;
    std::vector<coordinator> coordinators;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms, since(1));
        f(error_code, range(0, 3));
        f(error_message, range(1, 3));
        f(node_id, range(0, 3));
        f(host, range(0, 3));
        f(port, range(0, 3));
        f(coordinators, since(4));
    }
};

}  // namespace sluice::protocol
