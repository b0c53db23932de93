#include "sql/system_tables.h"

#include <fmt/format.h>

#include "catalog/catalog.h"
#include "catalog/topic_config.h"
#include "common/clock.h"
#include "log/log_manager.h"
#include "security/acl.h"
#include "sql/json_text.h"
#include "sql/partition_source.h"

namespace sluice::sql {

namespace {

using row_list = std::vector<std::vector<value>>;

value text_or_null(const std::optional<std::string>& s) {
    return s ? value(*s) : value(std::monostate{});
}

// The session's principal sees the topics, groups and configs it may describe, as a
// Kafka client's Metadata, ListGroups and DescribeConfigs answers show them.
bool may(const system_sources& src, security::action a, security::resource_kind k,
         const std::string& name) {
    return !src.ctx || src.ctx->allowed(a, {k, name});
}
bool may_describe_topic(const system_sources& src, const std::string& topic) {
    return may(src, security::action::describe, security::resource_kind::topic, topic);
}
bool may_describe_group(const system_sources& src, const std::string& group) {
    return may(src, security::action::describe, security::resource_kind::group, group);
}

const catalog::topic_store& topics_of(const system_sources& src) {
    return src.topics ? *src.topics : *src.catalog;
}
const catalog::security_store& security_of(const system_sources& src) {
    return src.security ? *src.security : *src.catalog;
}

// The broker-wide topic defaults (--topic-default), read once per scan.
std::map<std::string, std::string> topic_defaults(const system_sources& src) {
    return src.state ? src.state->topic_defaults() : std::map<std::string, std::string>{};
}

outcome<row_list> topics_rows(const system_sources& src) {
    row_list out;
    const auto defaults = topic_defaults(src);
    for (const auto& t : topics_of(src).list_topics()) {
        if (!may_describe_topic(src, t.name)) continue;
        out.push_back({t.name, catalog::uuid_to_string(t.id), int64_t{t.partitions},
                       catalog::effective_config(t, "cleanup.policy", defaults), t.created_ms});
    }
    return out;
}

outcome<row_list> partitions_rows(const system_sources& src) {
    row_list out;
    for (const auto& t : topics_of(src).list_topics()) {
        if (!may_describe_topic(src, t.name)) continue;
        for (int32_t p = 0; p < t.partitions; ++p) {
            if (src.partitions) {
                // Shared mode: the offsets of the shared catalog; the objects holding the
                // batches are shared by partitions, so no bytes or segments per partition.
                auto* store = src.partitions->partition(t.name, p);
                if (!store) continue;
                out.push_back({t.name, int64_t{p}, store->log_start_offset(),
                               store->high_watermark(), store->log_end_offset(), std::monostate{},
                               std::monostate{}});
                continue;
            }
            auto* log = src.logs->get(t.name, p);
            if (!log) continue;  // declared to the log a moment later than to the catalog
            auto d = log->describe();
            if (!d)
                return query_error{failure::internal,
                                   fmt::format("{}-{}: {}", t.name, p, d.err().message)};
            out.push_back({t.name, int64_t{p}, d->log_start_offset, d->high_watermark,
                           d->log_end_offset, d->bytes, static_cast<int64_t>(d->segments)});
        }
    }
    return out;
}

outcome<row_list> configs_rows(const system_sources& src) {
    row_list out;
    const auto defaults = topic_defaults(src);
    for (const auto& t : topics_of(src).list_topics()) {
        if (!may(src, security::action::describe_configs, security::resource_kind::topic, t.name))
            continue;
        for (const auto& def : catalog::topic_config_defs()) {
            const std::string key(def.name);
            const char* source = t.configs.count(key)  ? "topic"
                                 : defaults.count(key) ? "broker"
                                                       : "default";
            out.push_back(
                {t.name, key, catalog::effective_config(t, key, defaults), std::string(source)});
        }
    }
    return out;
}

outcome<row_list> groups_rows(const system_sources& src) {
    row_list out;
    for (auto& g : src.state->groups())
        if (may_describe_group(src, g.group_id))
            out.push_back({g.group_id, g.state, g.protocol_type, g.protocol, int64_t{g.members},
                           int64_t{g.generation}, g.type});
    return out;
}

outcome<row_list> group_members_rows(const system_sources& src) {
    row_list out;
    for (auto& m : src.state->group_members())
        if (may_describe_group(src, m.group_id))
            out.push_back({m.group_id, m.type, m.member_id, text_or_null(m.instance_id),
                           m.client_id, m.client_host, int64_t{m.epoch},
                           text_or_null(m.subscribed_topics), text_or_null(m.subscribed_regex),
                           text_or_null(m.assigned), text_or_null(m.target)});
    return out;
}

// Describe on the transactional id, as Kafka's DescribeTransactions and ListTransactions.
outcome<row_list> transactions_rows(const system_sources& src) {
    row_list out;
    const int64_t now = now_ms();
    for (auto& t : src.state->transactions()) {
        if (!may(src, security::action::describe, security::resource_kind::transactional_id,
                 t.transactional_id))
            continue;
        const bool open = t.start_ms >= 0;
        out.push_back({t.transactional_id, t.producer_id, int64_t{t.producer_epoch}, t.state,
                       t.partitions, t.groups, int64_t{t.timeout_ms},
                       open ? value(t.start_ms) : value(std::monostate{}),
                       open ? value(now - t.start_ms) : value(std::monostate{}), t.update_ms});
    }
    return out;
}

template <typename T>
value int_or_null(const std::optional<T>& v) {
    return v ? value(int64_t{*v}) : value(std::monostate{});
}

outcome<row_list> share_groups_rows(const system_sources& src) {
    row_list out;
    for (auto& g : src.state->share_groups())
        if (may_describe_group(src, g.group_id))
            out.push_back({g.group_id, g.state, int64_t{g.members}, int64_t{g.group_epoch},
                           text_or_null(g.topic), int_or_null(g.partition),
                           int_or_null(g.start_offset), int_or_null(g.end_offset),
                           int_or_null(g.in_flight), int_or_null(g.acquired)});
    return out;
}

outcome<row_list> group_offsets_rows(const system_sources& src) {
    row_list out;
    for (auto& o : src.state->group_offsets()) {
        // Kafka's OffsetFetch needs Describe on the group and on the topic.
        if (!may_describe_group(src, o.group_id) || !may_describe_topic(src, o.topic)) continue;
        value hw, lag;
        const log::partition_store* log = src.partitions
                                              ? src.partitions->partition(o.topic, o.partition)
                                          : src.logs ? src.logs->get(o.topic, o.partition)
                                                     : nullptr;
        if (log) {
            const offset_t h = log->high_watermark();
            hw = h;
            // Kafka's consumer lag: what the group has yet to read of what is readable.
            lag =
                o.offset >= 0 ? value(std::max<int64_t>(0, h - o.offset)) : value(std::monostate{});
        }
        out.push_back({o.group_id, o.topic, int64_t{o.partition}, o.offset,
                       text_or_null(o.metadata), o.commit_ms, hw, lag});
    }
    return out;
}

// Users and policies are listed to those who may list them over HTTP, and ACLs to those
// who may describe them over Kafka: KafkaDescribe on the cluster either way.
bool may_describe_cluster(const system_sources& src) {
    return may(src, security::action::describe, security::resource_kind::cluster, {});
}

outcome<row_list> policies_rows(const system_sources& src) {
    row_list out;
    if (!may_describe_cluster(src)) return out;
    for (const auto& p : security_of(src).list_policies()) {
        std::string users = "[";
        for (size_t i = 0; i < p.users.size(); ++i) {
            if (i) users += ",";
            append_json_string(users, p.users[i]);
        }
        out.push_back({p.name, users + "]", p.document, p.updated_ms});
    }
    return out;
}

// Every policy statement that Kafka's ACLs can express, as DescribeAcls reports it.
outcome<row_list> acls_rows(const system_sources& src) {
    namespace acl = security::acl;
    row_list out;
    if (!may_describe_cluster(src)) return out;
    for (const auto& p : security_of(src).list_policies()) {
        auto parsed = security::parse_policy(p.name, p.document);
        if (!parsed) continue;
        for (const auto& x : acl::bindings_of(*parsed, p.users)) {
            const auto& b = x.b;
            out.push_back({b.principal, std::string(acl::name_of(b.type)), b.name,
                           std::string(acl::name_of(b.pattern)), b.host,
                           std::string(acl::name_of(b.op)), std::string(acl::name_of(b.perm)),
                           p.name, static_cast<int64_t>(x.statement)});
        }
    }
    return out;
}

}  // namespace

std::map<std::string, row_table_spec> system_table_specs(const system_sources& src) {
    std::map<std::string, row_table_spec> specs;
    const bool has_topics = src.catalog || (src.topics && src.security);
    if (has_topics) {
        specs["topics"] = {
            "CREATE TABLE x(topic TEXT, topic_id TEXT, partitions INTEGER, cleanup_policy TEXT, "
            "created_ms INTEGER)",
            [src] { return topics_rows(src); }};
        specs["policies"] = {
            "CREATE TABLE x(name TEXT, users TEXT, document TEXT, updated_ms INTEGER)",
            [src] { return policies_rows(src); }};
        specs["acls"] = {
            "CREATE TABLE x(principal TEXT, resource_type TEXT, resource_name TEXT, "
            "pattern_type TEXT, host TEXT, operation TEXT, permission_type TEXT, policy TEXT, "
            "statement INTEGER)",
            [src] { return acls_rows(src); }};
        specs["configs"] = {"CREATE TABLE x(topic TEXT, name TEXT, value TEXT, source TEXT)",
                            [src] { return configs_rows(src); }};
    }
    if (has_topics && (src.logs || src.partitions))
        specs["partitions"] = {
            "CREATE TABLE x(topic TEXT, partition INTEGER, log_start_offset INTEGER, "
            "high_watermark INTEGER, log_end_offset INTEGER, bytes INTEGER, "
            "segments INTEGER)",
            [src] { return partitions_rows(src); }};
    if (src.state) {
        specs["groups"] = {
            "CREATE TABLE x(group_id TEXT, state TEXT, protocol_type TEXT, protocol TEXT, "
            "members INTEGER, generation INTEGER, type TEXT)",
            [src] { return groups_rows(src); }};
        specs["group_members"] = {
            "CREATE TABLE x(group_id TEXT, type TEXT, member_id TEXT, instance_id TEXT, "
            "client_id TEXT, client_host TEXT, epoch INTEGER, subscribed_topics TEXT, "
            "subscribed_regex TEXT, assigned TEXT, target TEXT)",
            [src] { return group_members_rows(src); }};
        specs["share_groups"] = {
            "CREATE TABLE x(group_id TEXT, state TEXT, members INTEGER, group_epoch INTEGER, "
            "topic TEXT, partition INTEGER, start_offset INTEGER, end_offset INTEGER, "
            "in_flight INTEGER, acquired INTEGER)",
            [src] { return share_groups_rows(src); }};
        specs["group_offsets"] = {
            "CREATE TABLE x(group_id TEXT, topic TEXT, partition INTEGER, committed_offset "
            "INTEGER, "
            "metadata TEXT, commit_timestamp INTEGER, high_watermark INTEGER, lag INTEGER)",
            [src] { return group_offsets_rows(src); }};
        specs["transactions"] = {
            "CREATE TABLE x(transactional_id TEXT, producer_id INTEGER, producer_epoch INTEGER, "
            "state TEXT, partitions TEXT, group_ids TEXT, timeout_ms INTEGER, start_timestamp "
            "INTEGER, age_ms INTEGER, last_update_timestamp INTEGER)",
            [src] { return transactions_rows(src); }};
    }
    return specs;
}

}  // namespace sluice::sql
