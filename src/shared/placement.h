#pragma once

// Which live broker leads a partition or coordinates a group or transactional id in
// shared mode (docs/shared-mode.md#placement). Every broker computes the same answer from
// the same list of live brokers (broker_registry.h), with no coordination: rendezvous
// (highest-random-weight) hashing gives each key to the broker with the largest weight
// hash(key, broker id). When a broker leaves, only its keys move (each to the broker that
// was second for it); when one joins, it takes about 1/N of the keys from the others.
// The hash is fixed (FNV-1a 64 over the key, mixed with the broker id by SplitMix64's
// finalizer), so brokers of different builds and machines agree.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::shared {

// The weight of broker_id for key; larger wins.
uint64_t placement_weight(std::string_view key, int32_t broker_id);

// The broker (of `brokers`, in any order, duplicates ignored) that owns key; nullopt when
// there is none. Ties, which need a 64-bit collision, go to the smaller id.
std::optional<int32_t> place(std::string_view key, std::span<const int32_t> brokers);

// Every broker, the owner first, then the one that takes the key if the owner leaves,
// and so on (for replica lists: a partition's replicas are its first N).
std::vector<int32_t> rank(std::string_view key, std::span<const int32_t> brokers);

// Whether a broker coordinates a key (a group) now, as every group request asks before it
// touches the group (docs/shared-mode.md#groups).
enum class coordination : uint8_t {
    here,         // placed on this broker, and its state is in memory
    elsewhere,    // placed on another live broker (NOT_COORDINATOR)
    unavailable,  // this broker holds no lease (COORDINATOR_NOT_AVAILABLE)
    loading,      // moving here; its state is being read (COORDINATOR_LOAD_IN_PROGRESS)
};
struct coordinator_view {
    int32_t self = -1;
    bool member = false;            // holds its lease
    std::span<const int32_t> live;  // the live brokers as this broker sees them
    // While keys are moving here: the live brokers under which what this broker holds in
    // memory was placed (a key placed here under `live` but not under `settled` is being
    // loaded). nullopt when nothing is moving here.
    std::optional<std::span<const int32_t>> settled;
};
coordination coordination_of(std::string_view key, const coordinator_view& v);

// The keys placed: a partition by its topic's id (not its name, so that a topic
// re-created under the same name is placed afresh), a classic or consumer group and a
// transactional id by their ids, each in its own key space.
std::string partition_key(std::string_view topic_id_hex, int32_t partition);
std::string group_key(std::string_view group_id);
std::string transaction_key(std::string_view transactional_id);

}  // namespace sluice::shared
