#include "shared/pg_group_store.h"

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "shared/pg_codec.h"

namespace sluice::shared {

using group::group_write;
using group::stored_consumer_group;
using group::stored_group;

result<std::unique_ptr<pg_group_store>> pg_group_store::open(const pg_config& config,
                                                             std::shared_ptr<group_fence> fence) {
    auto db = pg_database::connect(config);
    if (!db) return db.err();
    return std::make_unique<pg_group_store>(std::move(*db), std::move(fence));
}

namespace {

// Reads a classic group's member rows and their protocols into `out` (every group).
result<void> load_members(pg_transaction& tx, std::vector<stored_group>& out,
                          const std::map<std::string, size_t>& index) {
    auto members = tx.exec(
        "SELECT group_id, member_id, instance_id, client_id, client_host, session_timeout_ms, "
        "rebalance_timeout_ms, assignment FROM sluice_group_members ORDER BY group_id, "
        "join_order");
    if (!members) return members.err();
    std::map<std::pair<std::string, std::string>, size_t> member_index;
    for (size_t r = 0; r < members->size(); ++r) {
        auto it = index.find(members->text(r, 0));
        if (it == index.end()) continue;  // a put writes both, an erase both
        auto& g = out[it->second];
        group::stored_member m;
        m.member_id = members->text(r, 1);
        m.instance_id = optional_text(*members, r, 2);
        m.client_id = members->text(r, 3);
        m.client_host = members->text(r, 4);
        m.session_timeout_ms = static_cast<int32_t>(members->int64(r, 5));
        m.rebalance_timeout_ms = static_cast<int32_t>(members->int64(r, 6));
        auto a = bytea_from_text(members->text(r, 7));
        if (!a) return a.err();
        m.assignment = std::move(*a);
        member_index[{g.group_id, m.member_id}] = g.members.size();
        g.members.push_back(std::move(m));
    }
    auto protocols = tx.exec(
        "SELECT group_id, member_id, protocol_name, metadata FROM sluice_group_member_protocols "
        "ORDER BY group_id, member_id, position");
    if (!protocols) return protocols.err();
    for (size_t r = 0; r < protocols->size(); ++r) {
        auto key = std::make_pair(protocols->text(r, 0), protocols->text(r, 1));
        auto it = member_index.find(key);
        if (it == member_index.end()) continue;
        auto meta = bytea_from_text(protocols->text(r, 3));
        if (!meta) return meta.err();
        out[index.at(key.first)].members[it->second].protocols.push_back(
            {protocols->text(r, 2), std::move(*meta)});
    }
    return {};
}

// The protocols of a consumer group's classic-protocol members (catalog version 3).
result<void> load_classic_protocols(pg_transaction& tx, std::vector<stored_consumer_group>& out,
                                    const std::map<std::string, size_t>& index) {
    auto protocols = tx.exec(
        "SELECT group_id, member_id, protocol_name, metadata FROM "
        "sluice_consumer_group_member_protocols ORDER BY group_id, member_id, position");
    if (!protocols) return protocols.err();
    for (size_t r = 0; r < protocols->size(); ++r) {
        auto it = index.find(protocols->text(r, 0));
        if (it == index.end()) continue;
        auto& ms = out[it->second].members;
        auto m = std::find_if(ms.begin(), ms.end(),
                              [&](const auto& x) { return x.member_id == protocols->text(r, 1); });
        if (m == ms.end() || !m->classic) continue;
        auto meta = bytea_from_text(protocols->text(r, 3));
        if (!meta) return meta.err();
        m->classic->protocols.push_back({protocols->text(r, 2), std::move(*meta)});
    }
    return {};
}

}  // namespace

result<std::vector<stored_group>> pg_group_store::load() {
    // REPEATABLE READ: the three tables from one snapshot.
    return _db->transact<std::vector<stored_group>>(
        isolation_level::repeatable_read,
        [](pg_transaction& tx) -> result<std::vector<stored_group>> {
            auto groups = tx.exec(
                "SELECT group_id, state, protocol_type, protocol_name, generation, leader, "
                "state_ms FROM sluice_groups ORDER BY group_id");
            if (!groups) return groups.err();
            std::vector<stored_group> out;
            std::map<std::string, size_t> index;
            for (size_t r = 0; r < groups->size(); ++r) {
                stored_group g;
                g.group_id = groups->text(r, 0);
                auto state = group::parse_state(groups->text(r, 1));
                if (!state)
                    return error{errc::corrupt,
                                 fmt::format("group '{}' has an unknown stored state '{}'",
                                             g.group_id, groups->text(r, 1))};
                g.state = *state;
                g.protocol_type = optional_text(*groups, r, 2);
                g.protocol_name = optional_text(*groups, r, 3);
                g.generation = static_cast<int32_t>(groups->int64(r, 4));
                g.leader = groups->text(r, 5);
                g.state_ms = groups->int64(r, 6);
                index[g.group_id] = out.size();
                out.push_back(std::move(g));
            }
            if (auto m = load_members(tx, out, index); !m) return m.err();
            return out;
        });
}

result<std::vector<stored_consumer_group>> pg_group_store::load_consumer() {
    return _db->transact<std::vector<stored_consumer_group>>(
        isolation_level::repeatable_read,
        [](pg_transaction& tx) -> result<std::vector<stored_consumer_group>> {
            auto groups = tx.exec(
                "SELECT group_id, group_epoch, assignment_epoch, assignor, state_ms "
                "FROM sluice_consumer_groups ORDER BY group_id");
            if (!groups) return groups.err();
            std::vector<stored_consumer_group> out;
            std::map<std::string, size_t> index;
            for (size_t r = 0; r < groups->size(); ++r) {
                stored_consumer_group g;
                g.group_id = groups->text(r, 0);
                g.group_epoch = static_cast<int32_t>(groups->int64(r, 1));
                g.assignment_epoch = static_cast<int32_t>(groups->int64(r, 2));
                g.assignor = groups->text(r, 3);
                g.state_ms = groups->int64(r, 4);
                index[g.group_id] = out.size();
                out.push_back(std::move(g));
            }
            auto members = tx.exec(
                "SELECT group_id, member_id, instance_id, rack_id, client_id, client_host, "
                "member_epoch, previous_epoch, rebalance_timeout_ms, server_assignor, "
                "subscribed_topics, subscribed_regex, assigned, pending_revocation, target, "
                "classic_session_timeout_ms FROM sluice_consumer_group_members "
                "ORDER BY group_id, member_id");
            if (!members) return members.err();
            for (size_t r = 0; r < members->size(); ++r) {
                auto it = index.find(members->text(r, 0));
                if (it == index.end()) continue;
                group::stored_consumer_member m;
                m.member_id = members->text(r, 1);
                m.instance_id = optional_text(*members, r, 2);
                m.rack_id = optional_text(*members, r, 3);
                m.client_id = members->text(r, 4);
                m.client_host = members->text(r, 5);
                m.member_epoch = static_cast<int32_t>(members->int64(r, 6));
                m.previous_epoch = static_cast<int32_t>(members->int64(r, 7));
                m.rebalance_timeout_ms = static_cast<int32_t>(members->int64(r, 8));
                m.server_assignor = optional_text(*members, r, 9);
                m.subscribed_topics = group::parse_topics(members->text(r, 10));
                m.subscribed_regex = optional_text(*members, r, 11);
                for (auto [col, dst] :
                     {std::pair{12, &m.assigned}, std::pair{13, &m.pending_revocation},
                      std::pair{14, &m.target}}) {
                    auto ps = group::parse_partitions(members->text(r, col));
                    if (!ps)
                        return error{errc::corrupt,
                                     fmt::format("consumer group '{}' member '{}': bad stored "
                                                 "partitions '{}'",
                                                 out[it->second].group_id, m.member_id,
                                                 members->text(r, col))};
                    *dst = std::move(*ps);
                }
                if (!members->is_null(r, 15))
                    m.classic = group::stored_consumer_member::classic_metadata{
                        static_cast<int32_t>(members->int64(r, 15)), {}};
                out[it->second].members.push_back(std::move(m));
            }
            if (auto p = load_classic_protocols(tx, out, index); !p) return p.err();
            return out;
        });
}

namespace {

result<void> put_classic(pg_transaction& tx, const stored_group& g) {
    auto put = tx.exec(
        "INSERT INTO sluice_groups (group_id, state, protocol_type, protocol_name, generation, "
        "leader, state_ms) VALUES ($1, $2, $3, $4, CAST($5 AS INTEGER), $6, CAST($7 AS BIGINT))",
        {g.group_id, std::string(group::stored_state_name(g.state)), text_or_null(g.protocol_type),
         text_or_null(g.protocol_name), std::to_string(g.generation), g.leader,
         std::to_string(g.state_ms)});
    if (!put) return put.err();
    int order = 0;
    for (const auto& m : g.members) {
        auto pm = tx.exec(
            "INSERT INTO sluice_group_members (group_id, member_id, join_order, instance_id, "
            "client_id, client_host, session_timeout_ms, rebalance_timeout_ms, assignment) "
            "VALUES ($1, $2, CAST($3 AS INTEGER), $4, $5, $6, CAST($7 AS INTEGER), "
            "CAST($8 AS INTEGER), CAST($9 AS BYTEA))",
            {g.group_id, m.member_id, std::to_string(order++), text_or_null(m.instance_id),
             m.client_id, m.client_host, std::to_string(m.session_timeout_ms),
             std::to_string(m.rebalance_timeout_ms), bytea_hex(m.assignment)});
        if (!pm) return pm.err();
        int position = 0;
        for (const auto& p : m.protocols) {
            auto pp = tx.exec(
                "INSERT INTO sluice_group_member_protocols (group_id, member_id, position, "
                "protocol_name, metadata) VALUES ($1, $2, CAST($3 AS INTEGER), $4, "
                "CAST($5 AS BYTEA))",
                {g.group_id, m.member_id, std::to_string(position++), p.name,
                 bytea_hex(p.metadata)});
            if (!pp) return pp.err();
        }
    }
    return {};
}

result<void> put_consumer(pg_transaction& tx, const stored_consumer_group& g) {
    auto put = tx.exec(
        "INSERT INTO sluice_consumer_groups (group_id, group_epoch, assignment_epoch, assignor, "
        "state_ms) VALUES ($1, CAST($2 AS INTEGER), CAST($3 AS INTEGER), $4, "
        "CAST($5 AS BIGINT))",
        {g.group_id, std::to_string(g.group_epoch), std::to_string(g.assignment_epoch), g.assignor,
         std::to_string(g.state_ms)});
    if (!put) return put.err();
    for (const auto& m : g.members) {
        auto pm = tx.exec(
            "INSERT INTO sluice_consumer_group_members (group_id, member_id, instance_id, "
            "rack_id, client_id, client_host, member_epoch, previous_epoch, "
            "rebalance_timeout_ms, server_assignor, subscribed_topics, subscribed_regex, "
            "assigned, pending_revocation, target, classic_session_timeout_ms) VALUES ($1, $2, "
            "$3, $4, $5, $6, CAST($7 AS INTEGER), CAST($8 AS INTEGER), CAST($9 AS INTEGER), $10, "
            "$11, $12, $13, $14, $15, CAST($16 AS INTEGER))",
            {g.group_id, m.member_id, text_or_null(m.instance_id), text_or_null(m.rack_id),
             m.client_id, m.client_host, std::to_string(m.member_epoch),
             std::to_string(m.previous_epoch), std::to_string(m.rebalance_timeout_ms),
             text_or_null(m.server_assignor), group::format_topics(m.subscribed_topics),
             text_or_null(m.subscribed_regex), group::format_partitions(m.assigned),
             group::format_partitions(m.pending_revocation), group::format_partitions(m.target),
             text_or_null(m.classic ? std::optional<std::string>(
                                          std::to_string(m.classic->session_timeout_ms))
                                    : std::nullopt)});
        if (!pm) return pm.err();
        if (!m.classic) continue;
        int position = 0;
        for (const auto& p : m.classic->protocols) {
            auto pp = tx.exec(
                "INSERT INTO sluice_consumer_group_member_protocols (group_id, member_id, "
                "position, protocol_name, metadata) VALUES ($1, $2, CAST($3 AS INTEGER), $4, "
                "CAST($5 AS BYTEA))",
                {g.group_id, m.member_id, std::to_string(position++), p.name,
                 bytea_hex(p.metadata)});
            if (!pp) return pp.err();
        }
    }
    return {};
}

}  // namespace

namespace {

// A group's tables, its record's last: a put replaces everything of the group, so it
// starts by erasing it, as an erase does.
constexpr std::array<const char*, 3> classic_group_erase{
    "DELETE FROM sluice_group_member_protocols WHERE group_id = $1",
    "DELETE FROM sluice_group_members WHERE group_id = $1",
    "DELETE FROM sluice_groups WHERE group_id = $1"};
constexpr std::array<const char*, 3> consumer_group_erase{
    "DELETE FROM sluice_consumer_group_member_protocols WHERE group_id = $1",
    "DELETE FROM sluice_consumer_group_members WHERE group_id = $1",
    "DELETE FROM sluice_consumer_groups WHERE group_id = $1"};

result<void> apply_group_write(pg_transaction& tx, const group_write& w) {
    for (const char* sql : w.is_consumer() ? consumer_group_erase : classic_group_erase)
        if (auto r = tx.exec(sql, {w.group_id()}); !r) return r.err();
    if (w.op == group_write::kind::put) return put_classic(tx, w.group);
    if (w.op == group_write::kind::put_consumer) return put_consumer(tx, w.consumer);
    return {};
}

}  // namespace

result<std::set<std::string>> pg_group_store::apply(std::span<const group_write> writes) {
    return fenced_apply(
        *_db, _fence.get(), writes, [](const group_write& w) { return &w.group_id(); }, apply_group_write);
}

}  // namespace sluice::shared
