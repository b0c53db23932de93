#pragma once

// The one place the broker reads inside a group's opaque member metadata: OffsetDelete
// must refuse topics that members of a "consumer" group subscribe to, as Kafka does.
// Everything else about groups treats metadata and assignments as bytes.

#include <optional>
#include <string>
#include <vector>

#include "common/types.h"

namespace sluice::group {

// The topics of a ConsumerProtocolSubscription (any version: they all start with an
// int16 version and an array of topic names). nullopt if the bytes are not one.
std::optional<std::vector<std::string>> subscribed_topics(bytes_view metadata);

}  // namespace sluice::group
