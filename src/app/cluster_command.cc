#include "app/cluster_command.h"

#include <fmt/format.h>

#include <iostream>

#include "app/cli_common.h"
#include "app/usage_errors.h"
#include "protocol/messages/describe_cluster.h"
#include "protocol/messages/describe_configs.h"
#include "protocol/messages/incremental_alter_configs.h"

namespace sluice::app {
namespace {

using protocol::api_key;

struct cluster_options {
    broker_flags broker;
    std::string format = "table";
};

int info(const cluster_options& o) {
    auto c = connect_admin(o.broker);
    if (!c) return fail(c.err().message);
    auto resp = (*c)->call<protocol::describe_cluster_request, protocol::describe_cluster_response>(
        api_key::describe_cluster, 0, {});
    if (!resp) return fail(resp.err().message);
    if (resp->error_code != 0)
        return fail("cannot describe the cluster: " +
                    error_text(resp->error_code, resp->error_message));
    auto md = fetch_metadata(**c, std::nullopt);
    if (!md) return fail(md.err().message);
    size_t partitions = 0;
    for (const auto& t : md->topics) partitions += t.partitions.size();
    output_rows out{{"cluster_id", "controller_id", "broker_id", "host", "port", "rack", "topics",
                     "partitions"},
                    {}};
    for (const auto& b : resp->brokers)
        out.rows.push_back({resp->cluster_id, int64_t{resp->controller_id}, int64_t{b.broker_id},
                            b.host, int64_t{b.port}, b.rack ? sql::value{*b.rack} : sql::value{},
                            static_cast<int64_t>(md->topics.size()),
                            static_cast<int64_t>(partitions)});
    std::cout << render(out, format_of(o.format));
    return 0;
}

struct alter_options {
    broker_flags broker;
    std::string name;
    std::vector<std::string> set, remove;
    bool validate_only = false;
};

int alter_config(const alter_options& o) {
    if (o.set.empty() && o.remove.empty()) {
        std::cerr << "sluice topic alter-config: give --set KEY=VALUE or --delete KEY\n";
        return usage_exit_code;
    }
    protocol::incremental_alter_configs_request req;
    auto& r = req.resources.emplace_back();
    r.resource_type = protocol::resource_topic;
    r.resource_name = o.name;
    for (const auto& kv : o.set) {
        auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) {
            std::cerr << "sluice topic alter-config: --set wants KEY=VALUE, got '" << kv << "'\n";
            return usage_exit_code;
        }
        r.configs.push_back({kv.substr(0, eq), protocol::config_op_set, kv.substr(eq + 1)});
    }
    for (const auto& key : o.remove)
        r.configs.push_back({key, protocol::config_op_delete, std::nullopt});
    req.validate_only = o.validate_only;
    auto c = connect_admin(o.broker);
    if (!c) return fail(c.err().message);
    auto resp = (*c)->call<protocol::incremental_alter_configs_request,
                           protocol::incremental_alter_configs_response>(
        api_key::incremental_alter_configs, 1, req);
    if (!resp) return fail(resp.err().message);
    for (const auto& res : resp->responses)
        if (res.error_code != 0)
            return fail(fmt::format("cannot alter the configs of topic '{}': {}", o.name,
                                    error_text(res.error_code, res.error_message)));
    for (const auto& kv : o.set)
        std::cout << (o.validate_only ? "valid: " : "set ") << kv << "\n";
    for (const auto& key : o.remove)
        std::cout << (o.validate_only ? "valid: " : "") << "reset " << key << " to its default\n";
    return 0;
}

}  // namespace

void add_cluster_commands(CLI::App& app, int& exit_code) {
    auto* cluster = app.add_subcommand("cluster", "Show the cluster a broker belongs to");
    cluster->require_subcommand(1);
    auto opts = std::make_shared<cluster_options>();
    auto* info_cmd = cluster->add_subcommand("info", "Cluster id, controller, brokers, counts");
    add_broker_flags(info_cmd, opts->broker);
    add_format_flag(info_cmd, opts->format);
    info_cmd->callback([opts, &exit_code] { exit_code = info(*opts); });
}

void add_topic_alter_config(CLI::App* topic, int& exit_code) {
    auto opts = std::make_shared<alter_options>();
    auto* cmd = topic->add_subcommand("alter-config", "Set or reset a topic's configs");
    cmd->add_option("name", opts->name, "Topic name")->required();
    cmd->add_option("--set", opts->set, "KEY=VALUE (repeatable)");
    cmd->add_option("--delete", opts->remove, "KEY back to its default (repeatable)");
    cmd->add_flag("--validate-only", opts->validate_only, "Check the change, make none");
    add_broker_flags(cmd, opts->broker);
    cmd->callback([opts, &exit_code] { exit_code = alter_config(*opts); });
}

}  // namespace sluice::app
