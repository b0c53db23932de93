#pragma once

// Broker settings that change at run time, as Kafka's dynamic broker configs: set through
// AlterConfigs/IncrementalAlterConfigs on the BROKER resource at two levels, the
// cluster-wide default (resource name "") and this broker's own (its id). The value in
// force is, highest first: this broker's, the cluster-wide default, the static value
// (command line or config file), the built-in default. broker_dynamic.cc stores the
// levels in the catalog and applies them to the live topic registry, group
// coordinator and connection limits.

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/config.h"
#include "broker/connection_quotas.h"
#include "common/result.h"
#include "group/types.h"

namespace sluice::broker {

enum class config_level { cluster_default, this_broker };

// A setting Sluice changes at run time, by Kafka's broker config name.
struct dynamic_setting {
    std::string_view name;
    int8_t type;                 // Kafka's ConfigType: 3 int, 5 long, 7 list, 2 string
    std::string_view topic_key;  // a topic default: the topic config it is the default of
    std::string_view doc;
};
// Ordered by name.
const std::vector<dynamic_setting>& dynamic_settings();
const dynamic_setting* find_dynamic_setting(std::string_view name);

// Settings Kafka knows that Sluice reads only at start, with the value in force.
std::vector<std::pair<std::string, std::string>> static_settings(const broker_config& cfg);
bool is_static_setting(std::string_view name);

using config_map = std::map<std::string, std::string>;

class dynamic_config {
  public:
    explicit dynamic_config(const broker_config& static_cfg) : _static(static_cfg) {}

    const config_map& level(config_level l) const {
        return l == config_level::this_broker ? _broker : _default;
    }
    // Checks `proposed` as the level's whole new set. Errors: errc::invalid_argument for a
    // setting read only at start (Kafka: "Cannot update these configs dynamically"),
    // errc::invalid_config for a bad value or min above max. A name Sluice does not know
    // is accepted, as Kafka accepts it (kept and described, used by nothing).
    result<void> check(config_level l, const config_map& proposed) const;
    void set(config_level l, config_map values) {
        (l == config_level::this_broker ? _broker : _default) = std::move(values);
    }

    // Every level that gives the setting a value, highest first, as (ConfigSource,
    // value); for a setting of dynamic_settings() the last is the built-in default. For
    // another name, only the dynamic levels that set it.
    std::vector<std::pair<int8_t, std::string>> levels(std::string_view name) const;
    std::string value(std::string_view name) const;  // the one in force
    // dynamic_settings() and every other name a level sets, ordered.
    std::vector<std::string> names() const;

    // The level's topic defaults, keyed by topic config name (retention.ms).
    config_map topic_defaults(config_level l) const;
    // The connection limits in force.
    connection_limit_settings connection_limits() const;
    // The group coordinator's settings with every dynamic value in force.
    group::config group_settings() const;

  private:
    std::string static_value(const dynamic_setting& s) const;  // "" when not set
    const broker_config& _static;
    config_map _default, _broker;
};

}  // namespace sluice::broker
