#include "shared/placement.h"

#include <algorithm>

#include <fmt/format.h>

namespace sluice::shared {
namespace {

uint64_t fnv1a(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (char c : s) {
        h ^= static_cast<uint8_t>(c);
        h *= 0x100000001b3ULL;
    }
    return h;
}

// SplitMix64's finalizer: every input bit reaches every output bit.
uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace

uint64_t placement_weight(std::string_view key, int32_t broker_id) {
    return mix(fnv1a(key) ^ mix(static_cast<uint64_t>(static_cast<uint32_t>(broker_id)) +
                                0x9e3779b97f4a7c15ULL));
}

std::optional<int32_t> place(std::string_view key, std::span<const int32_t> brokers) {
    std::optional<int32_t> best;
    uint64_t best_weight = 0;
    for (int32_t b : brokers) {
        uint64_t w = placement_weight(key, b);
        if (!best || w > best_weight || (w == best_weight && b < *best)) {
            best = b;
            best_weight = w;
        }
    }
    return best;
}

std::vector<int32_t> rank(std::string_view key, std::span<const int32_t> brokers) {
    std::vector<std::pair<uint64_t, int32_t>> weighted;
    weighted.reserve(brokers.size());
    for (int32_t b : brokers) weighted.emplace_back(placement_weight(key, b), b);
    std::sort(weighted.begin(), weighted.end(), [](const auto& x, const auto& y) {
        return x.first != y.first ? x.first > y.first : x.second < y.second;
    });
    std::vector<int32_t> out;
    out.reserve(weighted.size());
    for (const auto& [_, b] : weighted)
        if (out.empty() || std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
    return out;
}

coordination coordination_of(std::string_view key, const coordinator_view& v) {
    if (!v.member) return coordination::unavailable;
    if (place(key, v.live) != v.self) return coordination::elsewhere;
    if (v.settled && place(key, *v.settled) != v.self) return coordination::loading;
    return coordination::here;
}

std::string partition_key(std::string_view topic_id_hex, int32_t partition) {
    return fmt::format("p/{}/{}", topic_id_hex, partition);
}

std::string group_key(std::string_view group_id) {
    return fmt::format("g/{}", group_id);
}

std::string transaction_key(std::string_view transactional_id) {
    return fmt::format("t/{}", transactional_id);
}

}  // namespace sluice::shared
