#include "app/topic_command.h"

#include <fmt/format.h>

#include <iostream>

#include "app/cli_common.h"
#include "app/cluster_command.h"
#include "catalog/uuid.h"
#include "protocol/messages/create_topics.h"
#include "protocol/messages/delete_topics.h"
#include "protocol/messages/describe_configs.h"
#include "protocol/messages/metadata.h"

namespace sluice::app {
namespace {

using protocol::api_key;

struct topic_options {
    broker_flags broker;
    std::string name;
    int32_t partitions = 1;
    std::vector<std::string> configs;
    bool validate_only = false;
};

int create(const topic_options& o) {
    auto c = connect_admin(o.broker);
    if (!c) return fail(c.err().message);
    protocol::create_topics_request req;
    auto& t = req.topics.emplace_back();
    t.name = o.name;
    t.num_partitions = o.partitions;
    t.replication_factor = 1;
    for (const auto& kv : o.configs) {
        auto eq = kv.find('=');
        if (eq == std::string::npos) return fail("--config wants KEY=VALUE, got '" + kv + "'");
        t.configs.push_back({kv.substr(0, eq), kv.substr(eq + 1)});
    }
    req.validate_only = o.validate_only;
    auto resp = (*c)->call<protocol::create_topics_request, protocol::create_topics_response>(
        api_key::create_topics, 7, req);
    if (!resp) return fail(resp.err().message);
    for (const auto& r : resp->topics) {
        if (r.error_code != 0)
            return fail("cannot create topic '" + r.name + "': " +
                        error_text(r.error_code, r.error_message));
        std::cout << (o.validate_only ? "valid: topic '" : "created topic '") << r.name << "' with "
                  << r.num_partitions << (r.num_partitions == 1 ? " partition\n" : " partitions\n");
    }
    return 0;
}

int list(const topic_options& o) {
    auto c = connect_admin(o.broker);
    if (!c) return fail(c.err().message);
    auto md = fetch_metadata(**c, std::nullopt);
    if (!md) return fail(md.err().message);
    for (const auto& t : md->topics) std::cout << t.name.value_or("") << "\n";
    return 0;
}

int describe(const topic_options& o) {
    auto c = connect_admin(o.broker);
    if (!c) return fail(c.err().message);
    auto md = fetch_metadata(**c, o.name);
    if (!md) return fail(md.err().message);
    for (const auto& t : md->topics) {
        if (t.error_code != 0)
            return fail("topic '" + o.name + "': " + error_text(t.error_code, std::nullopt));
        std::cout << fmt::format("topic: {}\nid: {}\npartitions: {}\n", t.name.value_or(""),
                                 catalog::uuid_to_string(t.topic_id), t.partitions.size());
        for (const auto& p : t.partitions)
            std::cout << fmt::format("  partition {}  leader {}\n", p.partition_index, p.leader_id);
    }
    protocol::describe_configs_request req;
    req.resources.push_back({protocol::resource_topic, o.name, std::nullopt});
    auto cfg = (*c)->call<protocol::describe_configs_request, protocol::describe_configs_response>(
        api_key::describe_configs, 4, req);
    if (!cfg) return fail(cfg.err().message);
    std::cout << "configs:\n";
    for (const auto& r : cfg->results) {
        if (r.error_code != 0)
            return fail("configs of '" + o.name + "': " + error_text(r.error_code, r.error_message));
        for (const auto& e : r.configs)
            std::cout << fmt::format("  {} = {}{}\n", e.name, e.value.value_or("(null)"),
                                     e.config_source == protocol::source_topic ? "  (topic)" : "");
    }
    return 0;
}

int remove(const topic_options& o) {
    auto c = connect_admin(o.broker);
    if (!c) return fail(c.err().message);
    protocol::delete_topics_request req;
    req.topics.push_back({o.name, {}});
    req.timeout_ms = 30000;
    auto resp = (*c)->call<protocol::delete_topics_request, protocol::delete_topics_response>(
        api_key::delete_topics, 6, req);
    if (!resp) return fail(resp.err().message);
    for (const auto& r : resp->responses) {
        if (r.error_code != 0)
            return fail("cannot delete topic '" + o.name + "': " +
                        error_text(r.error_code, r.error_message));
        std::cout << "deleted topic '" << o.name << "'\n";
    }
    return 0;
}

}  // namespace

void add_topic_commands(CLI::App& app, int& exit_code) {
    auto* topic = app.add_subcommand("topic", "Create, list, describe and delete topics");
    topic->require_subcommand(1);
    auto opts = std::make_shared<topic_options>();
    auto with_bootstrap = [&](CLI::App* sub) {
        add_broker_flags(sub, opts->broker);
    };

    auto* create_cmd = topic->add_subcommand("create", "Create a topic");
    create_cmd->add_option("name", opts->name, "Topic name")->required();
    create_cmd->add_option("--partitions,-p", opts->partitions, "Number of partitions (1-20000)")
        ->capture_default_str();
    create_cmd->add_option("--config,-c", opts->configs,
                           "Topic config KEY=VALUE (repeatable), e.g. "
                           "message.timestamp.type=LogAppendTime");
    create_cmd->add_flag("--validate-only", opts->validate_only,
                         "Check the request without creating the topic");
    with_bootstrap(create_cmd);
    create_cmd->callback([opts, &exit_code] { exit_code = create(*opts); });

    auto* list_cmd = topic->add_subcommand("list", "List topics, one name per line");
    with_bootstrap(list_cmd);
    list_cmd->callback([opts, &exit_code] { exit_code = list(*opts); });

    auto* describe_cmd = topic->add_subcommand("describe", "Show a topic's partitions");
    describe_cmd->add_option("name", opts->name, "Topic name")->required();
    with_bootstrap(describe_cmd);
    describe_cmd->callback([opts, &exit_code] { exit_code = describe(*opts); });

    auto* delete_cmd = topic->add_subcommand("delete", "Delete a topic and its data");
    delete_cmd->add_option("name", opts->name, "Topic name")->required();
    with_bootstrap(delete_cmd);
    delete_cmd->callback([opts, &exit_code] { exit_code = remove(*opts); });

    add_topic_alter_config(topic, exit_code);
}

}  // namespace sluice::app
