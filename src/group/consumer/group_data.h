#pragma once

// The consumer coordinator's private state, shared by its .cc files.

#include "group/consumer/coordinator.h"

namespace sluice::group::consumer {

struct coordinator::member_data {
    std::string id;
    std::optional<std::string> instance_id;
    std::optional<std::string> rack_id;
    std::string client_id;
    std::string client_host;
    int32_t rebalance_timeout_ms = 0;
    std::optional<std::string> server_assignor;
    std::vector<std::string> subscribed_topics;  // sorted
    std::optional<std::string> subscribed_regex;
    member_assignment current;
    // Set for a member speaking the classic protocol (JoinGroup, SyncGroup, Heartbeat).
    struct classic_metadata {
        int32_t session_timeout_ms = 0;
        std::vector<protocol_entry> protocols;  // in its order of preference
        int16_t subscription_version = 0;
    };
    std::optional<classic_metadata> classic;
    int64_t session_deadline = 0;     // steady ms; 0: not armed
    int64_t revocation_deadline = 0;  // steady ms while revoking; 0: not armed
};

struct coordinator::group_data {
    std::string id;
    int32_t group_epoch = 0;
    int32_t assignment_epoch = 0;
    std::string assignor;
    std::map<std::string, member_data> members;
    std::map<std::string, std::string> static_members;  // instance id -> member id
    target_assignment target;
    topic_sizes subscribed;  // the subscribed topics' sizes the target was computed for
    int64_t state_ms = 0;

    // Whether a member other than `except` owns or is revoking the partition.
    bool owned_by_other(const std::string& except, const std::string& topic, int32_t p) const {
        for (const auto& [mid, m] : members) {
            if (mid == except) continue;
            for (const auto* pm : {&m.current.assigned, &m.current.pending_revocation}) {
                auto it = pm->find(topic);
                if (it != pm->end() && it->second.count(p)) return true;
            }
        }
        return false;
    }
    std::string state() const {
        if (members.empty()) return "Empty";
        if (group_epoch > assignment_epoch) return "Assigning";
        for (const auto& [mid, m] : members) {
            if (m.current.member_epoch == static_leave_epoch) continue;
            if (m.current.member_epoch != assignment_epoch ||
                m.current.state != member_state::stable)
                return "Reconciling";
        }
        return "Stable";
    }
};

}  // namespace sluice::group::consumer
