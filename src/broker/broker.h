#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "broker/access.h"
#include "broker/acl_service.h"
#include "broker/config.h"
#include "broker/connection_quotas.h"
#include "broker/dynamic_config.h"
#include "broker/expansion_hooks.h"
#include "broker/fetch_session.h"
#include "broker/metadata_stores.h"
#include "broker/offset_writer.h"
#include "broker/periodic_thread.h"
#include "broker/share_work.h"
#include "broker/shared_mode.h"
#include "broker/topic_registry.h"
#include "broker/txn_participants.h"
#include "catalog/catalog.h"
#include "group/consumer/coordinator.h"
#include "group/coordinator.h"
#include "group/group_configs.h"
#include "group/share/coordinator.h"
#include "log/log_manager.h"
#include "net/byte_budget.h"
#include "net/event_loop.h"
#include "net/in_flight_bound.h"
#include "net/listener.h"
#include "net/log_throttle.h"
#include "txn/coordinator.h"
#include "txn/state_store.h"

namespace sluice::broker {

class session;

// Wires the network to the handlers and owns what they share. Runs on the event loop
// thread; the log manager's flusher reports back through event_loop::post.
class broker {
  public:
    // The metadata stores are the catalog's (local_metadata_stores of the catalog file in
    // cfg.data_dir) unless `stores` is given; `cat` still holds the cluster id.
    broker(const broker_config& cfg, net::event_loop& loop, catalog::catalog& cat,
           log::log_manager& logs);
    broker(broker_config cfg, net::event_loop& loop, catalog::catalog& cat, log::log_manager& logs,
           metadata_stores stores);
    ~broker();

    // Declares the catalog's topics to the log manager and loads committed offsets;
    // start() does it when not done before. Call it first when something must read the
    // logs before the broker serves (expansions catching up).
    result<void> load();
    // Binds the listeners; returns them with their bound addresses (the real port when
    // 0 was asked), in configuration order.
    result<std::vector<listener_config>> start();
    // Stops accepting, answers parked requests, waits (bounded) for in-flight requests
    // to finish, closes connections, then calls done on the loop thread.
    void shutdown(std::function<void()> done);

    const broker_config& config() const { return _cfg; }
    net::event_loop& loop() { return _loop; }
    // The bytes of requests read and not yet answered, all connections (max_in_flight_bytes).
    const std::shared_ptr<net::in_flight_bound>& in_flight() const { return _in_flight; }
    topic_registry& topics() { return _topics; }
    log::log_manager& logs() { return _logs; }
    group::coordinator& groups() { return _groups; }
    // The transaction coordinator (loaded by load(), which completes prepared ones).
    txn::coordinator& txns() { return *_txns; }
    // Consumer groups of the KIP-848 protocol; offsets of every group stay in groups().
    group::consumer::coordinator& consumer_groups() { return _consumer_groups; }
    // Share groups (KIP-932) and their share-partition state.
    group::share::coordinator& share_groups() { return _share_groups; }
    // Where ShareFetch and ShareAcknowledge do their share-partition work (share_work.h).
    share_work_queue& share_work() { return _share_work; }
    // Group configs (kafka-configs --entity-type groups; broker_dynamic.cc): the broker
    // settings they override and bound, each group's set, and a change of a group's
    // whole set (checked, stored, then in force). Errors: invalid_config (the message is
    // Kafka's), io_error.
    group::group_defaults group_defaults() const;
    const group::group_configs& group_configs() const { return _group_configs; }
    result<void> set_group_configs(const std::string& group_id, group::group_config_map configs,
                                   bool validate_only);
    // Broker settings changed at run time (dynamic_config.h; broker_dynamic.cc).
    const dynamic_config& dynamic_configs() const { return _dynamic; }
    // Replaces a level's whole set of dynamic settings: checked, stored in the catalog,
    // then applied to the topics and groups. Errors: those of dynamic_config::check,
    // io_error and the catalog's.
    result<void> set_dynamic_configs(config_level l, config_map values, bool validate_only);
    // Incremental fetch sessions (KIP-227) of the clients that fetch from this broker.
    fetch_session_cache& fetch_sessions() { return _fetch_sessions; }
    // Makes committed-offset changes durable, then runs fn on the loop thread.
    void store_offsets(std::vector<catalog::offset_write> writes,
                       std::function<void(result<void>)> fn);
    const std::string& cluster_id() const { return _cluster_id; }
    // The brokers announced to clients of a listener: the same ids on every listener,
    // each with that listener's address.
    const std::vector<advertised_broker>& brokers(size_t listener) const {
        return _listeners[listener].brokers;
    }
    const listener_config& listener(size_t i) const { return _listeners[i].cfg; }
    // Leadership is spread across the advertised ids (shared mode: over the live brokers
    // by placement).
    int32_t leader_for(const topic_state& t, int32_t partition) const;
    int32_t leader_for(int32_t partition) const {
        return static_cast<int32_t>(static_cast<size_t>(partition) % _broker_count);
    }
    // The broker that coordinates a group (`transaction` false) or transactional id, of
    // those announced to clients of `listener`.
    const advertised_broker& coordinator_for(size_t listener, const std::string& key,
                                             bool transaction) const;

