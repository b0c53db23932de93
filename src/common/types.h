#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace sluice {

using bytes = std::vector<uint8_t>;
using bytes_view = std::span<const uint8_t>;

// Bytes that stay in a file until the socket takes them (zero-copy sends). `owner`
// keeps the descriptor open for as long as the slice lives.
struct file_slice {
    std::shared_ptr<const void> owner;
    int fd = -1;
    int64_t offset = 0;
    size_t size = 0;
};

// A value with a name in the type system, so that an offset cannot be passed where a
// partition id is expected.
template <typename T, typename Tag>
struct named_type {
    T value{};
    constexpr named_type() = default;
    constexpr explicit named_type(T v) : value(v) {}
    constexpr auto operator<=>(const named_type&) const = default;
    constexpr T operator()() const { return value; }
};

using partition_id = named_type<int32_t, struct partition_id_tag>;
using node_id = named_type<int32_t, struct node_id_tag>;

// Offsets stay plain int64 inside arithmetic-heavy storage code; these aliases mark
// intent at interfaces. Kafka uses -1 for "none".
using offset_t = int64_t;
using timestamp_ms = int64_t;

struct topic_partition {
    std::string topic;
    int32_t partition = 0;
    // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads the defaulted <=>
    auto operator<=>(const topic_partition&) const = default;
};

}  // namespace sluice

template <>
struct std::hash<sluice::topic_partition> {
    size_t operator()(const sluice::topic_partition& tp) const noexcept {
        return std::hash<std::string>{}(tp.topic) * 31 + std::hash<int32_t>{}(tp.partition);
    }
};
