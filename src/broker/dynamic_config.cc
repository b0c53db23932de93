#include "broker/dynamic_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <set>

#include "catalog/topic_config.h"
#include "protocol/messages/describe_configs.h"

namespace sluice::broker {
namespace {

namespace p = protocol;

constexpr int8_t type_string = 2;
constexpr int8_t type_int = 3;
constexpr int8_t type_long = 5;
constexpr int8_t type_list = 7;

// Group settings, as Kafka names them, with what they set in group::config.
struct group_setting {
    std::string_view name;
    int64_t min;
    int64_t scale;  // offsets.retention.minutes is kept in ms
    int64_t group::config::*wide;
    int32_t group::config::*narrow;
};
const group_setting group_settings_table[] = {
    {"group.initial.rebalance.delay.ms", 0, 1, nullptr, &group::config::initial_rebalance_delay_ms},
    {"group.max.session.timeout.ms", 1, 1, nullptr, &group::config::max_session_timeout_ms},
    {"group.min.session.timeout.ms", 1, 1, nullptr, &group::config::min_session_timeout_ms},
    {"offsets.retention.minutes", 1, 60'000, &group::config::offsets_retention_ms, nullptr},
};

const group_setting* find_group_setting(std::string_view name) {
    for (const auto& g : group_settings_table)
        if (g.name == name) return &g;
    return nullptr;
}

int64_t read_group_setting(const group::config& c, const group_setting& g) {
    return (g.wide ? c.*g.wide : c.*g.narrow) / g.scale;
}

std::optional<int64_t> parse_setting_int(std::string_view v) {
    int64_t out = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
    return out;
}

// Connection limits (connection_quotas.h), with Kafka's defaults and their static value.
struct connection_setting {
    std::string_view name;
    std::string_view builtin;
    std::string (*static_of)(const broker_config&);
};
const connection_setting connection_settings_table[] = {
    {"max.connections", "2147483647",
     [](const broker_config& c) { return std::to_string(c.max_connections); }},
    {"max.connections.per.ip", "2147483647",
     [](const broker_config& c) { return std::to_string(c.max_connections_per_ip); }},
    {"max.connections.per.ip.overrides", "",
     [](const broker_config& c) { return c.max_connections_per_ip_overrides; }},
};

const connection_setting* find_connection_setting(std::string_view name) {
    for (const auto& c : connection_settings_table)
        if (c.name == name) return &c;
    return nullptr;
}

std::string check_connection_setting(const connection_setting& c, std::string_view value) {
    if (c.builtin.empty()) {
        auto r = parse_ip_overrides(value);
        return r ? std::string() : r.err().message;
    }
    auto v = parse_setting_int(value);
    if (!v || *v < 0 || *v > std::numeric_limits<int32_t>::max())
        return fmt::format("invalid value '{}' for '{}': an integer from 0 to {} is needed", value,
                           c.name, std::numeric_limits<int32_t>::max());
    return {};
}

std::string check_setting_value(const dynamic_setting& s, std::string_view value) {
    if (!s.topic_key.empty()) {
        auto r = catalog::validate_topic_config(s.topic_key, value);
        return r ? std::string() : fmt::format("invalid value '{}' for '{}': {}", value, s.name,
                                                r.err().message);
    }
    if (const auto* c = find_connection_setting(s.name)) return check_connection_setting(*c, value);
    const auto* g = find_group_setting(s.name);
    auto v = parse_setting_int(value);
    if (!v || *v < g->min || *v > std::numeric_limits<int32_t>::max())
        return fmt::format("invalid value '{}' for '{}': an integer from {} to {} is needed", value,
                           s.name, g->min, std::numeric_limits<int32_t>::max());
    return {};
}

}  // namespace

const std::vector<dynamic_setting>& dynamic_settings() {
    static const std::vector<dynamic_setting> all = [] {
        std::vector<dynamic_setting> v = {
            {"compression.type", type_string, "compression.type",
             "The default compression of topics without their own compression.type."},
            {"group.initial.rebalance.delay.ms", type_int, "",
             "How long the first rebalance of an empty group waits for more members."},
            {"group.max.session.timeout.ms", type_int, "",
             "The largest session timeout a group member may ask for."},
            {"group.min.session.timeout.ms", type_int, "",
             "The smallest session timeout a group member may ask for."},
            {"log.cleanup.policy", type_list, "cleanup.policy",
             "The default cleanup.policy of topics without their own."},
            {"log.retention.bytes", type_long, "retention.bytes",
             "The default retention.bytes of topics without their own."},
            {"log.retention.ms", type_long, "retention.ms",
             "The default retention.ms of topics without their own."},
            {"log.roll.ms", type_long, "segment.ms",
             "The default segment.ms of topics without their own."},
            {"log.segment.bytes", type_int, "segment.bytes",
             "The default segment.bytes of topics without their own."},
            {"max.connections", type_int, "",
             "The Kafka connections the broker holds at once; a new one beyond is closed."},
            {"max.connections.per.ip", type_int, "",
             "The Kafka connections the broker holds at once from one IP address."},
            {"max.connections.per.ip.overrides", type_string, "",
             "Per-address exceptions to max.connections.per.ip: IP:COUNT,IP:COUNT."},
            {"message.max.bytes", type_int, "max.message.bytes",
             "The default max.message.bytes of topics without their own."},
            {"offsets.retention.minutes", type_int, "",
             "How long the committed offsets of an empty group are kept."},
        };
        std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.name < b.name; });
        return v;
    }();
    return all;
}

