#pragma once

// Share groups (KIP-932): the one interface the broker's handlers use for
// ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and ShareAcknowledge.
//
// Membership: members join with epoch 0 and a subscription; the group epoch moves when
// a member joins, leaves, changes its subscription or a subscribed topic grows, and the
// broker's simple assignor then gives every subscribed partition to at least one
// member (several members share a partition when there are more members than
// partitions). Share groups have no revocation: a member gets its new assignment in
// the heartbeat that sees the new epoch.
//
// Records: each (group, topic partition) keeps a share_partition (partition.h), the
// in-flight window with acquisition locks and delivery counts. ShareFetch asks where to
// read, reads the log itself, then acquires what it read; acknowledgements change the
// records' states. Every change of a window is saved through the partition_store
// before the request that made it is answered, so acknowledged records stay
// acknowledged across a crash; locks are not kept (a restarted broker offers what was
// acquired again). In shared mode (a store whose shared() is true) no window is kept in
// memory: each one is read, changed and written back in one database transaction
// (partition_store::update), locks included, so any broker serves any share-partition
// (docs/shared-mode.md#share-groups). Membership and share sessions live in memory:
// after a restart members rejoin (UNKNOWN_MEMBER_ID, SHARE_SESSION_NOT_FOUND). Runs on
// one thread; shared mode's partition_work may run on others.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "group/consumer/coordinator.h"
#include "group/share/partition.h"
#include "group/state_store.h"

namespace sluice::group {
class group_configs;
}

namespace sluice::group::share {

// Broker settings (docs/configuration.md), Kafka's names in comments.
struct config {
    int32_t session_timeout_ms = 45000;         // group.share.session.timeout.ms
    int32_t heartbeat_interval_ms = 5000;       // group.share.heartbeat.interval.ms
    int32_t record_lock_duration_ms = 30000;    // group.share.record.lock.duration.ms
    int16_t delivery_count_limit = 5;           // group.share.delivery.count.limit
    int32_t partition_max_record_locks = 2000;  // group.share.partition.max.record.locks
    // share.auto.offset.reset, the group config's default: where a share group starts
    // reading a partition it has no state for ("latest" or "earliest").
    std::string auto_offset_reset = "latest";
    // share.isolation.level: read_committed reads up to the last stable offset and never
    // hands out control records nor records of aborted transactions.
    bool read_committed = false;
};

using tp = std::pair<std::string, int32_t>;

struct stored_share_partition {
    std::string group;
    tp partition;
    share_partition state;
};

// Where share-partition state is kept: catalog::share_store (single-node mode,
// docs/formats/catalog.md) or shared::pg_share_store (shared mode,
// docs/formats/shared-catalog.md).
class partition_store {
  public:
    virtual ~partition_store() = default;
    // Every stored share-partition (`group` empty) or those of one group.
    virtual result<std::vector<stored_share_partition>> load(const std::string& group) = 0;
    virtual result<void> save(const std::string& group, const tp& p, const share_partition& s) = 0;
    // Removes the state of these partitions of the group, in one transaction.
    virtual result<void> erase(const std::string& group, const std::vector<tp>& parts) = 0;

