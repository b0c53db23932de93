#pragma once

// What AlterConfigs and IncrementalAlterConfigs share: turning a requested change into a
// topic's new config set, validating it, and applying it.

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/request_context.h"
#include "protocol/error_code.h"
#include "protocol/messages/alter_configs.h"
#include "protocol/messages/describe_configs.h"

namespace sluice::broker {

struct config_change {
    struct op {
        std::string name;
        int8_t operation = 0;  // protocol::config_op_*
        std::optional<std::string> value;
    };
    bool replace_all = false;                    // AlterConfigs
    std::map<std::string, std::string> replace;  // AlterConfigs: the whole new set
    std::vector<op> ops;                         // IncrementalAlterConfigs
    std::set<std::string> seen;
    std::optional<std::string> duplicate;  // a key named twice: INVALID_REQUEST
};

struct config_refusal {
    protocol::error_code code;
    std::string message;
};

// Applies IncrementalAlterConfigs operations to `configs`, the resource's current set;
// type(name) is the config's ConfigType (0: unknown), current(name) its value in force
// (what APPEND and SUBTRACT start from).
std::optional<config_refusal> apply_config_ops(
    const std::vector<config_change::op>& ops, const std::function<int8_t(std::string_view)>& type,
    const std::function<std::string(std::string_view)>& current,
    std::map<std::string, std::string>& configs);

// A resource's new configs failed to be set: INVALID_CONFIG for a refused value, else the
// storage error. nullopt when r succeeded.
std::optional<config_refusal> refusal_of(const result<void>& r);

// The BROKER resource (broker_configs.cc): "" is the cluster-wide default, an id of this
// broker its own settings.
void change_broker_configs(const request_context& ctx, const std::string& resource_name,
                           const config_change& change, bool validate_only,
                           protocol::alter_configs_response::result& out);
void describe_broker_configs(const broker& b, const protocol::describe_configs_request& req,
                             const protocol::describe_configs_request::resource& r,
                             protocol::describe_configs_response::result& out);

// True when `name` is an id of this broker (every advertised address is one).
bool is_this_broker(const broker& b, std::string_view name);

// The BROKER_LOGGER resource (broker_loggers.cc): log levels, kept in memory only.
void change_broker_loggers(const request_context& ctx, const std::string& resource_name,
                           const config_change& change, bool validate_only,
                           protocol::alter_configs_response::result& out);
void describe_broker_loggers(const broker& b, const protocol::describe_configs_request::resource& r,
                             protocol::describe_configs_response::result& out);

// The GROUP resource (group_configs.cc): group configs, stored in the catalog.
void change_group_configs(const request_context& ctx, const std::string& resource_name,
                          const config_change& change, bool validate_only,
                          protocol::alter_configs_response::result& out);
void describe_group_configs(const broker& b, const protocol::describe_configs_request& req,
                            const protocol::describe_configs_request::resource& r,
                            protocol::describe_configs_response::result& out);

void apply_config_change(const request_context& ctx, int8_t resource_type,
                         const std::string& resource_name, const config_change& change,
                         bool validate_only, protocol::alter_configs_response::result& out);

// Answers an (Incremental)AlterConfigs request: to_change(resource, change) describes
// each resource's change, which is then validated and applied on its own.
template <typename Req, typename ToChange>
void respond_config_changes(const request_context& ctx, const Req& req, ToChange to_change) {
    protocol::alter_configs_response resp;
    for (const auto& r : req.resources) {
        auto& out = resp.responses.emplace_back();
        out.resource_type = r.resource_type;
        out.resource_name = r.resource_name;
        config_change change;
        to_change(r, change);
        apply_config_change(ctx, r.resource_type, r.resource_name, change, req.validate_only, out);
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
