#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct describe_cluster_request {
    bool include_cluster_authorized_operations = false;
    int8_t endpoint_type = 1;  // 1: brokers, 2: controllers

    template <typename F>
    void serde(F& f) {
        f(include_cluster_authorized_operations);
        f(endpoint_type, since(1));
    }
};

struct describe_cluster_response {
    struct broker {
        int32_t broker_id = 0;
        std::string host;
        int32_t port = 0;
        std::optional<std::string> rack;
        template <typename F>
        void serde(F& f) {
            f(broker_id);
            f(host);
            f(port);
            f(rack);
        }
    };
    int32_t throttle_time_ms = 0;
    int16_t error_code = 0;
    std::optional<std::string> error_message;
    int8_t endpoint_type = 1;
    std::string cluster_id;
    int32_t controller_id = -1;
    std::vector<broker> brokers;
    int32_t cluster_authorized_operations = INT32_MIN;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(error_code);
        f(error_message);
        f(endpoint_type, since(1));
        f(cluster_id);
        f(controller_id);
        f(brokers);
        f(cluster_authorized_operations);
    }
};

}  // namespace sluice::protocol
