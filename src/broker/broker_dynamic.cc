// The broker's dynamic settings: restored from the catalog at start, changed by
// (Incremental)AlterConfigs on the BROKER resource, applied to the live components.

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

}  // namespace sluice::broker
