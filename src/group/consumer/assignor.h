#pragma once

// The server-side assignors of KIP-848 consumer groups, as Kafka ships them: `uniform`
// (the default: balanced, and sticky to the previous target so a change moves as few
// partitions as it can) and `range` (per topic, consecutive partitions to members in
// member-id order, so members subscribed to co-partitioned topics get the same numbers).
// Pure functions of the members' subscriptions and the topics' partition counts.

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "group/state_store.h"

namespace sluice::group::consumer {

struct assignor_member {
    std::string member_id;
    std::set<std::string> topics;  // what it subscribes to (names and regex matches)
    partition_map previous;        // its previous target assignment (for stickiness)
};

// Topic name -> partition count, for every subscribed topic that exists.
using topic_sizes = std::map<std::string, int32_t>;
// Member id -> its partitions; every member given has an entry, maybe empty.
using target_assignment = std::map<std::string, partition_map>;

// The names Kafka gives them.
inline constexpr std::string_view uniform_assignor = "uniform";
inline constexpr std::string_view range_assignor = "range";
bool is_known_assignor(std::string_view name);

// Every partition of a subscribed topic goes to exactly one member subscribed to it.
target_assignment assign(std::string_view assignor, const std::vector<assignor_member>& members,
                         const topic_sizes& topics);

}  // namespace sluice::group::consumer
