#pragma once

// Group configs (Kafka's GroupConfig, KIP-848 and KIP-932): per-group overrides of the
// broker's group settings, set with IncrementalAlterConfigs / AlterConfigs on the GROUP
// resource (`kafka-configs --entity-type groups`) and described with DescribeConfigs.
// A group reads each setting from its own config when it has one, else from the broker
// default. The consumer and share coordinators hold a pointer to the broker's one
// group_configs and ask it at every use, so a change applies from the next heartbeat,
// fetch or acquisition on.
//
// Names, types and bounds are Kafka 4.3's (docs/groups.md lists them): a value must lie
// within the broker's min/max bounds, which are Kafka's defaults widened to include the
// broker's own default (Kafka refuses to start with a default outside its bounds; Sluice
// lets tests run with short defaults and keeps them settable per group).

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "group/share/coordinator.h"
#include "group/types.h"

namespace sluice::group {

using group_config_map = std::map<std::string, std::string>;

struct group_config_def {
    std::string_view name;         // e.g. consumer.session.timeout.ms
    int8_t type = 0;               // DescribeConfigs' config type: 2 STRING, 3 INT
    std::string_view broker_name;  // the broker setting it overrides (its default synonym)
    std::string_view doc;
};

// Every group config Sluice knows, in name order.
std::span<const group_config_def> group_config_defs();
const group_config_def* find_group_config(std::string_view name);

// The broker settings a group config falls back to and is bounded by.
struct group_defaults {
    config consumer;
    share::config share;
};

// The broker default of a known config, as DescribeConfigs shows it.
std::string group_config_default(const group_defaults& d, std::string_view name);
// Checks a group's whole proposed set; the message of the first refusal (Kafka's words,
// answered as INVALID_CONFIG), or nullopt.
std::optional<std::string> check_group_configs(const group_defaults& d,
                                               const group_config_map& configs);

// The overrides of every group that has some. Runs on the broker's event loop thread.
class group_configs {
  public:
    // Replaces a group's whole set (empty: the group has none).
    void set(const std::string& group_id, group_config_map configs);
    const group_config_map& of(const std::string& group_id) const;

    // The values in force for a group whose broker settings are `base`.
    int32_t consumer_session_timeout_ms(const std::string& group_id, const config& base) const;
    int32_t consumer_heartbeat_interval_ms(const std::string& group_id, const config& base) const;
    share::config share_settings(const std::string& group_id, share::config base) const;

  private:
    std::optional<int32_t> int_value(const std::string& group_id, std::string_view name) const;
    std::map<std::string, group_config_map> _by_group;
};

}  // namespace sluice::group
