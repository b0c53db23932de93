#include "group/group_configs.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <type_traits>

namespace sluice::group {
namespace {

constexpr int8_t type_string = 2;
constexpr int8_t type_int = 3;

constexpr group_config_def defs[] = {
    {"consumer.heartbeat.interval.ms", type_int, "group.consumer.heartbeat.interval.ms",
     "The heartbeat interval given to the members of the consumer group."},
    {"consumer.session.timeout.ms", type_int, "group.consumer.session.timeout.ms",
     "The timeout to detect client failures when using the consumer group protocol."},
    {"share.auto.offset.reset", type_string, "share.auto.offset.reset",
     "What to do when there is no initial offset in Kafka or if the current offset does not "
     "exist any more on the server: earliest or latest."},
    {"share.delivery.count.limit", type_int, "group.share.delivery.count.limit",
     "The maximum number of delivery attempts for a record delivered to a share group."},
    {"share.heartbeat.interval.ms", type_int, "group.share.heartbeat.interval.ms",
     "The heartbeat interval given to the members of the share group."},
    {"share.isolation.level", type_string, "share.isolation.level",
     "Controls how to read records written transactionally: read_uncommitted."},
    {"share.partition.max.record.locks", type_int, "group.share.partition.max.record.locks",
     "Share-group record lock limit per share-partition."},
    {"share.record.lock.duration.ms", type_int, "group.share.record.lock.duration.ms",
     "The record acquisition lock duration in milliseconds for share groups."},
    {"share.session.timeout.ms", type_int, "group.share.session.timeout.ms",
     "The timeout to detect client failures when using the share group protocol."},
};

// An integer config's bounds: the value's own floor (Kafka's ConfigDef atLeast), then the
// broker settings that bound it (their Kafka defaults), widened to take in the broker's
// own default.
struct int_bounds {
    int32_t floor;
    int32_t min;  // 0: none beyond the floor
    std::string_view min_name;
    int32_t max;
    std::string_view max_name;
};

int32_t int_default(const group_defaults& d, std::string_view name) {
    if (name == "consumer.heartbeat.interval.ms") return d.consumer.consumer_heartbeat_interval_ms;
    if (name == "consumer.session.timeout.ms") return d.consumer.consumer_session_timeout_ms;
    if (name == "share.delivery.count.limit") return d.share.delivery_count_limit;
    if (name == "share.heartbeat.interval.ms") return d.share.heartbeat_interval_ms;
    if (name == "share.partition.max.record.locks") return d.share.partition_max_record_locks;
    if (name == "share.record.lock.duration.ms") return d.share.record_lock_duration_ms;
    return d.share.session_timeout_ms;  // share.session.timeout.ms
}

int_bounds bounds_of(std::string_view name, int32_t broker_default) {
    int_bounds b{};
    if (name == "consumer.heartbeat.interval.ms")
        b = {1, 5000, "group.consumer.min.heartbeat.interval.ms", 15000,
             "group.consumer.max.heartbeat.interval.ms"};
    else if (name == "consumer.session.timeout.ms")
        b = {1, 45000, "group.consumer.min.session.timeout.ms", 60000,
             "group.consumer.max.session.timeout.ms"};
    else if (name == "share.delivery.count.limit")
        b = {2, 0, "", 10, "group.share.max.delivery.count.limit"};
    else if (name == "share.heartbeat.interval.ms")
        b = {1, 5000, "group.share.min.heartbeat.interval.ms", 15000,
             "group.share.max.heartbeat.interval.ms"};
    else if (name == "share.partition.max.record.locks")
        b = {100, 0, "", 10000, "group.share.max.partition.max.record.locks"};
    else if (name == "share.record.lock.duration.ms")
        b = {1000, 15000, "group.share.min.record.lock.duration.ms", 60000,
             "group.share.max.record.lock.duration.ms"};
    else
        b = {1, 45000, "group.share.min.session.timeout.ms", 60000,
             "group.share.max.session.timeout.ms"};
    if (b.min > 0) b.min = std::max(b.floor, std::min(b.min, broker_default));
    b.max = std::max(b.max, broker_default);
    return b;
}

std::optional<int32_t> parse_int(std::string_view v) {
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    int64_t out = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || ec != std::errc{} || end != v.data() + v.size() ||
        out < std::numeric_limits<int32_t>::min() || out > std::numeric_limits<int32_t>::max())
        return std::nullopt;
    return static_cast<int32_t>(out);
}

std::optional<std::string> check_one(const group_defaults& d, const std::string& name,
                                     const std::string& value) {
    const auto* def = find_group_config(name);
    if (!def) return "Unknown group config name: " + name;
    if (name == "share.auto.offset.reset") {
        if (value == "earliest" || value == "latest") return std::nullopt;
        if (value.starts_with("by_duration:"))
            return fmt::format(
                "Invalid value {} for configuration {}: Sluice does not support "
                "by_duration yet; the value must be 'earliest' or 'latest'.",
                value, name);
        return fmt::format(
            "Invalid value {0} for configuration {1}: Invalid value `{0}` for configuration {1}. "
            "The value must be either 'earliest', 'latest' or of the format "
            "'by_duration:<PnDTnHnMn.nS>'.",
            value, name);
    }
    if (name == "share.isolation.level") {
        if (value == "read_uncommitted" || value == "read_committed") return std::nullopt;
        return fmt::format(
            "Invalid value {} for configuration {}: String must be one of: "
            "read_committed, read_uncommitted",
            value, name);
    }
    auto v = parse_int(value);
    if (!v)
        return fmt::format("Invalid value {} for configuration {}: Not a number of type INT", value,
                           name);
    const auto b = bounds_of(name, int_default(d, name));
    if (*v < b.floor)
        return fmt::format("Invalid value {} for configuration {}: Value must be at least {}",
                           value, name, b.floor);
    if (*v < b.min) return fmt::format("{} must be greater than or equal to {}", name, b.min_name);
    if (*v > b.max) return fmt::format("{} must be less than or equal to {}", name, b.max_name);
    return std::nullopt;
}

}  // namespace

