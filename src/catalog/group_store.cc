#include "catalog/group_store.h"

#include <fmt/format.h>

#include <map>

#include "catalog/sqlite_db.h"

namespace sluice::catalog {
namespace {

// The stored names of the states a record may hold (docs/formats/catalog.md).
const char* state_text(group::group_state s) {
    switch (s) {
        case group::group_state::stable:
            return "Stable";
        case group::group_state::preparing_rebalance:
        case group::group_state::completing_rebalance:
            return "PreparingRebalance";
        case group::group_state::empty:
        case group::group_state::dead:
            break;
    }
    return "Empty";
}

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

result<void> group_store::apply(std::span<const group::group_write> writes) {
    if (writes.empty()) return {};
    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    auto erase_protocols = _db->prepare("DELETE FROM group_member_protocols WHERE group_id = ?1");
    auto erase_members = _db->prepare("DELETE FROM group_members WHERE group_id = ?1");
    auto erase_group = _db->prepare("DELETE FROM group_metadata WHERE group_id = ?1");
    auto put_group = _db->prepare(
        "INSERT INTO group_metadata (group_id, state, protocol_type, protocol_name, generation, "
        "leader, state_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    auto put_member = _db->prepare(
        "INSERT INTO group_members (group_id, member_id, join_order, instance_id, client_id, "
        "client_host, session_timeout_ms, rebalance_timeout_ms, assignment) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    auto put_protocol = _db->prepare(
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
        const auto& g = w.group;
        // A put replaces everything of the group, so both start by erasing it.
        for (auto* st : {&erase_protocols, &erase_members, &erase_group})
            if (auto r = (*st)->reset().bind(1, g.group_id).run(); !r) return r;
        if (w.op == group::group_write::kind::erase) continue;
        put_group->reset().bind(1, g.group_id).bind(2, state_text(g.state));
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

}  // namespace sluice::catalog
