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

}  // namespace sluice::group
