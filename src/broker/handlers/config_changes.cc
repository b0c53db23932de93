#include "broker/handlers/config_changes.h"

#include <fmt/format.h>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "catalog/topic_config.h"
#include "protocol/messages/describe_configs.h"
#include "protocol/messages/incremental_alter_configs.h"

namespace sluice::broker {
namespace {

using protocol::error_code;

// The non-empty items of a list value: what APPEND and SUBTRACT work on.
std::vector<std::string> split_list(std::string_view v) {
    auto items = catalog::config_list_items(v);
    std::erase(items, std::string{});
    return items;
}

std::string join_list(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
    return out;
}

}  // namespace

// Kafka refuses a malformed operation (no value, unknown operation) as INVALID_REQUEST and
// an operation a config cannot take as INVALID_CONFIG, in these words.
std::optional<config_refusal> apply_config_ops(
    const std::vector<config_change::op>& ops, const std::function<int8_t(std::string_view)>& type,
    const std::function<std::string(std::string_view)>& current,
    std::map<std::string, std::string>& configs) {
    for (const auto& o : ops) {
        if (!o.value && o.operation != protocol::config_op_delete)
            return config_refusal{error_code::invalid_request,
                                  "Null value not supported for : " + o.name};
        switch (o.operation) {
            case protocol::config_op_set:
                configs[o.name] = *o.value;
                break;
            case protocol::config_op_delete:
                configs.erase(o.name);
                break;
            case protocol::config_op_append:
            case protocol::config_op_subtract: {
                const int8_t t = type(o.name);
                if (t == 0)
                    return config_refusal{error_code::invalid_config,
                                          "unknown config '" + o.name + "'"};
                if (t != catalog::config_type_list)
                    return config_refusal{
                        error_code::invalid_config,
                        fmt::format(
                            "Can't {} to key {} because its type is not LIST.",
                            o.operation == protocol::config_op_append ? "APPEND" : "SUBTRACT",
                            o.name)};
                auto items = split_list(current(o.name));
                for (const auto& v : split_list(o.value.value_or(""))) {
                    auto it = std::find(items.begin(), items.end(), v);
                    if (o.operation == protocol::config_op_append && it == items.end())
                        items.push_back(v);
                    if (o.operation == protocol::config_op_subtract && it != items.end())
                        items.erase(it);
                }
                configs[o.name] = join_list(items);
                break;
            }
            default:
                return config_refusal{error_code::invalid_request,
                                      "unknown config operation " + std::to_string(o.operation)};
        }
    }
    return std::nullopt;
}

void apply_config_change(const request_context& ctx, int8_t resource_type,
                         const std::string& resource_name, const config_change& change,
                         bool validate_only, protocol::alter_configs_response::result& out) {
    auto fail = [&](error_code e, std::string msg) {
        out.error_code = code(e);
        log_info("admin", "{}: config change of '{}' refused: {}", ctx.client(), resource_name,
                 msg);
        out.error_message = std::move(msg);
    };
    if ((resource_type == protocol::resource_broker ||
         resource_type == protocol::resource_broker_logger) &&
        !ctx.allowed(security::resource_kind::cluster))
        return fail(error_code::cluster_authorization_failed,
                    "KafkaAlterConfigs on sluice:cluster is needed");
    if (resource_type == protocol::resource_topic &&
        !ctx.allowed(security::resource_kind::topic, resource_name))
        return fail(error_code::topic_authorization_failed,
                    "KafkaAlterConfigs on sluice:topic:" + resource_name + " is needed");
    if (resource_type == protocol::resource_group &&
        !ctx.allowed(security::resource_kind::group, resource_name))
        return fail(error_code::group_authorization_failed,
                    "KafkaAlterConfigs on sluice:group:" + resource_name + " is needed");
    if (resource_type == protocol::resource_broker)
        return change_broker_configs(ctx, resource_name, change, validate_only, out);
    if (resource_type == protocol::resource_group)
        return change_group_configs(ctx, resource_name, change, validate_only, out);
    if (resource_type == protocol::resource_broker_logger)
        return change_broker_loggers(ctx, resource_name, change, validate_only, out);
    if (resource_type != protocol::resource_topic)
        return fail(error_code::invalid_request,
                    "only topic, broker, broker logger and group configs can be altered");
    if (change.duplicate)
        return fail(error_code::invalid_request, "config '" + *change.duplicate + "' given twice");
    auto& topics = ctx.b.topics();
    const topic_state* t = topics.find(resource_name);
    if (!t)
        return fail(error_code::unknown_topic_or_partition,
                    "topic '" + resource_name + "' does not exist");
    std::map<std::string, std::string> configs =
        change.replace_all ? change.replace : t->info.configs;
    auto current = [&](std::string_view name) { return topics.effective_config(*t, name); };
    if (auto e = apply_config_ops(change.ops, catalog::topic_config_type, current, configs))
        return fail(e->code, e->message);
    if (auto e = refusal_of(topics.set_configs(resource_name, configs, validate_only)))
        return fail(e->code, e->message);
    if (!validate_only)
        log_info("admin", "{}: topic '{}' configs now {}", ctx.client(), resource_name,
                 configs.size());
}

std::optional<config_refusal> refusal_of(const result<void>& r) {
    if (r) return std::nullopt;
    return config_refusal{r.code() == errc::invalid_config
                              ? error_code::invalid_config
                              : storage_error_or(r.code(), error_code::unknown_server_error),
                          r.err().message};
}

}  // namespace sluice::broker
