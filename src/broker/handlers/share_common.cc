#include "broker/handlers/share_common.h"

namespace sluice::broker {

std::map<share_key, protocol::error_code> apply_acks(group::share::partition_work& work,
                                                     const std::string& member,
                                                     const std::vector<share_ack>& acks) {
    std::map<share_key, protocol::error_code> out;
    for (const auto& a : acks) {
        auto& e = out[a.key];
        if (!a.partition) {
            e = protocol::error_code::unknown_topic_id;
            continue;
        }
        for (const auto& b : a.batches) {
            e = work.acknowledge(member, *a.partition, b.first_offset, b.last_offset,
                                 b.acknowledge_types);
            if (e != protocol::error_code::none) break;
        }
    }
    return out;
}

}  // namespace sluice::broker