const dynamic_setting* find_dynamic_setting(std::string_view name) {
    for (const auto& s : dynamic_settings())
        if (s.name == name) return &s;
    return nullptr;
}

std::vector<std::pair<std::string, std::string>> static_settings(const broker_config& cfg) {
    return {
        {"auto.create.topics.enable", cfg.auto_create_topics ? "true" : "false"},
        {"connections.max.idle.ms", std::to_string(cfg.connections_max_idle_ms)},
        // What -1 in CreateTopics stands for: one broker keeps one copy.
        {"default.replication.factor", "1"},
        {"group.consumer.assignors",
         fmt::format("{}", fmt::join(cfg.groups.consumer_assignors, ","))},
        {"group.consumer.heartbeat.interval.ms",
         std::to_string(cfg.groups.consumer_heartbeat_interval_ms)},
        {"group.consumer.migration.policy", cfg.groups.consumer_migration_policy},
        {"group.consumer.session.timeout.ms",
         std::to_string(cfg.groups.consumer_session_timeout_ms)},
        {"group.max.size", std::to_string(cfg.groups.max_group_size)},
        {"log.cleaner.backoff.ms", std::to_string(cfg.log_cleaner_backoff_ms)},
        {"log.dirs", cfg.data_dir.string()},
        {"log.retention.check.interval.ms", std::to_string(cfg.log_retention_check_interval_ms)},
        {"max.incremental.fetch.session.cache.slots", std::to_string(cfg.fetch_session_cache_slots)},
        {"num.partitions", std::to_string(cfg.default_partitions)},
        {"offset.metadata.max.bytes", std::to_string(cfg.groups.offset_metadata_max_bytes)},
        {"offsets.retention.check.interval.ms",
         std::to_string(cfg.offsets_retention_check_interval_ms)},
        {"queued.max.request.bytes", std::to_string(cfg.queued_max_request_bytes)},
        {"socket.request.max.bytes", std::to_string(cfg.max_request_bytes)},
    };
}

bool is_static_setting(std::string_view name) {
    static const std::string_view others[] = {
        "advertised.listeners", "broker.id", "listeners", "node.id", "process.roles",
        "sasl.enabled.mechanisms", "connections.max.reauth.ms"};
    if (std::find(std::begin(others), std::end(others), name) != std::end(others)) return true;
    static const auto names = [] {
        std::vector<std::string> v;
        for (auto& [n, value] : static_settings(broker_config{})) v.push_back(n);
        return v;
    }();
    return std::find(names.begin(), names.end(), name) != names.end();
}