    // Whether other brokers change the same state (shared mode). The coordinator then
    // keeps no share-partition in memory: every read and change goes through update(),
    // so that whichever broker serves a partition works on the state as last committed.
    virtual bool shared() const { return false; }
    // Shared stores: in one transaction, reads the partition's state (nullopt: none
    // stored), lets `fn` change it and, when fn returns true, saves what it left (the
    // state must then be set). `fn` may run more than once (the transaction is retried
    // after a serialization failure), so it only computes.
    using update_fn = std::function<bool(std::optional<share_partition>&)>;
    virtual result<void> update(const std::string& group, const tp& p, const update_fn& fn);
};

struct heartbeat_request {
    std::string group_id;
    std::string member_id;
    int32_t member_epoch = 0;
    std::optional<std::string> rack_id;
    std::optional<std::vector<std::string>> subscribed_topic_names;  // nullopt: unchanged
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

struct member_description {
    std::string member_id;
    std::optional<std::string> rack_id;
    int32_t member_epoch = 0;
    std::string client_id;
    std::string client_host;
    std::vector<std::string> subscribed_topics;
    partition_map assigned;
};

struct group_description {
    std::string group_id;
    std::string state;  // Empty or Stable
    int32_t group_epoch = 0;
    int32_t assignment_epoch = 0;
    std::vector<member_description> members;
};

struct partition_description {
    std::string group_id;
    tp partition;
    int64_t start_offset = 0;
    int64_t end_offset = 0;
    size_t acquired = 0;
    size_t in_flight = 0;
};

// A share-partition's start offset as the offset APIs show it.
struct partition_offset {
    tp partition;
    int64_t start_offset = 0;
    // Records of the window already done (acknowledged or archived): Kafka's lag
    // (KIP-1226) is high watermark - start offset - this.
    int64_t done_in_window = 0;
};

struct session_result {
    error_code error = error_code::none;
    std::vector<tp> partitions;  // the session's partitions after the request
};

class coordinator;

// What ShareFetch and ShareAcknowledge do to one group's share-partitions (where to read,
// acquire, acknowledge, release), with the group's settings as they were when
// coordinator::work made it. In shared mode it holds nothing of the coordinator (the
// store, its settings and the clock are its own), so it may run on another thread while
// the coordinator goes on (the broker runs it on the shared log's reader threads, where
// the store uses that thread's database connection); one at a time per object. Otherwise
// it changes the coordinator's windows in memory and runs on the coordinator's thread.
class partition_work {
  public:
    // Where to read the partition for the group (-1: nothing to acquire now). A
    // partition the group has no state for starts at share.auto.offset.reset.
    int64_t fetch_position(const tp& p, int64_t log_start, int64_t high_watermark);
    // Acquires what the fetch read ([first, last]) for the member, archiving `skip`
    // (share_partition::acquire); saved before return.
    result<std::vector<acquired_range>> acquire(const std::string& member, const tp& p,
                                                int64_t first, int64_t last, int32_t max_records,
                                                const std::vector<offset_range>& skip = {});
    error_code acknowledge(const std::string& member, const tp& p, int64_t first, int64_t last,
                           const std::vector<int8_t>& types);
    // Gives back what the member holds in these partitions.
    void release(const std::string& member, const std::vector<tp>& parts);
    // ... in every share-partition of the group (a member that left or timed out).
    void release_all(const std::string& member) { release(member, partitions()); }

    // The share-partitions the group has state for (every group's windows when the
    // work's group is empty: system.share_groups). Shared mode: the database's rows, none
    // when they cannot be read (logged).
    std::vector<stored_share_partition> windows();
    std::vector<tp> partitions();
    // Whether the group is a share group: held by the coordinator when the work was
    // made, or (shared mode: its members may be at another coordinator or gone) with
    // share-partitions in the store.
    bool exists();

    // The share group offset APIs' work (offsets.cc). The start offsets of the group's
    // share-partitions; nullopt when there is no such share group.
    std::optional<std::vector<partition_offset>> offsets();
    // The partition's window starts afresh at `start`; KAFKA_STORAGE_ERROR when not saved.
    error_code alter_offset(const tp& p, int64_t start);
    // Forgets every share-partition of the topic (the group starts it again at
    // share.auto.offset.reset): NONE, UNKNOWN_TOPIC_OR_PARTITION when the group had
    // none, KAFKA_STORAGE_ERROR.
    error_code delete_offsets(const std::string& topic);
    // Forgets every share-partition of the group: NONE or KAFKA_STORAGE_ERROR.
    error_code erase_all();

