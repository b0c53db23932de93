#pragma once

// Consumer groups of Kafka 4's rebalance protocol (KIP-848): the one interface the
// broker's handlers use for ConsumerGroupHeartbeat, ConsumerGroupDescribe and the
// member-epoch checks of OffsetCommit/OffsetFetch.
//
// The broker computes each group's target assignment (assignor.h) whenever the group
// epoch moves (a member joins, leaves, changes its subscription, or a subscribed topic
// changes), and brings every member towards it one heartbeat at a time (reconcile.h):
// revoke first, then get what nobody else holds. Every change is written through the
// state_writer (state_store.h) before the heartbeat that made it is answered, and
// restore() brings groups back at start-up with their epochs, so a restart does not
// rebalance. Runs on one thread; no sockets, no storage of its own.
//
// Group states (as ConsumerGroupDescribe and ListGroups name them): Empty (no members),
// Assigning (group epoch ahead of the assignment: never seen outside a heartbeat, the
// assignment is computed at once), Reconciling (a member is not yet at the assignment
// epoch or still revoking / waiting for partitions), Stable.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "group/consumer/assignor.h"
#include "group/consumer/reconcile.h"
#include "group/coordinator.h"
#include "group/deadlines.h"
#include "group/state_store.h"
#include "group/types.h"

namespace sluice::group {
class group_configs;
}

namespace sluice::group::consumer {

// What the coordinator needs to know of topics: partition counts, and every name (for
// regex subscriptions).
class topic_view {
  public:
    virtual ~topic_view() = default;
    virtual std::optional<int32_t> partitions(const std::string& topic) const = 0;
    virtual std::vector<std::string> names() const = 0;
};

inline constexpr int32_t leave_epoch = -1;         // the member leaves for good
inline constexpr int32_t static_leave_epoch = -2;  // a static member leaves, to come back

struct heartbeat_request {
    int16_t version = 0;
    std::string group_id;
    std::string member_id;
    int32_t member_epoch = 0;
    std::optional<std::string> instance_id;
    std::optional<std::string> rack_id;
    int32_t rebalance_timeout_ms = -1;                               // -1: unchanged
    std::optional<std::vector<std::string>> subscribed_topic_names;  // nullopt: unchanged
    std::optional<std::string> subscribed_topic_regex;               // v1+; "" clears it
    std::optional<std::string> server_assignor;
    std::optional<partition_map> owned;  // nullopt: unchanged since the last heartbeat
    std::string client_id;
    std::string client_host;
};

struct heartbeat_result {
    error_code error = error_code::none;
    std::optional<std::string> message;
    std::string member_id;
    int32_t member_epoch = 0;
    int32_t heartbeat_interval_ms = 0;
    std::optional<partition_map> assignment;  // nullopt: unchanged
};
using heartbeat_callback = std::function<void(const heartbeat_result&)>;

struct member_description {
    std::string member_id;
    std::optional<std::string> instance_id;
    std::optional<std::string> rack_id;
    int32_t member_epoch = 0;
    bool classic = false;  // speaks the classic protocol (after an online upgrade)
    std::string client_id;
    std::string client_host;
    std::vector<std::string> subscribed_topics;
    std::optional<std::string> subscribed_regex;
    partition_map assigned;
    partition_map target;
};

struct group_description {
    std::string group_id;
    std::string state;  // Empty, Assigning, Reconciling, Stable
    int32_t group_epoch = 0;
    int32_t assignment_epoch = 0;
    std::string assignor;
    std::vector<member_description> members;
};

struct group_listing {
    std::string group_id;
    std::string state;
};

class coordinator {
  public:
    coordinator(config cfg, const topic_view& topics, clock_source clock = system_clocks());
    ~coordinator();
    coordinator(const coordinator&) = delete;
    coordinator& operator=(const coordinator&) = delete;

    void set_settings(const config& c) { _cfg = c; }
    // Per-group overrides of the session timeout and heartbeat interval (group configs);
    // nullptr: every group has the broker's.
    void set_group_configs(const group_configs* c) { _group_configs = c; }
    // Where changes are written; nullptr: nowhere (each write counts as durable at once).
    void set_state_writer(state_writer* w) { _writer = w; }
    // The classic coordinator, for online migration (KIP-848): a consumer member joining
    // a classic group with members converts it, and the group goes back to it when the
    // last consumer member leaves (group.consumer.migration.policy). nullptr: a consumer
    // member may not join a classic group in use (GROUP_ID_NOT_FOUND).
    void set_classic(group::coordinator* classic) { _classic = classic; }
    // At start-up, before serving.
    void restore(const stored_consumer_group& s);

