#include "shared/group_fence.h"

#include <fmt/format.h>

namespace sluice::shared {

std::optional<int64_t> group_fence::held(const std::string& group_id) const {
    std::lock_guard lock(_mu);
    auto it = _held.find(group_id);
    if (it == _held.end()) return std::nullopt;
    return it->second;
}

void group_fence::drop(const std::string& group_id) {
    std::lock_guard lock(_mu);
    _held.erase(group_id);
}

namespace {

struct epoch_row {
    int32_t broker_id = -1;
    int64_t epoch = 0;
};

// The epoch rows of `groups` (every group when empty), locked FOR SHARE if asked.
result<std::map<std::string, epoch_row>> read_epochs(pg_transaction& tx,
                                                   const std::set<std::string>& groups,
                                                   bool lock) {
    std::string sql = "SELECT group_id, broker_id, epoch FROM sluice_group_coordinators";
    std::vector<pg_param> params;
    if (!groups.empty()) {
        sql += " WHERE group_id IN (";
        for (const auto& g : groups) {
            params.emplace_back(g);
            sql += fmt::format("{}${}", params.size() == 1 ? "" : ", ", params.size());
        }
        sql += ")";
    }
    if (lock) sql += " FOR SHARE";
    auto rows = tx.exec(sql, params);
    if (!rows) return rows.err();
    std::map<std::string, epoch_row> out;
    for (size_t r = 0; r < rows->size(); ++r)
        out[rows->text(r, 0)] = {static_cast<int32_t>(rows->int64(r, 1)), rows->int64(r, 2)};
    return out;
}

// Takes a new group at epoch 1. A broker taking it at the same moment makes one of the
// two fail: a unique violation (errc::already_exists) under READ COMMITTED, a
// serialization failure (run again, then finding the row) under SERIALIZABLE.
result<void> insert_row(pg_transaction& tx, const std::string& group_id, int32_t broker_id) {
    auto r = tx.exec(
        "INSERT INTO sluice_group_coordinators (group_id, broker_id, epoch) "
        "SELECT CAST($1 AS TEXT), CAST($2 AS INTEGER), CAST(1 AS BIGINT) WHERE NOT EXISTS "
        "(SELECT 1 FROM sluice_group_coordinators WHERE group_id = CAST($1 AS TEXT))",
        {group_id, std::to_string(broker_id)});
    if (!r) return r.err();
    return {};
}

}  // namespace

result<std::set<std::string>> group_fence::take(
    const std::function<bool(const std::string&)>& placed_here) {
    if (!_take_db) {
        auto db = pg_database::connect(_config);
        if (!db) return db.err();
        _take_db = std::move(*db);
    }
    std::map<std::string, int64_t> fresh;
    auto body = [&](pg_transaction& tx) -> result<void> {
        fresh.clear();
        auto ids = tx.exec(
            "SELECT group_id FROM sluice_groups UNION SELECT group_id FROM "
            "sluice_consumer_groups UNION SELECT group_id FROM sluice_group_offsets UNION "
            "SELECT group_id FROM sluice_group_coordinators");
        if (!ids) return ids.err();
        auto rows = read_epochs(tx, {}, false);
        if (!rows) return rows.err();
        for (size_t r = 0; r < ids->size(); ++r) {
            std::string g = ids->text(r, 0);
            if (!placed_here(g)) continue;
            auto row = rows->find(g);
            if (row == rows->end()) {
                if (auto ins = insert_row(tx, g, _broker_id); !ins) return ins;
                fresh[g] = 1;
                continue;
            }
            if (row->second.broker_id == _broker_id && held(g) == row->second.epoch) continue;
            // Only over the epoch read: a broker that took it meanwhile keeps it (READ
            // COMMITTED re-reads the row once its transaction ends, and finds it moved).
            auto up = tx.exec(
                "UPDATE sluice_group_coordinators SET broker_id = CAST($2 AS INTEGER), "
                "epoch = epoch + 1 WHERE group_id = $1 AND epoch = CAST($3 AS BIGINT)",
                {g, std::to_string(_broker_id), std::to_string(row->second.epoch)});
            if (!up) return up.err();
            if (up->affected == 1) fresh[g] = row->second.epoch + 1;
        }
        return {};
    };
    // Two brokers inserting one new group's row: the loser finds the row on its next try.
    for (int attempt = 0;; ++attempt) {
        auto r = _take_db->transact(isolation_level::read_committed, body);
        if (r) break;
        if (r.code() != errc::already_exists || attempt >= 3) return r.err();
    }
    std::set<std::string> taken;
    std::lock_guard lock(_mu);
    for (const auto& [g, epoch] : fresh) {
        _held[g] = epoch;
        taken.insert(g);
    }
    return taken;
}

result<group_fence::check> group_fence::verify(pg_transaction& tx,
                                               const std::set<std::string>& groups) const {
    check c;
    if (groups.empty()) return c;
    auto rows = read_epochs(tx, groups, true);
    if (!rows) return rows.err();
    for (const auto& g : groups) {
        auto mine = held(g);
        auto row = rows->find(g);
        if (row == rows->end()) {
            if (mine) {
                // Held, yet no row: the catalog was reset under this broker.
                c.fenced.insert(g);
                c.seen[g] = *mine;
                continue;
            }
            if (auto ins = insert_row(tx, g, _broker_id); !ins) return ins.err();
            c.claimed[g] = 1;
            continue;
        }
        if (row->second.broker_id == _broker_id && mine == row->second.epoch) continue;
        c.fenced.insert(g);
        if (mine) c.seen[g] = *mine;
    }
    return c;
}

void group_fence::settle(const check& c) {
    std::lock_guard lock(_mu);
    for (const auto& [g, epoch] : c.claimed) _held[g] = epoch;
    // A group taken again meanwhile (the cluster poll) keeps its new epoch.
    for (const auto& g : c.fenced) {
        auto seen = c.seen.find(g);
        auto it = _held.find(g);
        if (it != _held.end() && seen != c.seen.end() && it->second == seen->second)
            _held.erase(it);
    }
}

result<std::set<std::string>> fenced_write(
    pg_database& db, group_fence* fence, const std::set<std::string>& groups,
    const std::function<result<void>(pg_transaction&, const std::set<std::string>&)>& body) {
    group_fence::check c;
    auto r = db.transact(isolation_level::serializable, [&](pg_transaction& tx) -> result<void> {
        c = {};
        if (fence) {
            auto v = fence->verify(tx, groups);
            if (!v) return v.err();
            c = std::move(*v);
        }
        return body(tx, c.fenced);
    });
    if (!r) return r.err();
    if (fence) fence->settle(c);
    return c.fenced;
}

}  // namespace sluice::shared
