#include "group/consumer_protocol.h"

#include <algorithm>

#include "protocol/wire.h"

namespace sluice::group {
namespace {

// An array of (topic, [partition]) as both messages carry it; false if malformed.
bool read_partitions(protocol::reader& r, partition_map& out) {
    int64_t n = r.array_length(false);
    for (int64_t i = 0; i < n && r.ok(); ++i) {
        std::string topic = r.nullable_string(false).value_or(std::string{});
        int64_t k = r.array_length(false);
        if (k < 0) r.fail();
        auto& ps = out[topic];
        for (int64_t j = 0; j < k && r.ok(); ++j) ps.insert(r.fixed<int32_t>());
        if (ps.empty()) out.erase(topic);
    }
    return r.ok() && n >= 0;
}

}  // namespace

std::optional<std::vector<std::string>> subscribed_topics(bytes_view metadata) {
    protocol::reader r(metadata);
    r.fixed<int16_t>();  // version: the topic list is the first field in all of them
    int64_t n = r.array_length(false);
    if (!r.ok() || n < 0) return std::nullopt;
    std::vector<std::string> topics;
    for (int64_t i = 0; i < n && r.ok(); ++i)
        topics.push_back(r.nullable_string(false).value_or(std::string{}));
    r.nullable_bytes(false);  // user_data, also common to every version: bytes cut short
                              // before its end are not a subscription
    if (!r.ok()) return std::nullopt;
    return topics;
}

std::optional<consumer_subscription> parse_subscription(bytes_view metadata) {
    protocol::reader r(metadata);
    consumer_subscription s;
    s.version = r.fixed<int16_t>();
    auto topics = subscribed_topics(metadata);
    if (!r.ok() || s.version < 0 || !topics) return std::nullopt;
    s.topics = std::move(*topics);
    // Past the version, the topics and the user data (read again, to move on).
    r.array_length(false);
    for (size_t i = 0; i < s.topics.size(); ++i) r.nullable_string(false);
    r.nullable_bytes(false);
    // Newer versions than Kafka's own add fields at the end: what is known is read.
    if (s.version >= 1 && !read_partitions(r, s.owned)) return std::nullopt;
    if (s.version >= 2) r.fixed<int32_t>();  // generation
    if (s.version >= 3) s.rack_id = r.nullable_string(false);
    if (!r.ok()) return std::nullopt;
    if (s.rack_id && s.rack_id->empty()) s.rack_id.reset();
    return s;
}

std::optional<partition_map> parse_assignment(bytes_view assignment) {
    if (assignment.empty()) return partition_map{};
    protocol::reader r(assignment);
    r.fixed<int16_t>();
    partition_map out;
    if (!read_partitions(r, out)) return std::nullopt;
    r.nullable_bytes(false);  // user_data: bytes cut short before its end are not one
    if (!r.ok()) return std::nullopt;
    return out;
}

std::optional<partition_map> assigned_partitions(bytes_view assignment) {
    if (assignment.empty()) return std::nullopt;
    return parse_assignment(assignment);
}

bytes serialize_assignment(const partition_map& partitions, int16_t version) {
    bytes out;
    protocol::writer w(out);
    w.fixed<int16_t>(std::clamp<int16_t>(version, 0, 3));
    w.length(static_cast<int64_t>(partitions.size()), false, true);
    for (const auto& [topic, ps] : partitions) {
        w.string(topic, false);
        w.length(static_cast<int64_t>(ps.size()), false, true);
        for (int32_t p : ps) w.fixed<int32_t>(p);
    }
    w.length(-1, false, true);  // user_data: null
    return out;
}

}  // namespace sluice::group
