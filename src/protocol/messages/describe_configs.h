#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/serde.h"

namespace sluice::protocol {

inline constexpr int8_t resource_topic = 2;
inline constexpr int8_t resource_broker = 4;
inline constexpr int8_t resource_broker_logger = 8;
inline constexpr int8_t resource_group = 32;  // group configs (KIP-848, KIP-932)

// Where a config value comes from (DescribeConfigs v1+ ConfigSource).
inline constexpr int8_t source_topic = 1;
inline constexpr int8_t source_dynamic_broker = 2;
inline constexpr int8_t source_dynamic_default_broker = 3;
inline constexpr int8_t source_static_broker = 4;
inline constexpr int8_t source_default = 5;
inline constexpr int8_t source_dynamic_broker_logger = 6;
inline constexpr int8_t source_group = 8;  // GROUP_CONFIG: set on the group

struct describe_configs_request {
    struct resource {
        int8_t resource_type = 0;
        std::string resource_name;
        std::optional<std::vector<std::string>> configuration_keys;  // null: all
        template <typename F>
        void serde(F& f) {
            f(resource_type);
            f(resource_name);
            f(configuration_keys);
        }
    };
    std::vector<resource> resources;
    bool include_synonyms = false;
    bool include_documentation = false;

    template <typename F>
    void serde(F& f) {
        f(resources);
        f(include_synonyms, since(1));
        f(include_documentation, since(3));
    }
};

struct describe_configs_response {
    struct synonym {
        std::string name;
        std::optional<std::string> value;
        int8_t source = 0;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(value);
            f(source);
        }
    };
    struct config {
        std::string name;
        std::optional<std::string> value;
        bool read_only = false;
        bool is_default = false;  // v0 only
        int8_t config_source = -1;
        bool is_sensitive = false;
        std::vector<synonym> synonyms;
        int8_t config_type = 0;
        std::optional<std::string> documentation;
        template <typename F>
        void serde(F& f) {
            f(name);
            f(value);
            f(read_only);
            f(is_default, range(0, 0));
            f(config_source, since(1));
            f(is_sensitive);
            f(synonyms, since(1));
            f(config_type, since(3));
            f(documentation, since(3));
        }
    };
    struct result {
        int16_t error_code = 0;
        std::optional<std::string> error_message;
        int8_t resource_type = 0;
        std::string resource_name;
        std::vector<config> configs;
        template <typename F>
        void serde(F& f) {
            f(error_code);
            f(error_message);
            f(resource_type);
            f(resource_name);
            f(configs);
        }
    };
    int32_t throttle_time_ms = 0;
    std::vector<result> results;

    template <typename F>
    void serde(F& f) {
        f(throttle_time_ms);
        f(results);
    }
};

}  // namespace sluice::protocol
