#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/messages/alter_configs.h"
#include "protocol/serde.h"

namespace sluice::protocol {

// IncrementalAlterConfigs config_operation values (Kafka's AlterConfigOp.OpType).
inline constexpr int8_t config_op_set = 0;
inline constexpr int8_t config_op_delete = 1;    // back to the default; value ignored
inline constexpr int8_t config_op_append = 2;    // add to a list-typed config
inline constexpr int8_t config_op_subtract = 3;  // remove from a list-typed config

// Unlike AlterConfigs, keys the request does not name keep their values.
struct incremental_alter_configs_request {
    struct config {
        std::string name;
        int8_t config_operation = config_op_set;
        std::optional<std::string> value;  // ignored by config_op_delete
        template <typename F>
        void serde(F& f) {
            f(name);
            f(config_operation);
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

// The response has exactly AlterConfigs' fields in every version (only where flexible
// encoding starts differs, and that comes from the API key, not the declaration).
using incremental_alter_configs_response = alter_configs_response;

}  // namespace sluice::protocol