    // cb runs once, when what the heartbeat changed is durable.
    void heartbeat(heartbeat_request req, heartbeat_callback cb);

    // Members speaking the classic protocol in a consumer group with members (after an
    // online upgrade; classic_members.cc, Kafka's classicGroup*ToConsumerGroup). The
    // broker assigns them: JoinGroup answers at once with the member's epoch as the
    // generation and no leader, SyncGroup with its partitions, Heartbeat with
    // REBALANCE_IN_PROGRESS when it must join again to move towards its target.
    void classic_join(join_request req, join_callback cb);
    void classic_sync(const sync_request& req, const sync_callback& cb);
    error_code classic_heartbeat(const std::string& group_id, const member_ref& ref);
    error_code classic_leave(const std::string& group_id, const member_ref& ref);

    bool is_consumer_group(const std::string& group_id) const;
    bool has_members(const std::string& group_id) const;
    // Forgets an empty consumer group (a classic member takes the id, or DeleteGroups).
    void erase_group(const std::string& group_id);
    // Shared mode: the group moved to another coordinator. Forgotten here with its members
    // and epochs, without a write (the store keeps them for the next coordinator).
    void forget(const std::string& group_id);

    // OffsetCommit with a member id and epoch: nullopt when the id is not a consumer
    // group (the classic coordinator decides); else NONE, UNKNOWN_MEMBER_ID,
    // STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH or UNSUPPORTED_VERSION (below v9).
    std::optional<error_code> check_commit(const std::string& group_id,
                                           const std::string& member_id, int32_t member_epoch,
                                           int16_t api_version) const;
    // OffsetFetch v9+ naming a member: NONE, UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH.
    error_code check_fetch(const std::string& group_id, const std::optional<std::string>& member_id,
                           int32_t member_epoch) const;

    std::vector<group_listing> list() const;
    std::optional<group_description> describe(const std::string& group_id) const;

    std::optional<int64_t> next_deadline() const;
    void on_earlier_deadline(std::function<void()> fn) { _timers.on_earlier(std::move(fn)); }
    void poll();

    struct member_data;
    struct group_data;

  private:
    enum class timer_kind : uint8_t { session, revocation };

    group_data* find(const std::string& id) const;
    std::optional<heartbeat_result> validate(heartbeat_request& req) const;
    void leave(group_data& g, const heartbeat_request& req, heartbeat_callback& cb);
    // The member the heartbeat speaks for, created or taken over on a join; sets err.
    member_data* member_for(group_data& g, heartbeat_request& req, bool& created,
                            heartbeat_result& err);
    bool update_subscription(member_data& m, const heartbeat_request& req);
    topic_sizes subscribed_sizes(const group_data& g) const;
    void compute_target(group_data& g);
    void reconcile_member(group_data& g, member_data& m, const std::optional<partition_map>& owned);
    void remove_member(group_data& g, const std::string& member_id, const char* reason);
    // classic_members.cc: online migration.
    group_data* upgrade(const stored_group& classic, std::string& why);
    // When the member leaving is the last one using the consumer protocol: the group
    // goes back to the classic coordinator (g is gone) and true is returned.
    bool maybe_downgrade(group_data& g, const std::string& leaving);
    member_data* classic_member(group_data& g, const member_ref& ref, error_code& err);
    // Answers the join once what it changed is durable.
    void finish_classic_join(group_data& g, member_data& m, bool changed, join_callback cb);
    void refresh_session(group_data& g, member_data& m);
    void arm(timer_kind k, group_data& g, const std::string& member, int64_t& slot, int64_t at);
    void disarm(timer_kind k, const group_data& g, const std::string& member, int64_t& slot);
    stored_consumer_group snapshot(const group_data& g) const;
    void store(group_data& g, state_writer::done_fn done);

    config _cfg;
    const topic_view& _topics;
    clock_source _clock;
    std::map<std::string, std::unique_ptr<group_data>> _groups;
    deadline_set<timer_kind> _timers;
    group::coordinator* _classic = nullptr;
    state_writer* _writer = nullptr;
    const group_configs* _group_configs = nullptr;
};

}  // namespace sluice::group::consumer
