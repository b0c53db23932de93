#pragma once

// Topics (catalog/metadata_store.h) in the shared catalog: sluice_topics with their
// sluice_partitions rows and sluice_topic_configs, and the cluster id in sluice_cluster
// (docs/formats/shared-catalog.md, version 2).

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "catalog/metadata_store.h"
#include "shared/pg_database.h"

namespace sluice::shared {

// Topic ids as the shared catalog keeps them: 32 lower-case hex digits.
std::string topic_id_hex(const catalog::uuid& id);
std::optional<catalog::uuid> topic_id_from_hex(std::string_view hex);

// The channel every topic change is announced on (NOTIFY, payload: the topic's name) when
// it commits: brokers LISTEN on it (pg_listener) and refresh().
inline constexpr const char* topics_channel = "sluice_topics";

// Thread-safe. Reads come from a copy in memory: this broker's writes reach it when they
// commit, other brokers' when refresh() runs (the broker runs it when notified on
// topics_channel, and periodically, since notifications are an accelerator only). Owns
// its connection.
class pg_topic_store final : public catalog::topic_store {
  public:
    // Connects, gives the cluster its id if it has none yet (the first broker's, kept for
    // good) and loads the topics. The catalog's schema must be in place.
    static result<std::unique_ptr<pg_topic_store>> open(const pg_config& config);
    explicit pg_topic_store(std::unique_ptr<pg_database> db) : _db(std::move(db)) {}

    // Reads every topic again, from one snapshot. Returns whether anything changed.
    result<bool> refresh();
    std::string cluster_id() const { return _cluster_id; }

    result<void> create_topic(const catalog::topic_info& t) override;
    // Deletes the topic's rows in every table (its partitions, batch index entries,
    // producer state, configs and committed group offsets) in one transaction; objects
    // left without batches are removed by the object cleanup. errc::in_use, naming them,
    // while the topic has expansions (sluice_expansions).
    result<void> delete_topic(const std::string& name) override;
    result<void> set_topic_configs(const std::string& name,
                                   const std::map<std::string, std::string>& configs) override;
    result<void> set_partitions(const std::string& name, int32_t partitions) override;

    std::vector<catalog::topic_info> list_topics() const override;
    std::optional<catalog::topic_info> find_topic(const std::string& name) const override;
    std::optional<catalog::topic_info> find_topic(const catalog::uuid& id) const override;
    uint64_t generation() const override { return _generation.load(); }

  private:
    result<void> ensure_cluster_id();

    std::unique_ptr<pg_database> _db;
    std::string _cluster_id;

    mutable std::mutex _mu;
    std::map<std::string, catalog::topic_info> _by_name;  // guarded by _mu
    std::map<catalog::uuid, std::string> _name_by_id;     // guarded by _mu
    std::atomic<uint64_t> _generation{1};
};

}  // namespace sluice::shared
