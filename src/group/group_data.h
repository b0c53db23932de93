#pragma once

// The coordinator's private state, shared by membership.cc and offsets.cc.

#include <algorithm>
#include <utility>

#include "group/coordinator.h"

namespace sluice::group {

struct coordinator::member_data {
    std::string id;
    std::optional<std::string> instance_id;
    std::string client_id;
    std::string client_host;
    int32_t session_timeout_ms = 0;
    int32_t rebalance_timeout_ms = 0;
    std::vector<protocol_entry> protocols;
    bytes assignment;
    join_callback awaiting_join;  // set while its JoinGroup is parked
    sync_callback awaiting_sync;  // set while its SyncGroup is parked
    int64_t deadline = 0;         // session expiry (steady ms); 0: not armed
    uint64_t join_seq = 0;        // order of arrival, for choosing a new leader
    bool is_new = false;          // joined during the rebalance in progress

    const protocol_entry* find_protocol(const std::string& name) const {
        for (const auto& p : protocols)
            if (p.name == name) return &p;
        return nullptr;
    }
};

struct coordinator::group_data {
    std::string id;
    group_state state = group_state::empty;
    int32_t generation = 0;
    std::optional<std::string> protocol_type;  // of the members; none while Empty
    std::optional<std::string> protocol_name;  // selected for the current generation
    std::string leader;                        // member id; empty when no members
    std::map<std::string, member_data> members;
    // Member ids handed out by MEMBER_ID_REQUIRED, waiting for the rejoin (value: deadline).
    std::map<std::string, int64_t> pending;
    std::map<std::string, std::string> static_members;  // group.instance.id -> member id
    // PreparingRebalance: when the join phase ends regardless; CompletingRebalance: when
    // members that have not synced are dropped. 0: not armed.
    int64_t deadline = 0;
    bool initial_delay = false;        // the join phase is the delay of a new group
    int64_t initial_remaining_ms = 0;  // how much longer the delay may be extended
    bool new_member_added = false;     // a member joined during the current delay
    std::map<topic_partition, committed_offset> offsets;
    int64_t empty_since_ms = 0;  // wall clock when the group last became Empty
    bool stored = false;         // a record of the group may be in the state store
    // Non-zero while the leader's assignment is being made durable: the write's number.
    uint64_t storing_assignment = 0;

    bool all_joined() const {
        if (!pending.empty()) return false;
        for (const auto& [mid, m] : members)
            if (!m.awaiting_join) return false;
        return true;
    }
    int32_t rebalance_timeout_ms() const {
        int32_t t = 0;
        for (const auto& [mid, m] : members) t = std::max(t, m.rebalance_timeout_ms);
        return t;
    }
};

}  // namespace sluice::group
