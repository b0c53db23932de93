#pragma once

// The group coordinator: Kafka's classic group protocol with eager rebalancing, and the
// committed offsets of every group, held in memory.
//
// It knows nothing of sockets or storage: group state reaches storage through a
// state_writer (state_store.h) that the owner sets, and comes back through
// restore_group() at start-up, so generations and members survive a restart. Joins and syncs that
// must wait for other members park their callbacks and are answered from a later call (another
// member's join, a sync, or poll() when a deadline passes); everything runs on one thread. Offsets
// reach it only once the caller has made them durable (store_offsets), so what it answers is always
// what a restart would reload.
//
// Group lifecycle (Kafka's state machine):
//   Empty --join--> PreparingRebalance --all joined / timeout--> CompletingRebalance
//   CompletingRebalance --leader's sync--> Stable --join, leave, expiry--> Preparing...
//   any state --last member gone--> Empty; an Empty group without offsets is dropped
//   by the periodic sweep (drop_idle_groups) or when deleted.

#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "group/deadlines.h"
#include "group/state_store.h"
#include "group/types.h"

namespace sluice::group {

struct clock_source {
    std::function<int64_t()> steady_ms;  // deadlines: sessions, rebalances
    std::function<int64_t()> wall_ms;    // commit timestamps and offset expiry
};
clock_source system_clocks();
// The steady clock system_clocks() uses, in ms.
int64_t steady_now_ms();

class coordinator {
  public:
    explicit coordinator(config cfg, clock_source clock = system_clocks());
    ~coordinator();
    coordinator(const coordinator&) = delete;
    coordinator& operator=(const coordinator&) = delete;

    const config& settings() const { return _cfg; }
    // Settings changed at run time (dynamic broker configs): later joins, sessions and
    // offset expiry follow them; deadlines already armed keep theirs.
    void set_settings(const config& c) { _cfg = c; }

    // --- durable group state (persistence.cc) ---
    // Where group state is written from now on; nullptr (the default): nowhere, and
    // every write counts as durable at once. The writer must outlive the coordinator's
    // use of it.
    void set_state_writer(state_writer* w) { _writer = w; }
    // At start-up, before serving: a group as the store kept it, after its offsets were
    // restored. Each member's session clock starts now, so a member that does not come
    // back is removed one session timeout later; a group stored mid-rebalance waits for
    // its members to rejoin, up to the rebalance timeout.
    void restore_group(const stored_group& s);

    // --- membership (membership.cc) ---
    // cb runs exactly once, now or from a later call.
    void join(join_request req, join_callback cb);
    void sync(const sync_request& req, sync_callback cb);
    error_code heartbeat(const std::string& group_id, const member_ref& m);
    error_code leave(const std::string& group_id, const member_ref& m);

    // --- committed offsets (offsets.cc) ---
    // Whether m may commit offsets for the group now (generation -1 with an empty member
    // id is a "simple" commit, allowed when the group has no members).
    error_code check_commit(const std::string& group_id, const member_ref& m);
    // Records offsets made durable; creates the group (Empty) if needed.
    void store_offsets(const std::string& group_id, const std::vector<offset_entry>& entries);
    // At startup: offsets read back from storage. The group counts as empty since its
    // newest commit, so a restart does not extend retention.
    void restore(const std::string& group_id, const std::vector<offset_entry>& entries);
    std::optional<committed_offset> committed(const std::string& group_id,
                                              const topic_partition& tp) const;
    std::vector<offset_entry> committed_all(const std::string& group_id) const;
    // DeleteGroups: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP or NONE.
    error_code check_delete_group(const std::string& group_id) const;
    // Once the deletion is durable: forgets the offsets, and the group if it is empty.
    void delete_group(const std::string& group_id);
    // OffsetDelete: the group-level error; per partition, NONE or
    // GROUP_SUBSCRIBED_TO_TOPIC, in the order of tps.
    error_code check_offset_delete(const std::string& group_id,
                                   const std::vector<topic_partition>& tps,
                                   std::vector<error_code>& per_partition) const;
    void erase_offsets(const std::string& group_id, const std::vector<topic_partition>& tps);
    // A deleted topic takes its committed offsets with it.
    void remove_topic(const std::string& topic);
    // Offsets past retention (see docs/configuration.md); erase_expired drops those whose
    // commit_ms is unchanged since, so a commit that raced the sweep survives.
    std::vector<std::pair<std::string, offset_entry>> expired_offsets() const;
    void erase_expired(const std::vector<std::pair<std::string, offset_entry>>& expired);