result<void> dynamic_config::check(config_level l, const config_map& proposed) const {
    std::vector<std::string> read_only;
    for (const auto& [name, value] : proposed)
        if (!find_dynamic_setting(name) && is_static_setting(name)) read_only.push_back(name);
    if (!read_only.empty())
        return {errc::invalid_argument,
                fmt::format("Cannot update these configs dynamically: {}. Sluice reads them at "
                            "start only: change them on the command line or in the config "
                            "file and restart",
                            fmt::join(read_only, ", "))};
    for (const auto& [name, value] : proposed) {
        const auto* s = find_dynamic_setting(name);
        if (!s) continue;  // as Kafka: kept and described, for no component (a plugin's)
        if (auto why = check_setting_value(*s, value); !why.empty()) return {errc::invalid_config, why};
    }
    dynamic_config after = *this;
    after.set(l, proposed);
    const auto g = after.group_settings();
    if (g.min_session_timeout_ms > g.max_session_timeout_ms)
        return {errc::invalid_config,
                fmt::format("group.min.session.timeout.ms ({}) would be above "
                            "group.max.session.timeout.ms ({})",
                            g.min_session_timeout_ms, g.max_session_timeout_ms)};
    return {};
}

std::string dynamic_config::static_value(const dynamic_setting& s) const {
    if (!s.topic_key.empty()) {
        auto it = _static.topic_defaults.find(std::string(s.topic_key));
        return it == _static.topic_defaults.end() ? std::string() : it->second;
    }
    if (const auto* c = find_connection_setting(s.name)) {
        auto v = c->static_of(_static);
        return v == c->builtin ? std::string() : v;
    }
    const auto* g = find_group_setting(s.name);
    const int64_t v = read_group_setting(_static.groups, *g);
    return v == read_group_setting(group::config{}, *g) ? std::string() : std::to_string(v);
}

std::vector<std::pair<int8_t, std::string>> dynamic_config::levels(std::string_view name) const {
    const auto* s = find_dynamic_setting(name);
    std::vector<std::pair<int8_t, std::string>> out;
    const std::string key(name);
    if (auto it = _broker.find(key); it != _broker.end())
        out.emplace_back(p::source_dynamic_broker, it->second);
    if (auto it = _default.find(key); it != _default.end())
        out.emplace_back(p::source_dynamic_default_broker, it->second);
    if (!s) return out;
    if (auto v = static_value(*s); !v.empty()) out.emplace_back(p::source_static_broker, v);
    if (!s->topic_key.empty()) {
        const auto* def = catalog::find_topic_config_def(s->topic_key);
        out.emplace_back(p::source_default, def ? std::string(def->default_value) : "");
    } else if (const auto* c = find_connection_setting(name)) {
        out.emplace_back(p::source_default, std::string(c->builtin));
    } else {
        out.emplace_back(p::source_default,
                         std::to_string(read_group_setting(group::config{}, *find_group_setting(name))));
    }
    return out;
}

std::vector<std::string> dynamic_config::names() const {
    std::set<std::string> all;
    for (const auto& s : dynamic_settings()) all.emplace(s.name);
    for (const auto* l : {&_default, &_broker})
        for (const auto& [k, v] : *l) all.insert(k);
    return {all.begin(), all.end()};
}

std::string dynamic_config::value(std::string_view name) const {
    auto l = levels(name);
    return l.empty() ? std::string() : l.front().second;
}

config_map dynamic_config::topic_defaults(config_level l) const {
    config_map out;
    for (const auto& [name, v] : level(l))
        if (const auto* s = find_dynamic_setting(name); s && !s->topic_key.empty())
            out[std::string(s->topic_key)] = v;
    return out;
}

connection_limit_settings dynamic_config::connection_limits() const {
    connection_limit_settings out;
    // Every value in force was checked when it was set.
    out.max = parse_setting_int(value("max.connections")).value_or(out.max);
    out.per_ip = parse_setting_int(value("max.connections.per.ip")).value_or(out.per_ip);
    if (auto o = parse_ip_overrides(value("max.connections.per.ip.overrides")))
        out.per_ip_overrides = std::move(*o);
    return out;
}

group::config dynamic_config::group_settings() const {
    group::config c = _static.groups;
    for (const auto& g : group_settings_table) {
        auto v = parse_setting_int(value(g.name));
        if (!v) continue;
        if (g.wide)
            c.*g.wide = *v * g.scale;
        else
            c.*g.narrow = static_cast<int32_t>(*v);
    }
    return c;
}

}  // namespace sluice::broker
