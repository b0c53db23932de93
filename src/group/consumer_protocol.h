#pragma once

// The one place the broker reads inside a classic group's opaque member metadata and
// assignments: OffsetDelete must refuse topics that members of a "consumer" group
// subscribe to, as Kafka does, and system.group_members (the console, `sluice group
// describe`) shows what each member subscribes to and holds. Everything else about
// groups treats metadata and assignments as bytes.

#include <optional>
#include <string>
#include <vector>

#include "common/types.h"
#include "group/state_store.h"

namespace sluice::group {

// The topics of a ConsumerProtocolSubscription (any version: they all start with an
// int16 version and an array of topic names). nullopt if the bytes are not one.
std::optional<std::vector<std::string>> subscribed_topics(bytes_view metadata);

// The partitions of a ConsumerProtocolAssignment (any version: an int16 version, an
// array of {topic, array of int32 partition}, then user data). nullopt if the bytes are
// not one (empty bytes included: a member not yet assigned).
std::optional<partition_map> assigned_partitions(bytes_view assignment);

}  // namespace sluice::group