    // --- online migration to and from consumer groups (migration.cc, KIP-848) ---
    // The group as it stands, if it has members, with each member's last assignment.
    std::optional<stored_group> members_of(const std::string& group_id) const;
    // Its members move to a consumer group: parked joins and syncs are answered
    // REBALANCE_IN_PROGRESS, and the group stays Empty with its offsets.
    void release_members(const std::string& group_id);
    // A consumer group whose members all use the classic protocol becomes a classic
    // group again, at the given generation, rebalancing (every member rejoins).
    void adopt(const stored_group& s);

    // --- administration ---
    std::vector<group_listing> list() const;
    // Forgets Empty groups that hold no offsets, as Kafka's periodic cleanup does (until
    // then they are listed and described as Empty). Returns how many went.
    size_t drop_idle_groups();
    std::optional<group_description> describe(const std::string& group_id) const;
    size_t group_count() const { return _groups.size(); }

    // --- time ---
    // The earliest deadline (steady ms), if any; poll() handles every one that is due.
    std::optional<int64_t> next_deadline() const;
    // Called whenever a new deadline becomes the earliest, so the owner can re-arm the
    // one timer that drives poll().
    void on_earlier_deadline(std::function<void()> fn) { _timers.on_earlier(std::move(fn)); }
    void poll();
    // Answers every parked join and sync with NOT_COORDINATOR (broker shutdown).
    void shutdown();
    // Shared mode: the group moved to another coordinator. Its members, generation and
    // offsets are forgotten here without a write (the store keeps them for the next
    // coordinator), and its parked joins and syncs are answered NOT_COORDINATOR.
    void forget(const std::string& group_id);

    struct group_data;
    struct member_data;

  private:
    enum class timer_kind : uint8_t { group, member, pending };

    group_data* find(const std::string& id) const;
    group_data& get_or_create(const std::string& id);
    // Forgets g if it is Empty with no offsets and no pending members; g dangles after.
    bool maybe_drop(group_data& g);
    // The joins and syncs parked on a group, taken to be answered with an error.
    struct parked_calls {
        std::vector<std::pair<join_callback, std::string>> joins;  // with the member id
        std::vector<sync_callback> syncs;
        void answer(error_code e);
    };
    static parked_calls take_parked(group_data& g);

    // membership.cc
    void join_new_member(group_data& g, join_request& req, join_callback& cb);
    void join_known_member(group_data& g, join_request& req, join_callback& cb);
    void join_static_member(group_data& g, join_request& req, join_callback& cb);
    void add_member_and_rebalance(group_data& g, const std::string& member_id, join_request& req,
                                  join_callback cb);
    void update_member_and_rebalance(group_data& g, member_data& m, join_request& req,
                                     join_callback cb);
    void prepare_rebalance(group_data& g, const char* reason);
    void try_complete_join(group_data& g);
    void complete_join(group_data& g);
    void complete_sync_timeout(group_data& g);
    void remove_member(group_data& g, const std::string& member_id, const char* reason,
                       bool move_on = true);
    join_result current_join_result(const group_data& g, const member_data& m) const;
    error_code validate_member(const group_data& g, const member_ref& m) const;
    void refresh_session(group_data& g, member_data& m);
    void on_group_deadline(group_data& g);
    void on_member_deadline(group_data& g, const std::string& member_id);
    void on_pending_deadline(group_data& g, const std::string& member_id);

    void arm(timer_kind k, group_data& g, const std::string& member, int64_t& slot, int64_t at);
    void disarm(timer_kind k, const group_data& g, const std::string& member, int64_t& slot);
    std::string new_member_id(const std::string& client_id);

    // persistence.cc
    stored_group snapshot(const group_data& g) const;
    // Writes g as it is now; done (optional) runs once it is durable or failed.
    void store(group_data& g, state_writer::done_fn done = nullptr);
    void store(stored_group s, state_writer::done_fn done);
    // Forgets g's stored record, if it has one.
    void unstore(group_data& g);
    // The leader's assignment is durable (or not): the generation becomes Stable and the
    // parked syncs are answered, unless the group moved on meanwhile.
    void complete_sync(const std::string& group_id, int32_t generation, uint64_t seq,
                       const result<void>& stored);

    config _cfg;
    clock_source _clock;
    std::unordered_map<std::string, std::unique_ptr<group_data>> _groups;
    deadline_set<timer_kind> _timers;
    uint64_t _join_seq = 0;
    uint64_t _store_seq = 0;
    state_writer* _writer = nullptr;
    uint64_t _id_state[2] = {};
};

}  // namespace sluice::group
