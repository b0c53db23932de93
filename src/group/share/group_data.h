#pragma once

// share::coordinator's membership records (coordinator.cc, offsets.cc): private to the
// coordinator's implementation files.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "group/share/coordinator.h"

namespace sluice::group::share {

struct coordinator::member_data {
    std::string id;
    int32_t epoch = 0;
    std::optional<std::string> rack_id;
    std::string client_id;
    std::string client_host;
    std::vector<std::string> subscribed;  // sorted
    partition_map assigned;
    int64_t last_seen_ms = 0;
};

struct coordinator::group_data {
    std::string id;
    int32_t epoch = 0;
    int32_t assignment_epoch = 0;
    std::map<std::string, int32_t> sizes;  // subscribed topics' partition counts
    std::map<std::string, member_data> members;
};

}  // namespace sluice::group::share
