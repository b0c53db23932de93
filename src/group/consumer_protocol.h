#pragma once

// The one place the broker reads inside a group's opaque member metadata and
// assignments: OffsetDelete must refuse topics that members of a "consumer" group
// subscribe to, as Kafka does; classic members of a consumer group (KIP-848's online
// migration) are assigned by the broker, which then reads their subscription and writes
// their assignment; and system.group_members (the console, `sluice group describe`)
// shows what each classic member subscribes to and holds. Everything else about classic
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

// A ConsumerProtocolSubscription in full (v0: topics and user data; v1+: the partitions
// the member owns; v2+: its generation; v3+: its rack).
struct consumer_subscription {
    int16_t version = 0;
    std::vector<std::string> topics;
    partition_map owned;
    std::optional<std::string> rack_id;
};
std::optional<consumer_subscription> parse_subscription(bytes_view metadata);

// ConsumerProtocolAssignment (v0-v3 share one layout): the partitions by topic, and
// empty user data.
std::optional<partition_map> parse_assignment(bytes_view assignment);
bytes serialize_assignment(const partition_map& partitions, int16_t version);

// parse_assignment for display: nullopt also for empty bytes (a member not yet assigned).
std::optional<partition_map> assigned_partitions(bytes_view assignment);

}  // namespace sluice::group