std::span<const group_config_def> group_config_defs() {
    return defs;
}

const group_config_def* find_group_config(std::string_view name) {
    for (const auto& d : defs)
        if (d.name == name) return &d;
    return nullptr;
}

std::string group_config_default(const group_defaults& d, std::string_view name) {
    if (name == "share.auto.offset.reset") return d.share.auto_offset_reset;
    if (name == "share.isolation.level")
        return d.share.read_committed ? "read_committed" : "read_uncommitted";
    return std::to_string(int_default(d, name));
}

std::optional<std::string> check_group_configs(const group_defaults& d,
                                               const group_config_map& configs) {
    for (const auto& [name, value] : configs)
        if (auto e = check_one(d, name, value)) return e;
    return std::nullopt;
}

void group_configs::set(const std::string& group_id, group_config_map configs) {
    if (configs.empty())
        _by_group.erase(group_id);
    else
        _by_group[group_id] = std::move(configs);
}

const group_config_map& group_configs::of(const std::string& group_id) const {
    static const group_config_map none;
    auto it = _by_group.find(group_id);
    return it == _by_group.end() ? none : it->second;
}

std::optional<int32_t> group_configs::int_value(const std::string& group_id,
                                                std::string_view name) const {
    const auto& m = of(group_id);
    auto it = m.find(std::string(name));
    if (it == m.end()) return std::nullopt;
    return parse_int(it->second);
}

int32_t group_configs::consumer_session_timeout_ms(const std::string& group_id,
                                                   const config& base) const {
    return int_value(group_id, "consumer.session.timeout.ms")
        .value_or(base.consumer_session_timeout_ms);
}

int32_t group_configs::consumer_heartbeat_interval_ms(const std::string& group_id,
                                                      const config& base) const {
    return int_value(group_id, "consumer.heartbeat.interval.ms")
        .value_or(base.consumer_heartbeat_interval_ms);
}

share::config group_configs::share_settings(const std::string& group_id, share::config base) const {
    const auto& m = of(group_id);
    if (m.empty()) return base;
    auto set_int = [&](std::string_view name, auto& field) {
        if (auto v = int_value(group_id, name))
            field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
    };
    set_int("share.session.timeout.ms", base.session_timeout_ms);
    set_int("share.heartbeat.interval.ms", base.heartbeat_interval_ms);
    set_int("share.record.lock.duration.ms", base.record_lock_duration_ms);
    set_int("share.delivery.count.limit", base.delivery_count_limit);
    set_int("share.partition.max.record.locks", base.partition_max_record_locks);
    if (auto it = m.find("share.auto.offset.reset"); it != m.end())
        base.auto_offset_reset = it->second;
    if (auto it = m.find("share.isolation.level"); it != m.end())
        base.read_committed = it->second == "read_committed";
    return base;
}

}  // namespace sluice::group
