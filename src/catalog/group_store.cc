#include "catalog/group_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "catalog/sqlite_db.h"

namespace sluice::catalog {
namespace {

std::span<const uint8_t> blob(const bytes& b) {
    // A zero-length blob needs a non-null pointer, or SQLite binds NULL.
    static const uint8_t nothing = 0;
    return b.empty() ? std::span<const uint8_t>(&nothing, 0) : std::span<const uint8_t>(b);
}

bytes to_bytes(std::span<const uint8_t> b) {
    return bytes(b.begin(), b.end());
}

}  // namespace

group_store::group_store(std::unique_ptr<detail::db> d) : _db(std::move(d)) {}
group_store::~group_store() = default;

result<std::unique_ptr<group_store>> group_store::open(const std::filesystem::path& path) {
    auto d = detail::db::open(path);
    if (!d) return d.err();
    // As the catalog's own connection: FULL makes a commit survive power loss.
    if (auto r = (*d)->exec("PRAGMA busy_timeout = 5000; PRAGMA synchronous = FULL"); !r)
        return r.err();
    return std::unique_ptr<group_store>(new group_store(std::move(*d)));
}

result<std::vector<group::stored_group>> group_store::load() {
    auto groups = _db->prepare(
        "SELECT group_id, state, protocol_type, protocol_type IS NULL, protocol_name, "
        "protocol_name IS NULL, generation, leader, state_ms FROM group_metadata "
        "ORDER BY group_id");
    if (!groups) return groups.err();
    std::vector<group::stored_group> out;
    std::map<std::string, size_t> index;
    for (;;) {
        auto row = groups->step();
        if (!row) return row.err();
        if (!*row) break;
        group::stored_group g;
        g.group_id = groups->column_text(0);
        auto state = group::parse_state(groups->column_text(1));
        if (!state) {
            return error{errc::corrupt, fmt::format("group '{}' has an unknown stored state '{}'",
                                                    g.group_id, groups->column_text(1))};
        }
        g.state = *state;
        if (groups->column_int64(3) == 0) g.protocol_type = groups->column_text(2);
        if (groups->column_int64(5) == 0) g.protocol_name = groups->column_text(4);
        g.generation = static_cast<int32_t>(groups->column_int64(6));
        g.leader = groups->column_text(7);
        g.state_ms = groups->column_int64(8);
        index[g.group_id] = out.size();
        out.push_back(std::move(g));
    }
    auto members = _db->prepare(
        "SELECT group_id, member_id, instance_id, instance_id IS NULL, client_id, client_host, "
        "session_timeout_ms, rebalance_timeout_ms, assignment FROM group_members "
        "ORDER BY group_id, join_order");
    if (!members) return members.err();
    // (group, member id) -> position in its group's members.
    std::map<std::pair<std::string, std::string>, size_t> member_index;
    for (;;) {
        auto row = members->step();
        if (!row) return row.err();
        if (!*row) break;
        auto it = index.find(members->column_text(0));
        if (it == index.end()) continue;  // not reachable: a put writes both, an erase both
        auto& g = out[it->second];
        group::stored_member m;
        m.member_id = members->column_text(1);
        if (members->column_int64(3) == 0) m.instance_id = members->column_text(2);
        m.client_id = members->column_text(4);
        m.client_host = members->column_text(5);
        m.session_timeout_ms = static_cast<int32_t>(members->column_int64(6));
        m.rebalance_timeout_ms = static_cast<int32_t>(members->column_int64(7));
        m.assignment = to_bytes(members->column_blob(8));
        member_index[{g.group_id, m.member_id}] = g.members.size();
        g.members.push_back(std::move(m));
    }
    auto protocols = _db->prepare(
        "SELECT group_id, member_id, name, metadata FROM group_member_protocols "
        "ORDER BY group_id, member_id, position");
    if (!protocols) return protocols.err();
    for (;;) {
        auto row = protocols->step();
        if (!row) return row.err();
        if (!*row) break;
        auto key = std::make_pair(protocols->column_text(0), protocols->column_text(1));
        auto it = member_index.find(key);
        if (it == member_index.end()) continue;
        out[index.at(key.first)].members[it->second].protocols.push_back(
            {protocols->column_text(2), to_bytes(protocols->column_blob(3))});
    }
    return out;
}

result<std::vector<group::stored_consumer_group>> group_store::load_consumer() {
    auto groups = _db->prepare(
        "SELECT group_id, group_epoch, assignment_epoch, assignor, state_ms FROM consumer_groups "
        "ORDER BY group_id");
    if (!groups) return groups.err();
    std::vector<group::stored_consumer_group> out;
    std::map<std::string, size_t> index;
    for (;;) {
        auto row = groups->step();
        if (!row) return row.err();
        if (!*row) break;
        group::stored_consumer_group g;
        g.group_id = groups->column_text(0);
        g.group_epoch = static_cast<int32_t>(groups->column_int64(1));
        g.assignment_epoch = static_cast<int32_t>(groups->column_int64(2));
        g.assignor = groups->column_text(3);
        g.state_ms = groups->column_int64(4);
        index[g.group_id] = out.size();
        out.push_back(std::move(g));
    }
    auto members = _db->prepare(
        "SELECT group_id, member_id, instance_id, instance_id IS NULL, rack_id, rack_id IS NULL, "
        "client_id, client_host, member_epoch, previous_epoch, rebalance_timeout_ms, "
        "server_assignor, server_assignor IS NULL, subscribed_topics, subscribed_regex, "
        "subscribed_regex IS NULL, assigned, pending_revocation, target, "
        "classic_session_timeout_ms, classic_session_timeout_ms IS NULL "
        "FROM consumer_group_members ORDER BY group_id, member_id");
    if (!members) return members.err();
    for (;;) {
        auto row = members->step();
        if (!row) return row.err();
        if (!*row) break;
        auto it = index.find(members->column_text(0));
        if (it == index.end()) continue;
        group::stored_consumer_member m;
        m.member_id = members->column_text(1);
        if (members->column_int64(3) == 0) m.instance_id = members->column_text(2);
        if (members->column_int64(5) == 0) m.rack_id = members->column_text(4);
        m.client_id = members->column_text(6);
        m.client_host = members->column_text(7);
        m.member_epoch = static_cast<int32_t>(members->column_int64(8));
        m.previous_epoch = static_cast<int32_t>(members->column_int64(9));
        m.rebalance_timeout_ms = static_cast<int32_t>(members->column_int64(10));
        if (members->column_int64(12) == 0) m.server_assignor = members->column_text(11);
        m.subscribed_topics = group::parse_topics(members->column_text(13));
        if (members->column_int64(15) == 0) m.subscribed_regex = members->column_text(14);
        for (auto [col, dst] : {std::pair{16, &m.assigned}, std::pair{17, &m.pending_revocation},
                                std::pair{18, &m.target}}) {
            auto ps = group::parse_partitions(members->column_text(col));
            if (!ps)
                return error{
                    errc::corrupt,
                    fmt::format("consumer group '{}' member '{}': bad stored partitions "
                                "'{}'",
                                out[it->second].group_id, m.member_id, members->column_text(col))};
            *dst = std::move(*ps);
        }
        if (members->column_int64(20) == 0)
            m.classic = group::stored_consumer_member::classic_metadata{
                static_cast<int32_t>(members->column_int64(19)), {}};
        out[it->second].members.push_back(std::move(m));
    }
    // The protocols of classic-protocol members, in each member's order of preference.
    auto protocols = _db->prepare(
        "SELECT group_id, member_id, name, metadata FROM consumer_group_member_protocols "
        "ORDER BY group_id, member_id, position");
    if (!protocols) return protocols.err();
    for (;;) {
        auto row = protocols->step();
        if (!row) return row.err();
        if (!*row) break;
        auto it = index.find(protocols->column_text(0));
        if (it == index.end()) continue;
        auto& ms = out[it->second].members;
        auto m = std::find_if(ms.begin(), ms.end(), [&](const auto& x) {
            return x.member_id == protocols->column_text(1);
        });
        if (m == ms.end() || !m->classic) continue;
        m->classic->protocols.push_back(
            {protocols->column_text(2), to_bytes(protocols->column_blob(3))});
    }
    return out;
}

// A consumer group's record replaced (or erased) within the caller's transaction.
static result<void> apply_consumer(detail::db& d, const group::group_write& w) {
    const auto& g = w.consumer;
    for (const char* sql : {"DELETE FROM consumer_group_member_protocols WHERE group_id = ?1",
                            "DELETE FROM consumer_group_members WHERE group_id = ?1",
                            "DELETE FROM consumer_groups WHERE group_id = ?1"}) {
        auto st = d.prepare(sql);
        if (!st) return st.err();
        if (auto r = st->bind(1, g.group_id).run(); !r) return r;
    }
    if (w.op == group::group_write::kind::erase_consumer) return {};
    auto put_group = d.prepare(
        "INSERT INTO consumer_groups (group_id, group_epoch, assignment_epoch, assignor, "
        "state_ms) VALUES (?1, ?2, ?3, ?4, ?5)");
    if (!put_group) return put_group.err();
    put_group->bind(1, g.group_id).bind(2, int64_t{g.group_epoch});
    put_group->bind(3, int64_t{g.assignment_epoch}).bind(4, g.assignor).bind(5, g.state_ms);
    if (auto r = put_group->run(); !r) return r;
    auto put_member = d.prepare(
        "INSERT INTO consumer_group_members (group_id, member_id, instance_id, rack_id, "
        "client_id, client_host, member_epoch, previous_epoch, rebalance_timeout_ms, "
        "server_assignor, subscribed_topics, subscribed_regex, assigned, pending_revocation, "
        "target, classic_session_timeout_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
        "?11, ?12, ?13, ?14, ?15, ?16)");
    if (!put_member) return put_member.err();
    auto put_protocol = d.prepare(
        "INSERT INTO consumer_group_member_protocols (group_id, member_id, position, name, "
        "metadata) VALUES (?1, ?2, ?3, ?4, ?5)");
    if (!put_protocol) return put_protocol.err();
    auto text_or_null = [](detail::statement& st, int i, const std::optional<std::string>& v) {
        if (v)
            st.bind(i, *v);
        else
            st.bind_null(i);
    };
    for (const auto& m : g.members) {
        auto& st = *put_member;
        st.reset().bind(1, g.group_id).bind(2, m.member_id);
        text_or_null(st, 3, m.instance_id);
        text_or_null(st, 4, m.rack_id);
        st.bind(5, m.client_id).bind(6, m.client_host).bind(7, int64_t{m.member_epoch});
        st.bind(8, int64_t{m.previous_epoch}).bind(9, int64_t{m.rebalance_timeout_ms});
        text_or_null(st, 10, m.server_assignor);
        st.bind(11, group::format_topics(m.subscribed_topics));
        text_or_null(st, 12, m.subscribed_regex);
        st.bind(13, group::format_partitions(m.assigned))
            .bind(14, group::format_partitions(m.pending_revocation));
        st.bind(15, group::format_partitions(m.target));
        if (m.classic)
            st.bind(16, int64_t{m.classic->session_timeout_ms});
        else
            st.bind_null(16);
        if (auto r = st.run(); !r) return r;
        if (!m.classic) continue;
        int64_t position = 0;
        for (const auto& p : m.classic->protocols) {
            auto& pp = *put_protocol;
            pp.reset().bind(1, g.group_id).bind(2, m.member_id).bind(3, position++);
            pp.bind(4, p.name).bind_blob(5, blob(p.metadata));
            if (auto r = pp.run(); !r) return r;
        }
    }
    return {};
}

namespace {

result<void> apply_writes(detail::db& db, std::span<const group::group_write> writes) {
    if (writes.empty()) return {};
    auto txn = detail::write_txn::begin(db);
    if (!txn) return txn.err();
    auto erase_protocols = db.prepare("DELETE FROM group_member_protocols WHERE group_id = ?1");
    auto erase_members = db.prepare("DELETE FROM group_members WHERE group_id = ?1");
    auto erase_group = db.prepare("DELETE FROM group_metadata WHERE group_id = ?1");
    auto put_group = db.prepare(
        "INSERT INTO group_metadata (group_id, state, protocol_type, protocol_name, generation, "
        "leader, state_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    auto put_member = db.prepare(
        "INSERT INTO group_members (group_id, member_id, join_order, instance_id, client_id, "
        "client_host, session_timeout_ms, rebalance_timeout_ms, assignment) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    auto put_protocol = db.prepare(
        "INSERT INTO group_member_protocols (group_id, member_id, position, name, metadata) "
        "VALUES (?1, ?2, ?3, ?4, ?5)");
    for (auto* st :
         {&erase_protocols, &erase_members, &erase_group, &put_group, &put_member, &put_protocol})
        if (!*st) return st->err();
    auto text_or_null = [](detail::statement& st, int i, const std::optional<std::string>& v) {
        if (v)
            st.bind(i, *v);
        else
            st.bind_null(i);
    };
    for (const auto& w : writes) {
        if (w.op == group::group_write::kind::put_consumer ||
            w.op == group::group_write::kind::erase_consumer) {
            if (auto r = apply_consumer(db, w); !r) return r;
            continue;
        }
        const auto& g = w.group;
        // A put replaces everything of the group, so both start by erasing it.
        for (auto* st : {&erase_protocols, &erase_members, &erase_group})
            if (auto r = (*st)->reset().bind(1, g.group_id).run(); !r) return r;
        if (w.op == group::group_write::kind::erase) continue;
        put_group->reset()
            .bind(1, g.group_id)
            .bind(2, std::string(group::stored_state_name(g.state)));
        text_or_null(*put_group, 3, g.protocol_type);
        text_or_null(*put_group, 4, g.protocol_name);
        put_group->bind(5, int64_t{g.generation}).bind(6, g.leader).bind(7, g.state_ms);
        if (auto r = put_group->run(); !r) return r;
        int64_t order = 0;
        for (const auto& m : g.members) {
            put_member->reset().bind(1, g.group_id).bind(2, m.member_id).bind(3, order++);
            text_or_null(*put_member, 4, m.instance_id);
            put_member->bind(5, m.client_id).bind(6, m.client_host);
            put_member->bind(7, int64_t{m.session_timeout_ms})
                .bind(8, int64_t{m.rebalance_timeout_ms})
                .bind_blob(9, blob(m.assignment));
            if (auto r = put_member->run(); !r) return r;
            int64_t position = 0;
            for (const auto& p : m.protocols) {
                put_protocol->reset().bind(1, g.group_id).bind(2, m.member_id).bind(3, position++);
                put_protocol->bind(4, p.name).bind_blob(5, blob(p.metadata));
                if (auto r = put_protocol->run(); !r) return r;
            }
        }
    }
    return txn->commit();
}

}  // namespace

result<std::set<std::string>> group_store::apply(std::span<const group::group_write> writes) {
    if (auto r = apply_writes(*_db, writes); !r) return r.err();
    return std::set<std::string>{};
}

}  // namespace sluice::catalog
