#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/topic_info.h"
#include "common/result.h"

namespace sluice::catalog {

// A topic config the broker knows. Values are stored and returned as the user wrote them;
// validation is strict (no surrounding whitespace, no '+' sign) so that a stored value
// always parses with std::from_chars.
struct config_def {
    std::string_view name;
    std::string_view default_value;
    std::string_view doc;
};

// Every known key, ordered by name. The reference is stable for the process lifetime.
const std::vector<config_def>& topic_config_defs();

// nullptr if the key is unknown.
const config_def* find_topic_config_def(std::string_view name);

// The items of a list-valued config (Kafka's LIST type, e.g. cleanup.policy): split at
// commas (or `separator`), spaces around each item trimmed, empty items kept (validation
// refuses them).
std::vector<std::string> config_list_items(std::string_view value, char separator = ',');

// The config's type as DescribeConfigs v3+ reports it (Kafka's ConfigType: 1 boolean,
// 2 string, 3 int, 5 long, 6 double, 7 list); 0 for an unknown key.
int8_t topic_config_type(std::string_view name);
inline constexpr int8_t config_type_list = 7;

// A topic config's names at the broker level, as Kafka's DescribeConfigs lists them in
// synonyms: `broker_name` is the broker config a topic's default comes from
// (retention.ms: log.retention.ms), `default_name` and `default_value` the one Kafka
// reports as the built-in default, in its own unit (log.retention.hours, "168"). All
// empty when Kafka has no broker-level synonym (the replication throttle lists).
struct config_synonyms {
    std::string_view broker_name;
    std::string_view default_name;
    std::string_view default_value;
};
config_synonyms topic_config_synonyms(std::string_view name);

// Checks one key/value pair: errc::invalid_argument naming the key and the reason when
// the key is unknown or the value is out of range, malformed or not supported yet (the
// broker answers INVALID_CONFIG).
result<void> validate_topic_config(std::string_view key, std::string_view value);

// Checks every pair; the first failure (in key order) is returned.
result<void> validate_topic_configs(const std::map<std::string, std::string>& configs);

// Kafka refuses a max.compaction.lag.ms below min.compaction.lag.ms (INVALID_CONFIG).
// Checked when the topic sets max.compaction.lag.ms itself, against the min in force
// (the topic's, else broker_defaults', else 0): Sluice's default max (30 s) is lower than
// Kafka's, so a topic setting only a larger min is accepted, and then min wins (no
// segment holding records newer than it is cleaned). Values must have passed
// validate_topic_configs. Errors: invalid_argument naming both keys.
result<void> validate_compaction_lags(const std::map<std::string, std::string>& configs,
                                      const std::map<std::string, std::string>& broker_defaults);

// The value in force for key: the topic's own setting, else broker_defaults (keyed by the
// topic config name, e.g. "retention.ms", not the broker's "log.retention.ms"), else the
// built-in default. An unknown key with no setting anywhere yields "".
std::string effective_config(const topic_info& t, std::string_view key,
                             const std::map<std::string, std::string>& broker_defaults = {});

}  // namespace sluice::catalog
