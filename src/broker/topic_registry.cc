#include "broker/topic_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "common/clock.h"
#include "common/logging.h"

namespace sluice::broker {

topic_registry::topic_registry(catalog::topic_store& cat, log::log_manager& logs,
                               std::map<std::string, std::string> broker_defaults)
    : _catalog(cat), _logs(logs), _static(broker_defaults), _defaults(std::move(broker_defaults)) {}

void topic_registry::set_dynamic_defaults(std::map<std::string, std::string> cluster_default,
                                          std::map<std::string, std::string> this_broker) {
    _dynamic_default = std::move(cluster_default);
    _dynamic_broker = std::move(this_broker);
    _defaults = _static;
    for (const auto* level : {&_dynamic_default, &_dynamic_broker})
        for (const auto& [k, v] : *level) _defaults[k] = v;
    for (auto& [name, t] : _by_name) {
        t->log_cfg = to_log_config(t->info);
        _logs.add_topic(name, t->info.partitions, t->log_cfg);  // re-configures in place
    }
}

namespace {
int64_t to_int(const std::string& s, int64_t fallback) {
    int64_t v = fallback;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() ? v : fallback;
}
double to_fraction(const std::string& s, double fallback) {
    double v = fallback;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() ? v : fallback;
}
}  // namespace

std::string topic_registry::effective_config(const topic_state& t, std::string_view key) const {
    return catalog::effective_config(t.info, key, _defaults);
}

int8_t topic_registry::config_source(const topic_state& t, std::string_view key) const {
    std::string k(key);
    if (t.info.configs.contains(k)) return 1;
    if (_dynamic_broker.contains(k)) return 2;
    if (_dynamic_default.contains(k)) return 3;
    return _static.contains(k) ? 4 : 5;
}

std::vector<std::pair<int8_t, std::string>> topic_registry::config_levels(
    const topic_state& t, std::string_view key) const {
    std::vector<std::pair<int8_t, std::string>> out;
    std::string k(key);
    if (auto it = t.info.configs.find(k); it != t.info.configs.end())
        out.emplace_back(1, it->second);
    const std::pair<int8_t, const std::map<std::string, std::string>*> levels[] = {
        {2, &_dynamic_broker}, {3, &_dynamic_default}, {4, &_static}};
    for (const auto& [source, values] : levels)
        if (auto it = values->find(k); it != values->end()) out.emplace_back(source, it->second);
    if (const auto* def = catalog::find_topic_config_def(key))
        out.emplace_back(5, std::string(def->default_value));
    return out;
}

result<void> topic_registry::check_configs(
    const std::map<std::string, std::string>& configs) const {
    auto r = catalog::validate_topic_configs(configs);
    if (r) r = catalog::validate_compaction_lags(configs, _defaults);
    if (!r) return {errc::invalid_config, r.err().message};
    return {};
}

log::log_config topic_registry::to_log_config(const catalog::topic_info& t) const {
    log::log_config c;
    c.id = t.id;
    auto get = [&](std::string_view k) { return catalog::effective_config(t, k, _defaults); };
    c.segment_bytes = to_int(get("segment.bytes"), c.segment_bytes);
    c.segment_ms = to_int(get("segment.ms"), c.segment_ms);
    c.max_message_bytes = static_cast<size_t>(
        to_int(get("max.message.bytes"), static_cast<int64_t>(c.max_message_bytes)));
    c.index_interval_bytes =
        static_cast<int32_t>(to_int(get("index.interval.bytes"), c.index_interval_bytes));
    c.retention_ms = to_int(get("retention.ms"), c.retention_ms);
    c.retention_bytes = to_int(get("retention.bytes"), c.retention_bytes);
    const std::string policy = get("cleanup.policy");
    c.delete_enabled = policy.find("delete") != std::string::npos;
    c.compact = policy.find("compact") != std::string::npos;
    c.min_compaction_lag_ms = to_int(get("min.compaction.lag.ms"), c.min_compaction_lag_ms);
    c.max_compaction_lag_ms = to_int(get("max.compaction.lag.ms"), c.max_compaction_lag_ms);
    c.delete_retention_ms = to_int(get("delete.retention.ms"), c.delete_retention_ms);
    c.min_cleanable_dirty_ratio =
        to_fraction(get("min.cleanable.dirty.ratio"), c.min_cleanable_dirty_ratio);
    c.compression = protocol::compression_from_name(get("compression.type"));
    if (c.compression && *c.compression != protocol::compression::none &&
        *c.compression != protocol::compression::snappy) {
        const std::string level =
            get(fmt::format("compression.{}.level", protocol::compression_name(*c.compression)));
        // gzip's -1 is zlib's own default, which compress() takes as no level.
        if (level != "-1") c.compression_level = static_cast<int>(to_int(level, 0));
    }
    c.timestamp_before_max_ms =
        to_int(get("message.timestamp.before.max.ms"), c.timestamp_before_max_ms);
    c.timestamp_after_max_ms =
        to_int(get("message.timestamp.after.max.ms"), c.timestamp_after_max_ms);
    c.timestamp_type = get("message.timestamp.type") == "LogAppendTime"
                           ? protocol::timestamp_type::log_append_time
                           : protocol::timestamp_type::create_time;
    return c;
}

void topic_registry::load() {
    for (auto& t : _catalog.list_topics()) {
        auto st = std::make_unique<topic_state>();
        st->info = t;
        st->log_cfg = to_log_config(t);
        _logs.add_topic(t.name, t.partitions, st->log_cfg);
        _by_id[t.id] = st.get();
        _by_name[t.name] = std::move(st);
    }
}

void topic_registry::sync() {
    std::map<std::string, catalog::topic_info> now;
    for (auto& t : _catalog.list_topics()) now.emplace(t.name, std::move(t));
    for (auto it = _by_name.begin(); it != _by_name.end();) {
        auto found = now.find(it->first);
        if (found != now.end() && found->second.id == it->second->info.id) {
            ++it;
            continue;
        }
        log_info("broker", "topic '{}' was deleted by another broker", it->first);
        _by_id.erase(it->second->info.id);
        it = _by_name.erase(it);
    }
    for (auto& [name, info] : now) {
        auto it = _by_name.find(name);
        if (it == _by_name.end()) {
            auto st = std::make_unique<topic_state>();
            st->info = std::move(info);
            st->log_cfg = to_log_config(st->info);
            _logs.add_topic(name, st->info.partitions, st->log_cfg);
            _by_id[st->info.id] = st.get();
            _by_name[name] = std::move(st);
            continue;
        }
        topic_state& t = *it->second;
        if (t.info.partitions == info.partitions && t.info.configs == info.configs) continue;
        t.info = std::move(info);
        t.log_cfg = to_log_config(t.info);
    }
}

const topic_state* topic_registry::find(const std::string& name) const {
    auto it = _by_name.find(name);
    return it == _by_name.end() ? nullptr : it->second.get();
}

const topic_state* topic_registry::find(const catalog::uuid& id) const {
    auto it = _by_id.find(id);
    return it == _by_id.end() ? nullptr : it->second;
}

std::vector<const topic_state*> topic_registry::all() const {
    std::vector<const topic_state*> out;
    out.reserve(_by_name.size());
    for (auto& [_, t] : _by_name) out.push_back(t.get());
    std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->info.name < b->info.name; });
    return out;
}

