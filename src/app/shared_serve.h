#pragma once

// `sluice serve` in shared mode (docs/shared-mode.md): the flags that turn it on
// (--shared-storage, --shared-catalog, the S3 settings, --node-id, ...) and the engines a
// broker in shared mode is built from: the object store, the shared catalog's schema, the
// shared log and the metadata stores on PostgreSQL.

#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "broker/metadata_stores.h"
#include "broker/periodic_thread.h"
#include "broker/shared_mode.h"
#include "common/result.h"
#include "shared/broker_registry.h"
#include "shared/maintenance/maintenance.h"
#include "shared/object_store.h"
#include "shared/pg_expansion_store.h"
#include "shared/pg_metadata.h"
#include "shared/pg_refresher.h"
#include "shared/pg_security_store.h"
#include "shared/pg_topic_store.h"
#include "shared/shared_log.h"
#include "sql/partition_source.h"

namespace sluice::app {

struct shared_serve_options {
    std::string storage;  // s3://BUCKET/PREFIX; empty: single-node mode
    std::string catalog;  // postgresql://...
    int32_t node_id = 0;
    // Empty: from SLUICE_S3_* (then AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION).
    std::string s3_endpoint, s3_region, s3_access_key, s3_secret_key;
    bool s3_virtual_hosted = false;
    bool s3_unsigned_payload = false;
    int64_t produce_window_ms = 20;
    int64_t windows_in_flight = 1;  // shared_log_config::windows_in_flight
    int64_t broker_lease_ms = 10000;
    // Background work (src/shared/maintenance): how often each job runs per partition,
    // cluster-wide, and how long an unreferenced object stays before it is deleted.
    int64_t maintenance_interval_ms = 60000;
    int64_t object_delete_grace_ms = 300000;
    size_t cache_bytes = 256u << 20;
    // The cache's disk tier: empty dir is <data_dir>/object-cache; 0 bytes turns it off.
    std::string disk_cache_dir;
    uint64_t disk_cache_bytes = uint64_t{1} << 30;

    bool enabled() const { return !storage.empty() || !catalog.empty(); }
};

void add_shared_serve_flags(CLI::App& cmd, shared_serve_options& o);

// What a broker in shared mode runs on; outlives the broker.
struct shared_engines {
    std::unique_ptr<shared::object_store> store;
    std::unique_ptr<shared::shared_log> log;
    std::unique_ptr<shared::pg_topic_store> topics;
    std::unique_ptr<shared::pg_producer_ids> producer_ids;
    std::unique_ptr<shared::pg_broker_config_store> broker_configs;
    // Users and policies (Kafka ACLs among them), the same on every broker: read from
    // memory, refreshed on another broker's NOTIFY (or every second) by `refresher`.
    std::unique_ptr<shared::pg_security_store> security;
    std::unique_ptr<shared::pg_refresher> refresher;
    // Expansions' definitions (each broker keeps a copy of every target of its own:
    // docs/expansions.md, "Shared mode"); follow_shared_expansions refreshes them.
    std::unique_ptr<shared::pg_expansion_store> expansions;
    shared::pg_config db;
    std::string object_prefix;  // where the brokers' objects are (shared_log_config)
    std::string where;          // for the start-up log line (no secrets)

    broker::metadata_stores stores(int32_t node_id);
    broker::shared_mode mode(int32_t node_id, std::chrono::milliseconds poll) const;
};

// The SQL engine's partitions in shared mode: those of the shared catalog's topics, read
// through the partition-log interface of the shared log (docs/shared-mode.md, "SQL").
class shared_sql_partitions final : public sql::partition_source {
  public:
    explicit shared_sql_partitions(shared_engines& e) : _e(e) {}
    log::partition_store* partition(const std::string& topic, int32_t p) override;

  private:
    shared_engines& _e;
};

// The committed offsets of every group in the shared catalog, on a connection of their
// own, for the SQL system tables (sql_state::read_offsets_from).
result<std::unique_ptr<catalog::offset_store>> open_shared_offsets(const shared_engines& e);

// Checks the options, connects to the database (creating or upgrading the shared
// catalog's schema) and to the object store; the cache's disk tier goes under
// `data_dir` unless the options say where. Errors name the flag or engine at fault.
result<shared_engines> open_shared_engines(const shared_serve_options& o,
                                           const std::filesystem::path& data_dir);

// Reads the expansions' definitions again when another broker changed them (NOTIFY, or
// every second), then calls `changed` (on the refresher's thread; must not block).
// Destroy the refresher before what `changed` calls.
result<std::unique_ptr<shared::pg_refresher>> follow_shared_expansions(
    shared_engines& e, std::function<void()> changed);

// Runs the background work (merging, retention, cleanup of unreferenced objects) every
// 5 s (every interval when that is shorter) on a thread of its own, sharing it with the
// other brokers through the database's job leases; stops when destroyed. Takes no job while
// the broker's lease has passed, and takes them as the registry's current incarnation.
class shared_maintenance {
  public:
    shared_maintenance(shared_engines& e, const shared::broker_registry& registry,
                       shared::maintenance::settings s);
    shared_maintenance(const shared_maintenance&) = delete;
    shared_maintenance& operator=(const shared_maintenance&) = delete;

  private:
    void pass();  // one pass on this thread's own connection (made again after an error)

    shared_engines& _engines;
    const shared::broker_registry& _registry;
    shared::maintenance::settings _settings;
    std::unique_ptr<shared::pg_database> _db;
    broker::periodic_thread _thread;  // last: stops before the members it uses go
};
std::unique_ptr<shared_maintenance> start_shared_maintenance(
    const shared_serve_options& o, shared_engines& e, const shared::broker_registry& registry,
    std::map<std::string, std::string> topic_defaults);

// Registers this broker (its id, the first Kafka listener's advertised address) with a
// lease. Errors: in_use when another live process holds the id.
result<std::unique_ptr<shared::broker_registry>> register_shared_broker(
    const shared_serve_options& o, const shared_engines& e, const std::string& host, int32_t port);

}  // namespace sluice::app
