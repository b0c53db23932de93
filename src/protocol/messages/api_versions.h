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
    // v3+ tagged fields: the features the broker supports and those finalized in the
    // cluster (group.version 1 tells clients the KIP-848 consumer protocol is on).
    struct supported_feature {
        std::string name;
        int16_t min_version = 0;
        int16_t max_version = 0;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(min_version);
            f(max_version);
        }
    };
    struct finalized_feature {
        std::string name;
        int16_t max_version_level = 0;
        int16_t min_version_level = 0;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(max_version_level);
            f(min_version_level);
        }
    };
    int16_t error_code = 0;
    std::vector<api_version> api_keys;
    int32_t throttle_time_ms = 0;
    std::vector<supported_feature> supported_features;
    int64_t finalized_features_epoch = -1;
    std::vector<finalized_feature> finalized_features;

    template <typename F>
    void serde(F& f) {
        f(error_code);
        f(api_keys);
        f(throttle_time_ms, since(1));
        f.tagged(0, supported_features, since(3));
        f.tagged(1, finalized_features_epoch, since(3));
        f.tagged(2, finalized_features, since(3));
    }
};

}  // namespace sluice::protocol
