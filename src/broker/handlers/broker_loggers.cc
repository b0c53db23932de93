// IncrementalAlterConfigs and DescribeConfigs on the BROKER_LOGGER resource (type 8), as
// Kafka's `kafka-configs --entity-type broker-loggers`: the log level of each component
// (common/logging.h) as logger "sluice.<component>", and "root". Kept in memory only, as
// Kafka keeps them: a restart starts from --log-level.

#include <algorithm>

#include "broker/broker.h"
#include "broker/handlers/config_changes.h"
#include "broker/handlers/handlers.h"
#include "common/logging.h"
#include "protocol/messages/incremental_alter_configs.h"

namespace sluice::broker {
namespace {

namespace p = protocol;
using p::error_code;

constexpr std::string_view root_logger = "root";
constexpr std::string_view prefix = "sluice.";
constexpr int8_t type_string = 2;

// The component a logger name stands for; "" for root, nullopt for no logger.
std::optional<std::string_view> component_of(std::string_view logger) {
    if (logger == root_logger) return std::string_view();
    if (!logger.starts_with(prefix)) return std::nullopt;
    auto c = logger.substr(prefix.size());
    const auto& all = log_components();
    if (!std::binary_search(all.begin(), all.end(), c)) return std::nullopt;
    return c;
}

// Kafka's LogLevelConfig.VALID_LOG_LEVELS, upper case only as Kafka checks them.
std::optional<log_level> kafka_level(const std::optional<std::string>& v) {
    log_level l;
    if (!v || !parse_log_level(*v, l) || *v != log_level_name(l)) return std::nullopt;
    return l;
}

std::optional<config_refusal> check_op(const config_change::op& o) {
    auto bad_request = [](std::string m) {
        return config_refusal{error_code::invalid_request, std::move(m)};
    };
    switch (o.operation) {
        case p::config_op_set:
        case p::config_op_delete:
            break;
        case p::config_op_append:
            return bad_request("APPEND operation is not allowed for the BROKER_LOGGER resource");
        case p::config_op_subtract:
            return bad_request("SUBTRACT operation is not allowed for the BROKER_LOGGER resource");
        default:
            return bad_request(fmt::format(
                "Unknown operation type {} is not allowed for the BROKER_LOGGER resource",
                o.operation));
    }
    if (!component_of(o.name))
        return config_refusal{error_code::invalid_config,
                              fmt::format("Logger {} does not exist!", o.name)};
    if (o.operation == p::config_op_delete) {
        if (o.name == root_logger)
            return bad_request("Removing the log level of the root logger is not allowed");
        return std::nullopt;
    }
    if (!kafka_level(o.value))
        return config_refusal{
            error_code::invalid_config,
            fmt::format("Cannot set the log level of {} to {} as it is not a supported log "
                        "level. Valid log levels are FATAL, ERROR, WARN, INFO, DEBUG, TRACE",
                        o.name, o.value.value_or("null"))};
    return std::nullopt;
}

std::optional<config_refusal> check_resource(const broker& b, const std::string& name) {
    if (name.empty())
        return config_refusal{error_code::invalid_request, "Broker id must not be empty"};
    if (!is_this_broker(b, name))
        return config_refusal{
            error_code::invalid_request,
            fmt::format("Unexpected broker id, expected {} but received {}",
                        b.broker_count() == 1 ? "0" : fmt::format("0 to {}", b.broker_count() - 1),
                        name)};
    return std::nullopt;
}

}  // namespace

void change_broker_loggers(const request_context& ctx, const std::string& resource_name,
                           const config_change& change, bool validate_only,
                           p::alter_configs_response::result& out) {
    auto fail = [&](const config_refusal& r) {
        out.error_code = code(r.code);
        out.error_message = r.message;
        log_info("admin", "{}: log level change refused: {}", ctx.client(), r.message);
    };
    if (change.replace_all)
        return fail({error_code::invalid_request,
                     "AlterConfigs is only supported for topics and brokers, but resource type "
                     "is BROKER_LOGGER"});
    if (auto r = check_resource(ctx.b, resource_name)) return fail(*r);
    for (const auto& o : change.ops)
        if (auto r = check_op(o)) return fail(*r);
    if (validate_only) return;
    for (const auto& o : change.ops) {
        auto component = *component_of(o.name);
        auto lvl = o.operation == p::config_op_set ? kafka_level(o.value) : std::nullopt;
        if (component.empty())
            set_log_level(*lvl);
        else
            set_component_level(component, lvl);
        log_info("admin", "{}: logger {} now {}", ctx.client(), o.name,
                 lvl ? log_level_name(*lvl) : "unset (follows root)");
    }
}

// Every logger with the level it writes at (root's for one without its own), as Kafka
// lists its loggers.
void describe_broker_loggers(const broker& b, const p::describe_configs_request::resource& r,
                             p::describe_configs_response::result& out) {
    if (auto e = check_resource(b, r.resource_name)) {
        out.error_code = code(e->code);
        out.error_message = e->message;
        return;
    }
    auto add = [&](std::string name, log_level lvl) {
        if (r.configuration_keys &&
            std::find(r.configuration_keys->begin(), r.configuration_keys->end(), name) ==
                r.configuration_keys->end())
            return;
        p::describe_configs_response::config c;
        c.name = std::move(name);
        c.value = log_level_name(lvl);
        c.config_source = p::source_dynamic_broker_logger;
        c.config_type = type_string;
        out.configs.push_back(std::move(c));
    };
    add(std::string(root_logger), current_log_level());
    for (auto c : log_components()) add(std::string(prefix) + std::string(c), effective_level(c));
}

}  // namespace sluice::broker