  private:
    friend class coordinator;
    partition_work(coordinator* owner, std::shared_ptr<partition_store> store, std::string group,
                   const config& settings, clock_source clock, bool known);
    // Reads, changes and saves one share-partition (partition_store::update): in shared
    // mode in the store's transaction, otherwise on the coordinator's copy in memory,
    // saved before it replaces that copy. KAFKA_STORAGE_ERROR when the store failed.
    error_code update(const tp& p, const partition_store::update_fn& fn);
    // Saves a window, then (single-node mode) puts it in the coordinator's memory.
    error_code save(const tp& p, const share_partition& s);
    // Removes these share-partitions from the store and the coordinator's memory.
    error_code erase(const std::vector<tp>& parts);

    coordinator* _owner;                      // nullptr in shared mode
    std::shared_ptr<partition_store> _store;  // nullptr: nothing saved
    std::string _group;
    bool _earliest = false;  // share.auto.offset.reset
    partition_limits _limits;
    clock_source _clock;
    bool _known = false;  // the coordinator held the group
};

class coordinator {
  public:
    coordinator(config cfg, const consumer::topic_view& topics,
                clock_source clock = system_clocks());
    ~coordinator();
    coordinator(const coordinator&) = delete;
    coordinator& operator=(const coordinator&) = delete;

    void set_settings(const config& c) { _cfg = c; }
    const config& settings() const { return _cfg; }
    // Per-group overrides (group configs: session timeout, heartbeat interval, lock
    // duration, delivery count limit, record locks, auto offset reset, isolation level);
    // nullptr: every
    // group has the broker's settings.
    void set_group_configs(const group_configs* c) { _group_configs = c; }
    // The settings in force for a group: the broker's with its overrides.
    config settings(const std::string& group) const;
    // Shared: partition_work made from now on keeps it while it runs.
    void set_store(std::shared_ptr<partition_store> s) { _store = std::move(s); }
    // Whether another coordinator (classic or consumer) holds the group id.
    void set_other_group(std::function<bool(const std::string&)> fn) { _other = std::move(fn); }
    // Where the coordinator's own share-partition work runs (a member's release, the
    // offset APIs, system.share_groups' windows): `job`, which holds a partition_work and
    // nothing of the coordinator, then `done` (may be empty) on the coordinator's thread.
    // Jobs given the same (group, member) run one at a time in the order given; the
    // offset APIs use (group, ""), whole-broker reads ("", ""). The broker runs them
    // where ShareFetch's run (broker::share_work_queue: the shared log's reader threads in
    // shared mode); by default, and in single-node mode, both run at once.
    using runner = std::function<void(const std::string& group, const std::string& member,
                                      std::function<void()> job, std::function<void()> done)>;
    void set_runner(runner r) { _run = std::move(r); }
    // At start-up, before serving.
    void restore(stored_share_partition s);
    // Shared mode: the group was placed on another coordinator. Its members and their
    // assignment are dropped (they rejoin there, UNKNOWN_MEMBER_ID), their records are
    // not released: they may still acknowledge them, as a coordinator moving in Kafka
    // leaves the share-partitions alone, and a member that is gone leaves them to lapse
    // with their acquisition locks. Share sessions stay: they are the fetching broker's.
    void forget(const std::string& group);

    // `done` gets the answer; for a member that leaves, once its records are released.
    void heartbeat(heartbeat_request req, std::function<void(heartbeat_result)> done);
    bool is_share_group(const std::string& group_id) const;
    std::vector<std::string> list() const;
    std::optional<group_description> describe(const std::string& group_id);
    // Every share-partition's window, from the store in shared mode (which every broker
    // sees alike).
    void partitions(std::function<void(std::vector<partition_description>)> done);

    // A ShareFetch or ShareAcknowledge's session: epoch 0 opens one (replacing any),
    // -1 closes it after this request (end_session), others must be the next epoch.
    // Errors: SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, UNKNOWN_MEMBER_ID (no
    // member id).
    session_result use_session(const std::string& group, const std::string& member, int32_t epoch,
                               const std::vector<tp>& added, const std::vector<tp>& forgotten);
    // Ends the session; the partitions in which the member may still hold records, for
    // partition_work::release.
    std::vector<tp> end_session(const std::string& group, const std::string& member);

