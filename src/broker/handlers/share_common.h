#pragma once

// What ShareFetch and ShareAcknowledge share: acknowledgements applied to the group's
// share-partitions, by topic id and partition as the requests name them.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "broker/broker.h"
#include "protocol/messages/share_group.h"

namespace sluice::broker {

using share_key = std::pair<protocol::uuid, int32_t>;

// Every partition of `topics` (a request's topics) with the outcome of its
// acknowledgement batches, applied in order until one fails.
template <typename Topic>
std::map<share_key, protocol::error_code> apply_acks(broker& b, const std::string& group,
                                                     const std::string& member,
                                                     const std::vector<Topic>& topics) {
    std::map<share_key, protocol::error_code> out;
    for (const auto& t : topics) {
        const topic_state* ts = b.topics().find(catalog::uuid(t.topic_id));
        for (const auto& p : t.partitions) {
            auto& e = out[{t.topic_id, p.partition_index}];
            if (!ts) {
                e = protocol::error_code::unknown_topic_id;
                continue;
            }
            for (const auto& a : p.acknowledgement_batches) {
                e = b.share_groups().acknowledge(group, member, {ts->info.name, p.partition_index},
                                                 a.first_offset, a.last_offset,
                                                 a.acknowledge_types);
                if (e != protocol::error_code::none) break;
            }
        }
    }
    return out;
}

}  // namespace sluice::broker