    // Shared mode (shared_mode.h); set before load(). Single-node mode otherwise.
    void set_shared(shared_mode s);
    bool shared() const { return _shared.log != nullptr; }
    // Shared mode's partition logs (run_read: reads off the loop); nullptr otherwise.
    shared::shared_log* shared_log() const { return _shared.log; }
    // Shared mode, after start(): lists the live brokers from now on (read again every
    // poll interval with the topics) and renews this broker's lease. A broker whose lease
    // passes (the database out of reach) stops serving as a member until it renews it
    // (member()); one whose id another process took exits (status 3).
    void join_cluster(shared::broker_registry& registry);
    // False while a shared-mode broker's lease has passed: its produce, fetch and
    // ListOffsets answer NOT_LEADER_OR_FOLLOWER (retriable) then. Any thread.
    bool member() const;
    // Whether this broker coordinates the transactional id (shared mode: placement over
    // the live brokers; single-node mode: always).
    bool coordinates_txn(const std::string& transactional_id) const;
    // Whether this broker may serve a request for the group now, as every group handler
    // asks after authorizing it: NONE; in shared mode NOT_COORDINATOR (placed on another
    // live broker), COORDINATOR_NOT_AVAILABLE (this broker holds no lease) or
    // COORDINATOR_LOAD_IN_PROGRESS (the group moved here and its state is being read from
    // the database). Single-node mode: always NONE.
    protocol::error_code group_coordinator_error(const std::string& group_id) const;
    // A store refused writes of these groups (the offset writer's, or a TxnOffsetCommit's
    // in the transaction state): another broker took them over. Forgotten here; those
    // still placed here are read again.
    void on_groups_fenced(const std::set<std::string>& groups);
    // The partition's log, whichever mode; nullptr when t has no such partition.
    log::partition_store* partition(const topic_state& t, int32_t partition);
    size_t broker_count() const { return _broker_count; }
    access_control& access() { return _access; }
    catalog::producer_id_allocator& producer_ids() { return *_stores.producer_ids; }
    acl_service& acls() { return _acls; }
    // Re-reads the TLS certificate and key (SIGHUP); errors are logged and the previous
    // ones stay in use.
    void reload_tls();
    bool shutting_down() const { return _shutting_down; }
    // During shutdown: finishes once no connection has a request in flight.
    void check_drained();

