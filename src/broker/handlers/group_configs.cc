// AlterConfigs, IncrementalAlterConfigs and DescribeConfigs on the GROUP resource: group
// configs (group/group_configs.h), as Kafka 4.3 answers them.

#include <algorithm>

#include "broker/broker.h"
#include "broker/handlers/config_changes.h"
#include "broker/handlers/handlers.h"
#include "common/logging.h"

namespace sluice::broker {
namespace {

namespace p = protocol;
using p::error_code;

}  // namespace

void change_group_configs(const request_context& ctx, const std::string& resource_name,
                          const config_change& change, bool validate_only,
                          p::alter_configs_response::result& out) {
    auto fail = [&](error_code e, std::string msg) {
        out.error_code = code(e);
        log_info("admin", "{}: config change of group '{}' refused: {}", ctx.client(),
                 resource_name, msg);
        out.error_message = std::move(msg);
    };
    if (resource_name.empty())
        return fail(error_code::invalid_request, "Default group resources are not allowed.");
    if (change.duplicate)
        return fail(error_code::invalid_request, "Error due to duplicate config keys");
    group::group_config_map configs =
        change.replace_all ? change.replace : ctx.b.group_configs().of(resource_name);
    auto type = [](std::string_view name) -> int8_t {
        const auto* d = group::find_group_config(name);
        return d ? d->type : int8_t{0};
    };
    const auto defaults = ctx.b.group_defaults();
    auto current = [&](std::string_view name) {
        auto it = configs.find(std::string(name));
        return it != configs.end() ? it->second : group::group_config_default(defaults, name);
    };
    if (auto e = apply_config_ops(change.ops, type, current, configs))
        return fail(e->code, e->message);
    const size_t n = configs.size();
    if (auto e =
            refusal_of(ctx.b.set_group_configs(resource_name, std::move(configs), validate_only)))
        return fail(e->code, e->message);
    if (!validate_only)
        log_info("admin", "{}: group '{}' configs now {}", ctx.client(), resource_name, n);
}

// Every group config, the group's own value (GROUP_CONFIG) or the broker default
// (DEFAULT_CONFIG, under the broker setting's name), for any group name: a group need not
// exist to have configs, as in Kafka.
void describe_group_configs(const broker& b, const p::describe_configs_request& req,
                            const p::describe_configs_request::resource& r,
                            p::describe_configs_response::result& out) {
    if (r.resource_name.empty()) {
        out.error_code = code(error_code::invalid_request);
        out.error_message = "Group name must not be empty";
        return;
    }
    const auto defaults = b.group_defaults();
    const auto& own = b.group_configs().of(r.resource_name);
    for (const auto& def : group::group_config_defs()) {
        if (r.configuration_keys &&
            std::find(r.configuration_keys->begin(), r.configuration_keys->end(), def.name) ==
                r.configuration_keys->end())
            continue;
        p::describe_configs_response::config c;
        c.name = std::string(def.name);
        const std::string fallback = group::group_config_default(defaults, def.name);
        auto it = own.find(c.name);
        c.value = it != own.end() ? it->second : fallback;
        c.config_source = it != own.end() ? p::source_group : p::source_default;
        c.is_default = it == own.end();
        c.config_type = def.type;
        if (req.include_documentation) c.documentation = std::string(def.doc);
        if (req.include_synonyms) {
            if (it != own.end()) c.synonyms.push_back({c.name, it->second, p::source_group});
            c.synonyms.push_back({std::string(def.broker_name), fallback, p::source_default});
        }
        out.configs.push_back(std::move(c));
    }
}

}  // namespace sluice::broker
