#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "catalog/catalog.h"
#include "common/result.h"
#include "log/log_manager.h"

namespace sluice::broker {

struct topic_counters;

struct topic_state {
    catalog::topic_info info;
    log::log_config log_cfg;
    // Its metrics series (broker_metrics.h), resolved at first use on the loop thread.
    mutable std::shared_ptr<const topic_counters> counters;
};

// The topics the broker serves, kept in memory for the request path. The catalog is
// the durable record; the log manager holds the data. Changes go to the catalog first.
class topic_registry {
  public:
    topic_registry(catalog::topic_store& cat, log::log_manager& logs,
                   std::map<std::string, std::string> broker_defaults);

    // Loads every topic from the catalog into memory and declares it to the log manager.
    void load();
    // Makes the topics in memory the catalog's again, after another broker changed them
    // (shared mode): new ones added, deleted ones dropped (their data is the shared
    // catalog's to delete), partition counts and configs taken over. Loop thread.
    void sync();
    const topic_state* find(const std::string& name) const;
    const topic_state* find(const catalog::uuid& id) const;
    std::vector<const topic_state*> all() const;  // ordered by name

    // Validates name, partition count and configs and returns the topic as it is (or,
    // with validate_only, would be) created; with validate_only nothing is written.
    // Errors: invalid_argument (name), out_of_range (partitions), invalid_config,
    // already_exists.
    result<topic_state> create(const std::string& name, int32_t partitions,
                               const std::map<std::string, std::string>& configs,
                               bool validate_only);
    result<void> remove(const std::string& name);
    // Replaces every config the topic sets (AlterConfigs semantics: keys left out return to
    // their defaults). Takes effect at once, for the log too. Errors: not_found,
    // invalid_config (naming the key).
    result<void> set_configs(const std::string& name,
                             const std::map<std::string, std::string>& configs, bool validate_only);
    // Grows the topic to `total` partitions. Errors: not_found, out_of_range (not above the
    // current count, or above max_partitions_per_topic).
    result<void> add_partitions(const std::string& name, int32_t total, bool validate_only);

    // Broker-level topic defaults set at run time (broker_settings), keyed by topic config
    // name: this broker's own over the cluster-wide default over the static
    // --topic-default values. Re-configures the log of every topic at once.
    void set_dynamic_defaults(std::map<std::string, std::string> cluster_default,
                              std::map<std::string, std::string> this_broker);
    // The broker-level default of every topic config that has one, all levels merged.
    const std::map<std::string, std::string>& defaults() const { return _defaults; }

    std::string effective_config(const topic_state& t, std::string_view key) const;
    // Where the value in force comes from, as Kafka's ConfigSource numbers it: 1 set on
    // the topic, 2 this broker's dynamic default, 3 the cluster-wide dynamic default, 4 a
    // broker-wide --topic-default, 5 the built-in default.
    int8_t config_source(const topic_state& t, std::string_view key) const;
    // Every level that gives key a value, highest precedence first, as (source, value):
    // DescribeConfigs' synonyms.
    std::vector<std::pair<int8_t, std::string>> config_levels(const topic_state& t,
                                                              std::string_view key) const;

  private:
    log::log_config to_log_config(const catalog::topic_info& t) const;
    // Each value, then the pair min/max.compaction.lag.ms; errc::invalid_config.
    result<void> check_configs(const std::map<std::string, std::string>& configs) const;

    catalog::topic_store& _catalog;
    log::log_manager& _logs;
    std::map<std::string, std::string> _static;  // --topic-default
    std::map<std::string, std::string> _dynamic_default, _dynamic_broker;
    std::map<std::string, std::string> _defaults;  // the three above, merged
    std::unordered_map<std::string, std::unique_ptr<topic_state>> _by_name;
    std::map<catalog::uuid, topic_state*> _by_id;
};

inline constexpr int32_t max_partitions_per_topic = 20000;

}  // namespace sluice::broker