    // Calls on_event(false) whenever the high watermark of one of `tps` advances (or
    // its topic is deleted) until on_event returns true, or on_event(true) once when
    // the timeout passes. Used by long-polling fetch.
    void wait_for_data(const std::vector<topic_partition>& tps, std::chrono::milliseconds timeout,
                       std::function<bool(bool timed_out)> on_event);
    void notify_data(const std::vector<topic_partition>& tps);
    // Grows with every notify_data naming one of `tps` (a read that began at one value and
    // finds another may have missed data: it reads again rather than park).
    uint64_t data_version(const std::vector<topic_partition>& tps) const;

    // Runs fn on the loop thread when everything appended to the partition up to
    // last_offset is durable.
    void when_durable(log::partition_log* plog, offset_t last_offset,
                      std::function<void(result<void>)> fn);

    // Expansions, when the app has them; set before start().
    void set_expansions(expansion_hooks* h) { _expansions.store(h); }
    // Whether produce answers for the topic wait for expansions.
    bool expands(const std::string& topic) const {
        auto* h = _expansions.load();
        return h && h->expands(topic);
    }
    // Runs fn on the loop thread once tp's expansions have expanded up to last_offset.
    void when_expanded(const topic_partition& tp, offset_t last_offset, std::function<void()> fn);

  private:
    // The topics as the consumer coordinator sees them.
    class registry_topic_view final : public group::consumer::topic_view {
      public:
        explicit registry_topic_view(const topic_registry& t) : _t(t) {}
        std::optional<int32_t> partitions(const std::string& topic) const override {
            const topic_state* s = _t.find(topic);
            if (!s) return std::nullopt;
            return s->info.partitions;
        }
        std::vector<std::string> names() const override {
            std::vector<std::string> out;
            for (const topic_state* s : _t.all()) out.push_back(s->info.name);
            return out;
        }

      private:
        const topic_registry& _t;
    };
    struct waiter {
        std::vector<topic_partition> tps;
        net::event_loop::timer_id timer = 0;
        std::function<bool(bool)> fn;
    };
    struct listener_state {
        listener_config cfg;
        std::unique_ptr<net::listener> socket;
        std::vector<advertised_broker> brokers;
    };
    void on_accept(size_t listener, int fd, std::string peer);
    void check_tls_files();
    // The distinct TLS contexts the broker reloads.
    std::vector<net::tls_context*> tls_contexts() const;
    std::shared_ptr<net::tls_context> listener_tls(const listener_config& lc) const {
        if (!lc.tls()) return nullptr;
        return lc.protocol == security_protocol::ssl ? _cfg.ssl_listener_tls : _cfg.tls;
    }
    // Arms the loop timer that drives the coordinator's poll() for its earliest deadline.
    void schedule_groups();
    result<void> load_offsets();
    result<void> load_transactions();
    result<void> load_share_groups();
    void expire_transactions();
    result<void> load_dynamic_configs();
    void apply_dynamic_configs();
    result<void> load_group_configs();
    void sweep_expired_offsets();
    void finish_waiter(uint64_t id, bool timed_out);
    // Shared mode: reads the live brokers and the topics again (a thread of its own), then
    // applies them on the loop thread.
    void poll_cluster();
    void start_log_maintenance();
    result<std::vector<listener_config>> bind_listeners();
    void apply_live_brokers(const std::vector<shared::live_broker>& live);
    // Shared mode, groups moving (broker_groups.cc): what the database holds of them.
    struct group_snapshot;
    // Forgets the groups (classic and consumer) placed on other brokers now; `all`: every
    // group (the lease was lost: they were placed on the others).
    void drop_moved_groups(bool all = false);
    std::set<std::string> held_group_ids() const;
    // Groups will move here: they answer COORDINATOR_LOAD_IN_PROGRESS until the poll
    // thread has read them, at its `polls`th poll from now (and not before `grace`).
    void expect_groups(std::vector<int32_t> settled, int polls, std::chrono::milliseconds grace);
    // The poll thread's read: the groups that moved here start from it.
    void take_groups(group_snapshot& s);
    group_snapshot read_groups(const std::vector<int32_t>& live);
    // Takes the coordinator epochs of the groups placed here under `live` (the poll's
    // fresh list), then reads their state (shared/group_fence.h).
    void read_group_state(group_snapshot& s, const std::vector<int32_t>& live);
    // On the loop, before serving: read_group_state and take_groups at once.
    void take_groups_now();

