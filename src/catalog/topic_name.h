#pragma once

#include <string_view>

#include "common/result.h"

namespace sluice::catalog {

// Kafka's longest legal topic name. Kafka derives it from the 255-byte file name limit
// minus room for the partition suffix ("-<partition>") and deletion markers.
constexpr size_t max_topic_name_length = 249;

// Kafka's rules: 1..249 characters of [a-zA-Z0-9._-], and not "." or "..". Names
// beginning "__" are allowed (the broker's own topics use that prefix). On failure,
// errc::invalid_argument with a message that says which rule the name broke.
result<void> validate_topic_name(std::string_view name);

}  // namespace sluice::catalog
