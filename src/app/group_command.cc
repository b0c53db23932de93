#include "app/group_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>

#include "app/cli_common.h"
#include "app/usage_errors.h"
#include "protocol/messages/delete_groups.h"
#include "protocol/messages/describe_groups.h"
#include "protocol/messages/list_groups.h"
#include "protocol/messages/list_offsets.h"
#include "protocol/messages/offset_commit.h"
#include "protocol/messages/offset_fetch.h"
#include "protocol/wire.h"

namespace sluice::app {
namespace {

using protocol::api_key;
using tp = std::pair<std::string, int32_t>;  // topic, partition

struct group_options {
    broker_flags broker;
    std::string format = "table";
    std::string group;
    std::string topic;  // reset-offsets: one topic; empty: every topic the group committed
    bool to_earliest = false, to_latest = false, execute = false;
    std::optional<int64_t> to_offset;
    std::string to_datetime;
};

// The partitions of a ConsumerProtocolAssignment: int16 version, then [topic [partition]].
std::vector<tp> assigned_partitions(bytes_view assignment) {
    std::vector<tp> out;
    if (assignment.empty()) return out;
    protocol::reader r(assignment);
    r.fixed<int16_t>();
    const auto topics = r.fixed<int32_t>();
    for (int32_t t = 0; t < topics && r.ok(); ++t) {
        auto name = r.nullable_string(false).value_or("");
        const auto n = r.fixed<int32_t>();
        for (int32_t p = 0; p < n && r.ok(); ++p) out.emplace_back(name, r.fixed<int32_t>());
    }
    return r.ok() ? out : std::vector<tp>{};
}

result<protocol::describe_groups_response::group> describe_group(admin_client& c,
                                                                 const std::string& id) {
    protocol::describe_groups_request req;
    req.groups = {id};
    auto resp = c.call<protocol::describe_groups_request, protocol::describe_groups_response>(
        api_key::describe_groups, 5, req);
    if (!resp) return resp.err();
    if (resp->groups.empty()) return {errc::corrupt, "DescribeGroups answered no group"};
    auto& g = resp->groups.front();
    if (g.error_code != 0)
        return {errc::io_error, fmt::format("group '{}': {}", id, error_text(g.error_code))};
    return std::move(g);
}

// Committed offsets of every partition the group committed.
result<std::map<tp, int64_t>> committed_offsets(admin_client& c, const std::string& id) {
    protocol::offset_fetch_request req;
    req.group_id = id;  // topics left null: all of them
    auto resp = c.call<protocol::offset_fetch_request, protocol::offset_fetch_response>(
        api_key::offset_fetch, 7, req);
    if (!resp) return resp.err();
    if (resp->error_code != 0)
        return {errc::io_error, fmt::format("group '{}': {}", id, error_text(resp->error_code))};
    std::map<tp, int64_t> out;
    for (const auto& t : resp->topics)
        for (const auto& p : t.partitions)
            if (p.error_code == 0 && p.committed_offset >= 0)
                out[{t.name, p.partition_index}] = p.committed_offset;
    return out;
}

// ListOffsets at `timestamp` (latest_timestamp, earliest_timestamp or a time) for each
// partition; a time after the last record gives the end offset, as Kafka's tool does.
result<std::map<tp, int64_t>> list_offsets(admin_client& c, const std::vector<tp>& parts,
                                           int64_t timestamp) {
    protocol::list_offsets_request req;
    std::map<std::string, size_t> index;
    for (const auto& [topic, partition] : parts) {
        auto [it, fresh] = index.emplace(topic, req.topics.size());
        if (fresh) req.topics.push_back({topic, {}});
        req.topics[it->second].partitions.push_back({partition, -1, timestamp, 1});
    }
    auto resp = c.call<protocol::list_offsets_request, protocol::list_offsets_response>(
        api_key::list_offsets, 7, req);
    if (!resp) return resp.err();
    std::map<tp, int64_t> out;
    std::vector<tp> past_end;
    for (const auto& t : resp->topics)
        for (const auto& p : t.partitions) {
            if (p.error_code != 0)
                return {errc::io_error, fmt::format("offsets of {}-{}: {}", t.name,
                                                    p.partition_index, error_text(p.error_code))};
            if (p.offset < 0) past_end.emplace_back(t.name, p.partition_index);
            else out[{t.name, p.partition_index}] = p.offset;
        }
    if (!past_end.empty() && timestamp >= 0) {
        auto ends = list_offsets(c, past_end, protocol::latest_timestamp);
        if (!ends) return ends.err();
        out.merge(*ends);
    }
    return out;
}

int list(const group_options& o) {
    auto c = connect_admin(o.broker);
    if (!c) return fail(c.err().message);
    auto resp = (*c)->call<protocol::list_groups_request, protocol::list_groups_response>(
        api_key::list_groups, 4, {});
    if (!resp) return fail(resp.err().message);
    if (resp->error_code != 0) return fail("cannot list groups: " + error_text(resp->error_code));
    auto groups = resp->groups;
    std::sort(groups.begin(), groups.end(),
              [](const auto& a, const auto& b) { return a.group_id < b.group_id; });
    output_rows out{{"group", "state", "protocol_type"}, {}};
    for (const auto& g : groups)
        out.rows.push_back({g.group_id, g.group_state, g.protocol_type});
    std::cout << render(out, format_of(o.format));
    return 0;
}

int describe(const group_options& o) {
    auto c = connect_admin(o.broker);
    if (!c) return fail(c.err().message);
    auto g = describe_group(**c, o.group);
    if (!g) return fail(g.err().message);
    auto committed = committed_offsets(**c, o.group);
    if (!committed) return fail(committed.err().message);
    if (g->group_state == "Dead" && committed->empty())
        return fail(fmt::format("group '{}' does not exist", o.group));
    // Every partition that is committed or assigned, with the member that holds it.
    std::map<tp, const protocol::describe_groups_response::member*> owner;
    for (const auto& [part, _] : *committed) owner[part] = nullptr;
    for (const auto& m : g->members)
        for (auto& part : assigned_partitions(m.member_assignment)) owner[part] = &m;
    std::vector<tp> parts;
    parts.reserve(owner.size());
    for (const auto& [part, _] : owner) parts.push_back(part);
    std::map<tp, int64_t> ends;
    if (!parts.empty()) {
        auto r = list_offsets(**c, parts, protocol::latest_timestamp);
        if (!r) return fail(r.err().message);
        ends = std::move(*r);
    }
    std::cerr << fmt::format("group '{}': {}, {} member{}\n", o.group, g->group_state,
                             g->members.size(), g->members.size() == 1 ? "" : "s");
    output_rows out{{"group", "topic", "partition", "current_offset", "log_end_offset", "lag",
                     "consumer_id", "host", "client_id"},
                    {}};
    for (const auto& [part, m] : owner) {
        auto cur = committed->find(part);
        auto end = ends.find(part);
        sql::value cur_v, end_v, lag_v;
        if (cur != committed->end()) cur_v = cur->second;
        if (end != ends.end()) end_v = end->second;
        if (cur != committed->end() && end != ends.end())
            lag_v = std::max<int64_t>(0, end->second - cur->second);
        out.rows.push_back({o.group, part.first, int64_t{part.second}, cur_v, end_v, lag_v,
                            m ? sql::value{m->member_id} : sql::value{},
                            m ? sql::value{m->client_host} : sql::value{},
                            m ? sql::value{m->client_id} : sql::value{}});
    }
    std::cout << render(out, format_of(o.format));
    return 0;
}

int remove(const group_options& o) {
    auto c = connect_admin(o.broker);
    if (!c) return fail(c.err().message);
    protocol::delete_groups_request req;
    req.groups_names = {o.group};
    auto resp = (*c)->call<protocol::delete_groups_request, protocol::delete_groups_response>(
        api_key::delete_groups, 2, req);
    if (!resp) return fail(resp.err().message);
    for (const auto& r : resp->results)
        if (r.error_code != 0)
            return fail(fmt::format("cannot delete group '{}': {}", o.group,
                                    error_text(r.error_code)));
    std::cout << "deleted group '" << o.group << "'\n";
    return 0;
}

// The partitions reset-offsets covers: the topic's, or those the group committed.
result<std::vector<tp>> reset_scope(admin_client& c, const group_options& o,
                                    const std::map<tp, int64_t>& committed) {
    std::vector<tp> parts;
    if (o.topic.empty()) {
        for (const auto& [part, _] : committed) parts.push_back(part);
        return parts;
    }
    auto md = fetch_metadata(c, o.topic);
    if (!md) return md.err();
    for (const auto& t : md->topics) {
        if (t.error_code != 0)
            return {errc::not_found, fmt::format("topic '{}': {}", o.topic,
                                                 error_text(t.error_code))};
        for (const auto& p : t.partitions) parts.emplace_back(o.topic, p.partition_index);
    }
    std::sort(parts.begin(), parts.end());
    return parts;
}

// Where each partition goes: earliest, latest, a time, or an offset kept within
// [earliest, latest] as Kafka's tool keeps it.
result<std::map<tp, int64_t>> reset_targets(admin_client& c, const group_options& o,
                                            const std::vector<tp>& parts) {
    if (o.to_earliest) return list_offsets(c, parts, protocol::earliest_timestamp);
    if (o.to_latest) return list_offsets(c, parts, protocol::latest_timestamp);
    if (!o.to_datetime.empty()) return list_offsets(c, parts, *parse_time(o.to_datetime));
    auto low = list_offsets(c, parts, protocol::earliest_timestamp);
    if (!low) return low.err();
    auto high = list_offsets(c, parts, protocol::latest_timestamp);
    if (!high) return high.err();
    std::map<tp, int64_t> out;
    for (const auto& part : parts)
        out[part] = std::clamp(*o.to_offset, (*low)[part], std::max((*low)[part], (*high)[part]));
    return out;
}

result<void> commit(admin_client& c, const std::string& group,
                    const std::map<tp, int64_t>& targets) {
    protocol::offset_commit_request req;
    req.group_id = group;  // generation -1, no member: an admin commit to an empty group
    std::map<std::string, size_t> index;
    for (const auto& [part, offset] : targets) {
        auto [it, fresh] = index.emplace(part.first, req.topics.size());
        if (fresh) req.topics.push_back({part.first, {}});
        req.topics[it->second].partitions.push_back({part.second, offset, -1, -1, ""});
    }
    auto resp = c.call<protocol::offset_commit_request, protocol::offset_commit_response>(
        api_key::offset_commit, 8, req);
    if (!resp) return resp.err();
    for (const auto& t : resp->topics)
        for (const auto& p : t.partitions)
            if (p.error_code != 0)
                return {errc::io_error, fmt::format("commit {}-{}: {}", t.name, p.partition_index,
                                                    error_text(p.error_code))};
    return {};
}

int reset_offsets(const group_options& o) {
    const int targets_given = int{o.to_earliest} + int{o.to_latest} +
                              int{o.to_offset.has_value()} + int{!o.to_datetime.empty()};
    if (targets_given != 1) {
        std::cerr << "sluice group reset-offsets: give one of --to-earliest, --to-latest, "
                     "--to-offset N, --to-datetime TIME\n";
        return usage_exit_code;
    }
    if (!o.to_datetime.empty() && !parse_time(o.to_datetime)) {
        std::cerr << "sluice group reset-offsets: --to-datetime '" << o.to_datetime
                  << "': milliseconds since the epoch or YYYY-MM-DDTHH:MM:SS[.mmm][Z] (UTC)\n";
        return usage_exit_code;
    }
    auto c = connect_admin(o.broker);
    if (!c) return fail(c.err().message);
    auto g = describe_group(**c, o.group);
    if (!g) return fail(g.err().message);
    if (!g->members.empty())
        return fail(fmt::format("group '{}' has {} active member{} (state {}); stop its "
                                "consumers before resetting its offsets",
                                o.group, g->members.size(), g->members.size() == 1 ? "" : "s",
                                g->group_state));
    auto committed = committed_offsets(**c, o.group);
    if (!committed) return fail(committed.err().message);
    auto parts = reset_scope(**c, o, *committed);
    if (!parts) return fail(parts.err().message);
    if (parts->empty())
        return fail(fmt::format("group '{}' has no committed offsets; name a --topic", o.group));
    auto targets = reset_targets(**c, o, *parts);
    if (!targets) return fail(targets.err().message);
    output_rows out{{"group", "topic", "partition", "current_offset", "new_offset"}, {}};
    for (const auto& [part, offset] : *targets) {
        auto cur = committed->find(part);
        out.rows.push_back({o.group, part.first, int64_t{part.second},
                            cur == committed->end() ? sql::value{} : sql::value{cur->second},
                            offset});
    }
    std::cout << render(out, format_of(o.format));
    if (!o.execute) {
        std::cerr << "dry run: nothing committed; add --execute to commit these offsets\n";
        return 0;
    }
    if (auto r = commit(**c, o.group, *targets); !r) return fail(r.err().message);
    std::cerr << fmt::format("committed {} offset{} for group '{}'\n", targets->size(),
                             targets->size() == 1 ? "" : "s", o.group);
    return 0;
}

}  // namespace

void add_group_commands(CLI::App& app, int& exit_code) {
    auto* group = app.add_subcommand("group", "List, describe, delete consumer groups and "
                                              "reset their offsets");
    group->require_subcommand(1);
    auto opts = std::make_shared<group_options>();
    auto common = [&](CLI::App* sub, bool named) {
        if (named) sub->add_option("group", opts->group, "Group id")->required();
        add_broker_flags(sub, opts->broker);
        add_format_flag(sub, opts->format);
    };
    auto* list_cmd = group->add_subcommand("list", "List groups with their state");
    common(list_cmd, false);
    list_cmd->callback([opts, &exit_code] { exit_code = list(*opts); });

    auto* describe_cmd = group->add_subcommand(
        "describe", "Members, assignments, committed and end offsets and lag per partition");
    common(describe_cmd, true);
    describe_cmd->callback([opts, &exit_code] { exit_code = describe(*opts); });

    auto* delete_cmd = group->add_subcommand("delete", "Delete an empty group and its offsets");
    common(delete_cmd, true);
    delete_cmd->callback([opts, &exit_code] { exit_code = remove(*opts); });

    auto* reset = group->add_subcommand(
        "reset-offsets", "Move a group's committed offsets (a dry run without --execute)");
    common(reset, true);
    reset->add_option("--topic,-t", opts->topic,
                      "Reset this topic's partitions (default: those the group committed)");
    reset->add_flag("--to-earliest", opts->to_earliest, "To each partition's first offset");
    reset->add_flag("--to-latest", opts->to_latest, "To each partition's end");
    reset->add_option("--to-offset", opts->to_offset, "To this offset (within each partition)");
    reset->add_option("--to-datetime", opts->to_datetime,
                      "To the first record at or after this time (ms since the epoch or "
                      "YYYY-MM-DDTHH:MM:SS[.mmm][Z], UTC)");
    reset->add_flag("--execute", opts->execute, "Commit the new offsets (default: show them)");
    reset->callback([opts, &exit_code] { exit_code = reset_offsets(*opts); });
}

}  // namespace sluice::app