result<topic_state> topic_registry::create(const std::string& name, int32_t partitions,
                                           const std::map<std::string, std::string>& configs,
                                           bool validate_only) {
    if (auto r = catalog::validate_topic_name(name); !r)
        return {errc::invalid_argument, r.err().message};
    if (partitions < 1 || partitions > max_partitions_per_topic)
        return {errc::out_of_range, fmt::format("partition count {} is outside 1..{}", partitions,
                                                max_partitions_per_topic)};
    if (auto r = check_configs(configs); !r) return r.err();
    if (_by_name.contains(name))
        return {errc::already_exists, "topic '" + name + "' already exists"};
    auto st = std::make_unique<topic_state>();
    st->info.name = name;
    st->info.id = catalog::random_uuid();
    st->info.partitions = partitions;
    st->info.configs = configs;
    st->info.created_ms = now_ms();
    st->log_cfg = to_log_config(st->info);
    if (validate_only) return *st;
    if (auto r = _catalog.create_topic(st->info); !r) return r.err();
    _logs.add_topic(name, partitions, st->log_cfg);
    log_info("broker", "created topic '{}' with {} partitions", name, partitions);
    topic_state created = *st;
    _by_id[st->info.id] = st.get();
    _by_name[name] = std::move(st);
    return created;
}

result<void> topic_registry::set_configs(const std::string& name,
                                         const std::map<std::string, std::string>& configs,
                                         bool validate_only) {
    auto it = _by_name.find(name);
    if (it == _by_name.end()) return {errc::not_found, "topic '" + name + "' does not exist"};
    if (auto r = check_configs(configs); !r) return r.err();
    if (validate_only) return {};
    if (auto r = _catalog.set_topic_configs(name, configs); !r) return r;
    topic_state& t = *it->second;
    t.info.configs = configs;
    t.log_cfg = to_log_config(t.info);
    _logs.add_topic(name, t.info.partitions, t.log_cfg);  // re-configures the log in place
    return {};
}

result<void> topic_registry::add_partitions(const std::string& name, int32_t total,
                                            bool validate_only) {
    auto it = _by_name.find(name);
    if (it == _by_name.end()) return {errc::not_found, "topic '" + name + "' does not exist"};
    topic_state& t = *it->second;
    if (total <= t.info.partitions)
        return {errc::out_of_range, fmt::format("topic '{}' has {} partitions; a new count must "
                                                "be larger, got {}",
                                                name, t.info.partitions, total)};
    if (total > max_partitions_per_topic)
        return {errc::out_of_range, fmt::format("partition count {} is above the limit of {}",
                                                total, max_partitions_per_topic)};
    if (validate_only) return {};
    if (auto r = _catalog.set_partitions(name, total); !r) return r;
    t.info.partitions = total;
    _logs.add_topic(name, total, t.log_cfg);
    log_info("broker", "topic '{}' now has {} partitions", name, total);
    return {};
}

result<void> topic_registry::remove(const std::string& name) {
    auto it = _by_name.find(name);
    if (it == _by_name.end()) return {errc::not_found, "topic '" + name + "' does not exist"};
    // On a full disk the catalog commit takes the space reserve; deleting the data then
    // gives the room back, and the reserve is made again.
    if (auto r = _logs.with_spare_space([&] { return _catalog.delete_topic(name); }); !r) return r;
    if (auto r = _logs.with_spare_space([&] { return _logs.remove_topic(name); }); !r)
        log_warn("broker", "topic '{}' removed from the catalog but its data: {}", name,
                 r.err().message);
    (void)_logs.refill_spare_space();
    _by_id.erase(it->second->info.id);
    _by_name.erase(it);
    log_info("broker", "deleted topic '{}'", name);
    return {};
}

}  // namespace sluice::broker
