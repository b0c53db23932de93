#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

// A resource and the configs a request changes on it; AlterConfigs and
// IncrementalAlterConfigs differ only in what a config entry holds.
template <typename C>
struct config_resource {
    int8_t resource_type = 0;  // resource_topic or resource_broker (describe_configs.h)
    // A topic name, or a broker id in decimal ("": the cluster-wide broker default).
    std::string resource_name;
    std::vector<C> configs;
    template <typename F>
    void serde(F& f) {
        f(resource_type);
        f(resource_name);
        f(configs);
    }
};

// AlterConfigs replaces a resource's whole set of dynamic configs: a key left out of the
// request returns to its default (IncrementalAlterConfigs changes keys one at a time).
struct alter_configs_request {
    struct config {
        std::string name;
        std::optional<std::string> value;  // null: unset, back to the default
        template <typename F>
        void serde(F& f) {
            f(name);
            f(value);
        }
    };
    using resource = config_resource<config>;
    std::vector<resource> resources;
    bool validate_only = false;  // check the request, change nothing

    template <typename F>
    void serde(F& f) {
        f(resources);
        f(validate_only);
    }
};

struct alter_configs_response {
    struct result {
        int16_t error_code = 0;
        std::optional<std::string> error_message;  // null when there is no error
        int8_t resource_type = 0;
        std::string resource_name;
        template <typename F>
        void serde(F& f) {
            f(error_code);
            f(error_message);
            f(resource_type);
            f(resource_name);
        }
    };
    int32_t throttle_time_ms = 0;
    std::vector<result> responses;  // one per requested resource

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(responses);
    }
};

}  // namespace sluice::protocol