    // The group's share-partition work with its settings in force now.
    partition_work work(const std::string& group);
    // work(group)'s, at once.
    int64_t fetch_position(const std::string& group, const tp& p, int64_t log_start,
                           int64_t high_watermark) {
        return work(group).fetch_position(p, log_start, high_watermark);
    }
    result<std::vector<acquired_range>> acquire(const std::string& group, const std::string& member,
                                                const tp& p, int64_t first, int64_t last,
                                                int32_t max_records,
                                                const std::vector<offset_range>& skip = {}) {
        return work(group).acquire(member, p, first, last, max_records, skip);
    }
    error_code acknowledge(const std::string& group, const std::string& member, const tp& p,
                           int64_t first, int64_t last, const std::vector<int8_t>& types) {
        return work(group).acknowledge(member, p, first, last, types);
    }

    // The share group offset APIs (offsets.cc), each `done` on the coordinator's thread
    // once the change is saved. The start offsets of the group's share-partitions;
    // nullopt when there is no such share group.
    void offsets(const std::string& group,
                 std::function<void(std::optional<std::vector<partition_offset>>)> done);
    // The outcome of a change to an empty group's offsets: the group's error
    // (NON_EMPTY_GROUP while it has members; GROUP_ID_NOT_FOUND when another kind of group
    // holds the id, or, but for Alter, when there is no such share group), else one per
    // partition or topic changed.
    using changes_done = std::function<void(error_code group, std::vector<error_code> each)>;
    // AlterShareGroupOffsets: each partition's window starts afresh at its offset (NONE
    // or KAFKA_STORAGE_ERROR). An unknown group is created, as Kafka does.
    void alter_offsets(const std::string& group, std::vector<std::pair<tp, int64_t>> starts,
                       changes_done done);
    // DeleteShareGroupOffsets: forgets every share-partition of each topic
    // (partition_work::delete_offsets).
    void delete_offsets(const std::string& group, std::vector<std::string> topics,
                        changes_done done);
    // DeleteGroups of an empty share group: its state is erased and the group is gone.
    void delete_group(const std::string& group, std::function<void(error_code)> done);

    struct member_data;
    struct group_data;

  private:
    friend class partition_work;
    group_data* find(const std::string& id) const;
    void expire_members(int64_t now);
    // Removes the member; its records are released by a job of the runner's, then `done`.
    void remove_member(group_data& g, const std::string& member_id, const char* reason,
                       std::function<void()> done = nullptr);
    void assign(group_data& g);
    std::map<std::string, int32_t> subscribed_sizes(const group_data& g) const;
    bool shared_store() const { return _store && _store->shared(); }
    // Single-node mode: the share-partitions in memory of the group (every group's when
    // it is empty).
    std::vector<stored_share_partition> local_windows(const std::string& group) const;
    // Whether the group's offsets may be changed now (the change's first half, on this
    // thread; shared mode's work checks the store for a group not held here).
    error_code check_empty(const std::string& group, bool create);

    config _cfg;
    const consumer::topic_view& _topics;
    clock_source _clock;
    std::map<std::string, std::unique_ptr<group_data>> _groups;
    std::map<std::pair<std::string, tp>, share_partition> _partitions;  // by (group, tp)
    // Share sessions of ShareFetch/ShareAcknowledge, by (group, member id). Kept apart
    // from membership: a member fetches with the session it has, as in Kafka.
    struct share_session {
        int32_t next_epoch = 1;
        std::set<tp> partitions;
    };
    std::map<std::pair<std::string, std::string>, share_session> _sessions;
    std::function<bool(const std::string&)> _other;
    std::shared_ptr<partition_store> _store;
    const group_configs* _group_configs = nullptr;
    runner _run = [](const std::string&, const std::string&, const std::function<void()>& job,
                     const std::function<void()>& done) {
        job();
        if (done) done();
    };
};

}  // namespace sluice::group::share
