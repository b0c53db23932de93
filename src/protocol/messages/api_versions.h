#pragma once

#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

struct api_versions_request {
    std::string client_software_name;
    std::string client_software_version;

    template <typename F>
    void serde(F& f) {
        f(client_software_name, since(3));
        f(client_software_version, since(3));
    }
};

struct api_versions_response {
    struct api_version {
        int16_t api_key = 0;
        int16_t min_version = 0;
        int16_t max_version = 0;
        template <typename F>
        void serde(F& f) {
            f(api_key);
            f(min_version);
            f(max_version);
        }
    };
    int16_t error_code = 0;
    std::vector<api_version> api_keys;
    int32_t throttle_time_ms = 0;

    template <typename F>
    void serde(F& f) {
        f(error_code);
        f(api_keys);
        f(throttle_time_ms, since(1));
    }
};

}  // namespace sluice::protocol
