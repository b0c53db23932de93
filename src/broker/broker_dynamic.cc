// The broker's dynamic settings: restored from the catalog at start, changed by
// (Incremental)AlterConfigs on the BROKER resource, applied to the live components. And
// group configs, changed on the GROUP resource, which the group coordinators read.

#include "broker/broker.h"
#include "common/logging.h"

namespace sluice::broker {
namespace {
std::string scope_of(config_level l) {
    return l == config_level::this_broker ? "broker" : "";
}
}  // namespace

result<void> broker::load_dynamic_configs() {
    for (auto l : {config_level::cluster_default, config_level::this_broker}) {
        auto stored = _stores.broker_configs->broker_configs(scope_of(l));
        if (!stored) return stored.err();
        // A value stored by an older build that this one refuses is left out, not fatal.
        config_map kept;
        for (auto& [k, v] : *stored) {
            config_map one{{k, v}};
            if (auto r = _dynamic.check(l, one); !r) {
                log_warn("broker", "stored dynamic broker config {}={} ignored: {}", k, v,
                         r.err().message);
                continue;
            }
            kept.emplace(k, v);
        }
        _dynamic.set(l, std::move(kept));
    }
    apply_dynamic_configs();
    return {};
}

void broker::apply_dynamic_configs() {
    _topics.set_dynamic_defaults(_dynamic.topic_defaults(config_level::cluster_default),
                                 _dynamic.topic_defaults(config_level::this_broker));
    _groups.set_settings(_dynamic.group_settings());
    _connection_quotas.set(_dynamic.connection_limits());
    _consumer_groups.set_settings(_dynamic.group_settings());
}

result<void> broker::set_dynamic_configs(config_level l, config_map values, bool validate_only) {
    if (auto r = _dynamic.check(l, values); !r) return r;
    if (validate_only) return {};
    if (auto r = _stores.broker_configs->set_broker_configs(scope_of(l), values); !r) return r;
    _dynamic.set(l, std::move(values));
    apply_dynamic_configs();
    return {};
}

group::group_defaults broker::group_defaults() const {
    return {_dynamic.group_settings(), _cfg.share_groups};
}

result<void> broker::load_group_configs() {
    if (!_stores.group_configs) return {};
    auto stored = _stores.group_configs->group_configs();
    if (!stored) return stored.err();
    const auto defaults = group_defaults();
    for (auto& [group, configs] : *stored) {
        // A value stored by an older build that this one refuses is left out, not fatal.
        group::group_config_map kept;
        for (auto& [k, v] : configs) {
            if (auto e = group::check_group_configs(defaults, {{k, v}})) {
                log_warn("broker", "stored config {}={} of group '{}' ignored: {}", k, v, group,
                         *e);
                continue;
            }
            kept.emplace(k, v);
        }
        _group_configs.set(group, std::move(kept));
    }
    if (!stored->empty()) log_info("broker", "group configs of {} groups restored", stored->size());
    return {};
}

result<void> broker::set_group_configs(const std::string& group_id, group::group_config_map configs,
                                       bool validate_only) {
    if (auto e = group::check_group_configs(group_defaults(), configs))
        return {errc::invalid_config, *e};
    if (validate_only) return {};
    if (!_stores.group_configs)
        return {errc::unsupported, "this broker has no store for group configs"};
    if (auto r = _stores.group_configs->set_group_configs(group_id, configs); !r) return r;
    _group_configs.set(group_id, std::move(configs));
    return {};
}

}  // namespace sluice::broker