    broker_config _cfg;
    net::event_loop& _loop;
    catalog::catalog& _catalog;
    metadata_stores _stores;  // before _topics, which uses it
    log::log_manager& _logs;
    dynamic_config _dynamic;
    connection_quotas _connection_quotas;  // of the Kafka listeners, from _dynamic
    net::log_throttle _refusal_log{std::chrono::seconds(1)};
    topic_registry _topics;
    group::coordinator _groups;
    registry_topic_view _topic_view{_topics};
    group::group_configs _group_configs;
    group::consumer::coordinator _consumer_groups;
    group::share::coordinator _share_groups;
    std::shared_ptr<group::share::partition_store> _share_store;  // kept by running work
    share_work_queue _share_work{_loop};
    fetch_session_cache _fetch_sessions;
    std::unique_ptr<offset_writer> _offsets;
    std::unique_ptr<txn::state_store> _txn_store;
    std::unique_ptr<txn_participants> _txn_participants;
    std::unique_ptr<txn::coordinator> _txns;
    std::unique_ptr<periodic_thread> _retention;  // deletes segments by retention
    std::unique_ptr<periodic_thread> _cleaner;    // compacts cleanup.policy=compact topics
    std::unique_ptr<periodic_thread> _reloader;   // partitions out of service, loaded again
    shared_mode _shared;
    std::vector<int32_t> _live_ids;                        // shared mode: sorted
    std::vector<int32_t> _polled_ids;                      // poll_cluster's thread only
    std::unique_ptr<catalog::offset_store> _reload_store;  // poll_cluster's thread only
    int64_t _txn_offsets_seen = -1;                        // poll_cluster's thread only
    std::unique_ptr<periodic_thread> _cluster_poll;        // shared mode: poll_cluster
    std::atomic<bool> _rejoined{false};  // shared mode: the lease was renewed after it passed
    // Shared mode, groups moving here: the live brokers under which the groups in memory
    // were placed (groups_loading), and when their state may be taken from the database.
    std::vector<int32_t> _settled_ids;
    bool _groups_loading = false;
    int64_t _groups_load_not_before = 0;  // steady ms
    // The poll thread reads the groups' state at its nth poll from now (0: the next one;
    // -1: not asked).
    std::atomic<int> _group_load_polls{-1};
    std::unique_ptr<group::state_store> _reload_groups;  // poll_cluster's thread only
    // Groups placed here whose writes were refused (another broker took them while this
    // one still served them): COORDINATOR_LOAD_IN_PROGRESS until read again.
    std::set<std::string> _groups_reload;
    net::event_loop::timer_id _group_timer = 0;
    int64_t _group_timer_at = 0;  // steady ms the armed timer fires at
    access_control _access;
    acl_service _acls;
    std::vector<listener_state> _listeners;
    size_t _broker_count = 1;
    std::string _cluster_id;
    std::unordered_map<uint64_t, std::shared_ptr<session>> _sessions;  // by connection id
    std::unordered_map<uint64_t, waiter> _waiters;
    std::unordered_map<topic_partition, std::set<uint64_t>> _waiters_by_tp;
    std::unordered_map<topic_partition, uint64_t> _notified;  // shared mode: data_version
    uint64_t _next_waiter = 1;
    bool _shutting_down = false;
    bool _loaded = false;
    std::function<void()> _on_drained;
    std::atomic<expansion_hooks*> _expansions{nullptr};
    // Shared by every Kafka connection (queued_max_request_bytes).
    std::shared_ptr<net::byte_budget> _request_budget;
    std::shared_ptr<net::in_flight_bound> _in_flight;
};

}  // namespace sluice::broker
