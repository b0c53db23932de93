#include <algorithm>

#include "broker/broker.h"
#include "broker/handlers/config_changes.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/describe_configs.h"

namespace sluice::broker {
namespace {

namespace p = protocol;
using result_t = p::describe_configs_response::result;
using config_t = p::describe_configs_response::config;

bool wanted(const p::describe_configs_request::resource& r, std::string_view name) {
    if (!r.configuration_keys) return true;
    return std::find(r.configuration_keys->begin(), r.configuration_keys->end(), name) !=
           r.configuration_keys->end();
}

// Every level that gives the config a value, highest first, named as Kafka names them:
// the topic's own setting by the topic config name, a broker-wide default
// (--topic-default) and the built-in default by their broker-level names.
std::vector<p::describe_configs_response::synonym> synonyms(const topic_registry& topics,
                                                            const topic_state& t,
                                                            std::string_view name) {
    const auto names = catalog::topic_config_synonyms(name);
    std::vector<p::describe_configs_response::synonym> out;
    for (auto& [source, value] : topics.config_levels(t, name)) {
        if (source == p::source_topic) {
            out.push_back({std::string(name), std::move(value), source});
        } else if (source != p::source_default) {
            // Set by the topic config's name; a key Kafka has no broker name for keeps it.
            std::string_view as = names.broker_name.empty() ? name : names.broker_name;
            out.push_back({std::string(as), std::move(value), source});
        } else if (!names.default_name.empty()) {
            out.push_back(
                {std::string(names.default_name), std::string(names.default_value), source});
        }
    }
    return out;
}

void describe_topic(broker& b, const p::describe_configs_request& req,
                    const p::describe_configs_request::resource& r, result_t& out) {
    auto& topics = b.topics();
    const topic_state* t = topics.find(r.resource_name);
    if (!t) {
        out.error_code = code(p::error_code::unknown_topic_or_partition);
        out.error_message = "topic '" + r.resource_name + "' does not exist";
        return;
    }
    for (const auto& def : catalog::topic_config_defs()) {
        if (!wanted(r, def.name)) continue;
        config_t c;
        c.name = std::string(def.name);
        c.value = topics.effective_config(*t, def.name);
        c.config_source = topics.config_source(*t, def.name);
        c.is_default = c.config_source == p::source_default;
        c.config_type = catalog::topic_config_type(def.name);
        if (req.include_documentation) c.documentation = std::string(def.doc);
        if (req.include_synonyms) c.synonyms = synonyms(topics, *t, def.name);
        out.configs.push_back(std::move(c));
    }
}

}  // namespace

void handle_describe_configs(const request_context& ctx, request_body body) {
    p::describe_configs_request req;
    if (!decode_request(ctx, body, req)) return;
    p::describe_configs_response resp;
    for (const auto& r : req.resources) {
        auto& out = resp.results.emplace_back();
        out.resource_type = r.resource_type;
        out.resource_name = r.resource_name;
        const bool topic = r.resource_type == p::resource_topic;
        const bool group = r.resource_type == p::resource_group;
        const auto kind = topic   ? security::resource_kind::topic
                          : group ? security::resource_kind::group
                                  : security::resource_kind::cluster;
        if ((topic || group || r.resource_type == p::resource_broker ||
             r.resource_type == p::resource_broker_logger) &&
            !ctx.allowed(kind, topic || group ? r.resource_name : std::string())) {
            out.error_code = code(topic   ? p::error_code::topic_authorization_failed
                                  : group ? p::error_code::group_authorization_failed
                                          : p::error_code::cluster_authorization_failed);
            out.error_message = "KafkaDescribeConfigs is needed";
        } else if (topic) {
            describe_topic(ctx.b, req, r, out);
        } else if (r.resource_type == p::resource_broker) {
            describe_broker_configs(ctx.b, req, r, out);
        } else if (r.resource_type == p::resource_broker_logger) {
            describe_broker_loggers(ctx.b, r, out);
        } else if (group) {
            describe_group_configs(ctx.b, req, r, out);
        } else {
            out.error_code = code(p::error_code::invalid_request);
            out.error_message =
                "only topic (2), broker (4), broker logger (8) and group (32) resources are "
                "described";
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker
