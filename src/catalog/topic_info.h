#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "catalog/uuid.h"

namespace sluice::catalog {

struct topic_info {
    std::string name;
    uuid id{};
    int32_t partitions = 0;
    // Only the keys the user set; effective_config() fills in the rest.
    std::map<std::string, std::string> configs;
    int64_t created_ms = 0;  // ms since epoch

    bool operator==(const topic_info&) const = default;
};

}  // namespace sluice::catalog
