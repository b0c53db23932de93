#include "catalog/txn_store.h"

#include <fmt/format.h>

#include <map>

#include "catalog/sqlite_db.h"

namespace sluice::catalog {

txn_store::txn_store(std::unique_ptr<detail::db> d) : _db(std::move(d)) {}
txn_store::~txn_store() = default;

result<std::unique_ptr<txn_store>> txn_store::open(const std::filesystem::path& path) {
    auto d = detail::db::open(path);
    if (!d) return d.err();
    // As the catalog's own connection: FULL makes a commit survive power loss.
    if (auto r = (*d)->exec("PRAGMA busy_timeout = 5000; PRAGMA synchronous = FULL"); !r)
        return r.err();
    return std::unique_ptr<txn_store>(new txn_store(std::move(*d)));
}

result<std::vector<txn::txn_metadata>> txn_store::load() {
    auto rows = _db->prepare(
        "SELECT transactional_id, producer_id, producer_epoch, last_producer_id, "
        "last_producer_epoch, next_producer_id, timeout_ms, state, tv2, start_ms, update_ms "
        "FROM txn_metadata ORDER BY transactional_id");
    if (!rows) return rows.err();
    std::vector<txn::txn_metadata> out;
    std::map<std::string, size_t> index;
    for (;;) {
        auto row = rows->step();
        if (!row) return row.err();
        if (!*row) break;
        txn::txn_metadata t;
        t.transactional_id = rows->column_text(0);
        t.producer_id = rows->column_int64(1);
        t.producer_epoch = static_cast<int16_t>(rows->column_int64(2));
        t.last_producer_id = rows->column_int64(3);
        t.last_producer_epoch = static_cast<int16_t>(rows->column_int64(4));
        t.next_producer_id = rows->column_int64(5);
        t.timeout_ms = static_cast<int32_t>(rows->column_int64(6));
        auto state = txn::parse_state(rows->column_text(7));
        if (!state)
            return error{errc::corrupt,
                         fmt::format("transactional id '{}' has an unknown stored state '{}'",
                                     t.transactional_id, rows->column_text(7))};
        t.state = *state;
        t.tv2 = rows->column_int64(8) != 0;
        t.start_ms = rows->column_int64(9);
        t.update_ms = rows->column_int64(10);
        index[t.transactional_id] = out.size();
        out.push_back(std::move(t));
    }
    // Children in key order, so that partitions and groups come back sorted.
    auto parts = _db->prepare(
        "SELECT transactional_id, topic, partition FROM txn_partitions "
        "ORDER BY transactional_id, topic, partition");
    if (!parts) return parts.err();
    for (;;) {
        auto row = parts->step();
        if (!row) return row.err();
        if (!*row) break;
        if (auto it = index.find(parts->column_text(0)); it != index.end())
            out[it->second].partitions.push_back(
                {parts->column_text(1), static_cast<int32_t>(parts->column_int64(2))});
    }
    auto groups = _db->prepare(
        "SELECT transactional_id, group_id FROM txn_groups ORDER BY transactional_id, group_id");
    if (!groups) return groups.err();
    for (;;) {
        auto row = groups->step();
        if (!row) return row.err();
        if (!*row) break;
        if (auto it = index.find(groups->column_text(0)); it != index.end())
            out[it->second].groups.push_back(groups->column_text(1));
    }
    auto offsets = _db->prepare(
        "SELECT transactional_id, group_id, topic, partition, offset, leader_epoch, metadata, "
        "metadata IS NULL, commit_ms FROM txn_offsets "
        "ORDER BY transactional_id, group_id, topic, partition");
    if (!offsets) return offsets.err();
    for (;;) {
        auto row = offsets->step();
        if (!row) return row.err();
        if (!*row) break;
        auto it = index.find(offsets->column_text(0));
        if (it == index.end()) continue;
        txn::pending_offset o;
        o.group_id = offsets->column_text(1);
        o.tp = {offsets->column_text(2), static_cast<int32_t>(offsets->column_int64(3))};
        o.offset = offsets->column_int64(4);
        o.leader_epoch = static_cast<int32_t>(offsets->column_int64(5));
        if (offsets->column_int64(7) == 0) o.metadata = offsets->column_text(6);
        o.commit_ms = offsets->column_int64(8);
        out[it->second].offsets.push_back(std::move(o));
    }
    return out;
}

result<void> txn_store::erase_rows(const std::string& id) {
    for (const char* table : {"txn_offsets", "txn_groups", "txn_partitions", "txn_metadata"}) {
        auto st = _db->prepare(fmt::format("DELETE FROM {} WHERE transactional_id = ?1", table));
        if (!st) return st.err();
        if (auto r = st->bind(1, id).run(); !r) return r;
    }
    return {};
}

result<bool> txn_store::put(const txn::txn_metadata& t) {
    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    if (auto r = erase_rows(t.transactional_id); !r) return r.err();
    auto meta = _db->prepare(
        "INSERT INTO txn_metadata (transactional_id, producer_id, producer_epoch, "
        "last_producer_id, last_producer_epoch, next_producer_id, timeout_ms, state, tv2, "
        "start_ms, update_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    if (!meta) return meta.err();
    meta->bind(1, t.transactional_id).bind(2, t.producer_id).bind(3, int64_t{t.producer_epoch});
    meta->bind(4, t.last_producer_id).bind(5, int64_t{t.last_producer_epoch});
    meta->bind(6, t.next_producer_id).bind(7, int64_t{t.timeout_ms});
    meta->bind(8, txn::state_name(t.state)).bind(9, int64_t{t.tv2 ? 1 : 0});
    meta->bind(10, t.start_ms).bind(11, t.update_ms);
    if (auto r = meta->run(); !r) return r.err();
    auto part = _db->prepare(
        "INSERT INTO txn_partitions (transactional_id, topic, partition) VALUES (?1, ?2, ?3)");
    if (!part) return part.err();
    for (const auto& tp : t.partitions)
        if (auto r = part->reset()
                         .bind(1, t.transactional_id)
                         .bind(2, tp.topic)
                         .bind(3, int64_t{tp.partition})
                         .run();
            !r)
            return r.err();
    auto group =
        _db->prepare("INSERT INTO txn_groups (transactional_id, group_id) VALUES (?1, ?2)");
    if (!group) return group.err();
    for (const auto& g : t.groups)
        if (auto r = group->reset().bind(1, t.transactional_id).bind(2, g).run(); !r)
            return r.err();
    auto off = _db->prepare(
        "INSERT INTO txn_offsets (transactional_id, group_id, topic, partition, offset, "
        "leader_epoch, metadata, commit_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    if (!off) return off.err();
    for (const auto& o : t.offsets) {
        off->reset().bind(1, t.transactional_id).bind(2, o.group_id).bind(3, o.tp.topic);
        off->bind(4, int64_t{o.tp.partition}).bind(5, o.offset).bind(6, int64_t{o.leader_epoch});
        if (o.metadata)
            off->bind(7, *o.metadata);
        else
            off->bind_null(7);
        off->bind(8, o.commit_ms);
        if (auto r = off->run(); !r) return r.err();
    }
    if (auto r = txn->commit(); !r) return r.err();
    return true;
}

result<bool> txn_store::erase(const std::string& transactional_id, int64_t /*version*/) {
    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    if (auto r = erase_rows(transactional_id); !r) return r.err();
    if (auto r = txn->commit(); !r) return r.err();
    return true;
}

}  // namespace sluice::catalog
