#include "group/consumer_protocol.h"

#include "protocol/wire.h"

namespace sluice::group {

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

std::optional<partition_map> assigned_partitions(bytes_view assignment) {
    protocol::reader r(assignment);
    r.fixed<int16_t>();  // version: v0 to v3 share this layout
    int64_t n = r.array_length(false);
    if (!r.ok() || n < 0) return std::nullopt;
    partition_map out;
    for (int64_t i = 0; i < n && r.ok(); ++i) {
        auto& parts = out[r.nullable_string(false).value_or(std::string{})];
        int64_t m = r.array_length(false);
        if (m < 0) r.fail();
        for (int64_t j = 0; j < m && r.ok(); ++j) parts.insert(r.fixed<int32_t>());
    }
    r.nullable_bytes(false);  // user_data
    if (!r.ok()) return std::nullopt;
    return out;
}

}  // namespace sluice::group
