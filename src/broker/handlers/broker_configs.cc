// AlterConfigs, IncrementalAlterConfigs and DescribeConfigs on the BROKER resource: the
// dynamic settings of dynamic_config.h, and the static ones described read-only.

#include <algorithm>

#include "broker/broker.h"
#include "broker/handlers/config_changes.h"
#include "broker/handlers/handlers.h"
#include "common/logging.h"

namespace sluice::broker {
namespace {

namespace p = protocol;
using p::error_code;

// "" is the cluster-wide default; an id of this broker (every advertised address is one)
// names this broker's own level.
std::optional<config_level> level_of(const broker& b, const std::string& name) {
    if (name.empty()) return config_level::cluster_default;
    if (is_this_broker(b, name)) return config_level::this_broker;
    return std::nullopt;
}

bool wanted_key(const p::describe_configs_request::resource& r, std::string_view name) {
    if (!r.configuration_keys) return true;
    return std::find(r.configuration_keys->begin(), r.configuration_keys->end(), name) !=
           r.configuration_keys->end();
}

// A topic default whose broker config has no default of its own in Kafka
// (log.retention.ms, log.roll.ms): Kafka describes it as null, with no default synonym.
bool null_default(const dynamic_setting* s) {
    return s && !s->topic_key.empty() &&
           catalog::topic_config_synonyms(s->topic_key).default_name.empty();
}

}  // namespace

bool is_this_broker(const broker& b, std::string_view name) {
    for (size_t id = 0; id < b.broker_count(); ++id)
        if (std::to_string(id) == name) return true;
    return false;
}

void change_broker_configs(const request_context& ctx, const std::string& resource_name,
                           const config_change& change, bool validate_only,
                           p::alter_configs_response::result& out) {
    auto fail = [&](error_code e, std::string msg) {
        out.error_code = code(e);
        log_info("admin", "{}: broker config change of '{}' refused: {}", ctx.client(),
                 resource_name, msg);
        out.error_message = std::move(msg);
    };
    auto level = level_of(ctx.b, resource_name);
    if (!level)
        return fail(error_code::invalid_request, "no broker with id '" + resource_name + "'");
    if (change.duplicate)
        return fail(error_code::invalid_request, "config '" + *change.duplicate + "' given twice");
    const auto& dyn = ctx.b.dynamic_configs();
    config_map values = change.replace_all ? change.replace : dyn.level(*level);
    auto type = [](std::string_view name) -> int8_t {
        const auto* s = find_dynamic_setting(name);
        return s ? s->type : 0;
    };
    auto current = [&](std::string_view name) { return dyn.value(name); };
    if (auto e = apply_config_ops(change.ops, type, current, values))
        return fail(e->code, e->message);
    auto r = ctx.b.set_dynamic_configs(*level, values, validate_only);
    if (r) {
        if (!validate_only)
            log_info("admin", "{}: dynamic broker configs of '{}' now {}", ctx.client(),
                     resource_name, values.size());
        return;
    }
    // Kafka answers INVALID_REQUEST for every refused broker config, bad values included.
    const bool refused = r.code() == errc::invalid_argument || r.code() == errc::invalid_config;
    fail(refused ? error_code::invalid_request
                 : storage_error_or(r.code(), error_code::unknown_server_error),
         r.err().message);
}

// Resource "" lists what the cluster-wide default level sets, as Kafka does; a broker id
// lists every setting with its value in force and where it comes from.
void describe_broker_configs(const broker& b, const p::describe_configs_request& req,
                             const p::describe_configs_request::resource& r,
                             p::describe_configs_response::result& out) {
    auto level = level_of(b, r.resource_name);
    if (!level) {
        out.error_code = code(error_code::invalid_request);
        out.error_message = "no broker with id '" + r.resource_name + "'";
        return;
    }
    const auto& dyn = b.dynamic_configs();
    for (const auto& name : dyn.names()) {
        if (!wanted_key(r, name)) continue;
        const auto* s = find_dynamic_setting(name);
        auto levels = dyn.levels(name);
        if (*level == config_level::cluster_default)
            std::erase_if(levels, [](auto& l) { return l.first != p::source_dynamic_default_broker; });
        if (levels.empty()) continue;
        p::describe_configs_response::config c;
        c.name = name;
        c.value = levels.front().second;
        c.config_source = levels.front().first;
        c.is_default = c.config_source == p::source_default;
        if (c.is_default && null_default(s)) c.value = std::nullopt;
        c.config_type = s ? s->type : int8_t{0};
        if (req.include_documentation && s) c.documentation = std::string(s->doc);
        if (req.include_synonyms)
            for (auto& [source, value] : levels)
                if (source != p::source_default || !null_default(s))
                    c.synonyms.push_back({name, std::move(value), source});
        out.configs.push_back(std::move(c));
    }
    if (*level == config_level::cluster_default) return;
    for (auto& [name, value] : static_settings(b.config())) {
        if (!wanted_key(r, name)) continue;
        p::describe_configs_response::config c;
        c.name = name;
        c.value = value;
        c.read_only = true;
        c.config_source = p::source_static_broker;
        if (req.include_synonyms) c.synonyms.push_back({name, value, p::source_static_broker});
        out.configs.push_back(std::move(c));
    }
    std::sort(out.configs.begin(), out.configs.end(),
              [](const auto& x, const auto& y) { return x.name < y.name; });
}

}  // namespace sluice::broker
