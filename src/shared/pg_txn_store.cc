#include "shared/pg_txn_store.h"

#include <map>

#include <fmt/format.h>

#include "shared/pg_codec.h"
#include "shared/pg_refresher.h"

namespace sluice::shared {

using txn::txn_metadata;

result<std::unique_ptr<pg_txn_store>> pg_txn_store::open(const pg_config& config,
                                                         std::shared_ptr<group_fence> fence) {
    auto db = pg_database::connect(config);
    if (!db) return db.err();
    return std::make_unique<pg_txn_store>(std::move(*db), std::move(fence));
}

namespace {

// The children of the ids in `out`, in key order (partitions and groups come back sorted).
result<void> load_children(pg_transaction& tx, std::vector<txn_metadata>& out,
                           const std::map<std::string, size_t>& index, const std::string& where,
                           const std::vector<pg_param>& params) {
    auto parts =
        tx.exec("SELECT transactional_id, topic_name, partition_id FROM sluice_txn_partitions " +
                    where + " ORDER BY transactional_id, topic_name, partition_id",
                params);
    if (!parts) return parts.err();
    for (size_t r = 0; r < parts->size(); ++r)
        if (auto it = index.find(parts->text(r, 0)); it != index.end())
            out[it->second].partitions.push_back(
                {parts->text(r, 1), static_cast<int32_t>(parts->int64(r, 2))});
    auto groups = tx.exec("SELECT transactional_id, group_id FROM sluice_txn_groups " + where +
                              " ORDER BY transactional_id, group_id",
                          params);
    if (!groups) return groups.err();
    for (size_t r = 0; r < groups->size(); ++r)
        if (auto it = index.find(groups->text(r, 0)); it != index.end())
            out[it->second].groups.push_back(groups->text(r, 1));
    auto offsets = tx.exec(
        "SELECT transactional_id, group_id, topic_name, partition_id, committed_offset, "
        "leader_epoch, metadata, commit_ms FROM sluice_txn_offsets " +
            where + " ORDER BY transactional_id, group_id, topic_name, partition_id",
        params);
    if (!offsets) return offsets.err();
    for (size_t r = 0; r < offsets->size(); ++r) {
        auto it = index.find(offsets->text(r, 0));
        if (it == index.end()) continue;
        txn::pending_offset o;
        o.group_id = offsets->text(r, 1);
        o.tp = {offsets->text(r, 2), static_cast<int32_t>(offsets->int64(r, 3))};
        o.offset = offsets->int64(r, 4);
        o.leader_epoch = static_cast<int32_t>(offsets->int64(r, 5));
        o.metadata = optional_text(*offsets, r, 6);
        o.commit_ms = offsets->int64(r, 7);
        out[it->second].offsets.push_back(std::move(o));
    }
    return {};
}

// The children of the id's record (its row stays).
result<void> erase_children(pg_transaction& tx, const std::string& id) {
    for (const char* sql : {"DELETE FROM sluice_txn_offsets WHERE transactional_id = $1",
                            "DELETE FROM sluice_txn_groups WHERE transactional_id = $1",
                            "DELETE FROM sluice_txn_partitions WHERE transactional_id = $1"})
        if (auto r = tx.exec(sql, {id}); !r) return r.err();
    return {};
}

result<bool> put_metadata(pg_transaction& tx, const txn_metadata& t) {
    std::vector<pg_param> params{t.transactional_id,
                                 std::to_string(t.producer_id),
                                 std::to_string(t.producer_epoch),
                                 std::to_string(t.last_producer_id),
                                 std::to_string(t.last_producer_epoch),
                                 std::to_string(t.next_producer_id),
                                 std::to_string(t.timeout_ms),
                                 std::string(txn::state_name(t.state)),
                                 t.tv2 ? "1" : "0",
                                 std::to_string(t.start_ms),
                                 std::to_string(t.update_ms),
                                 std::to_string(t.version)};
    auto meta =
        t.version == 0
            ? tx.exec(
                  "INSERT INTO sluice_txn_metadata (transactional_id, producer_id, "
                  "producer_epoch, last_producer_id, last_producer_epoch, next_producer_id, "
                  "timeout_ms, state, tv2, start_ms, update_ms, version) VALUES ($1, "
                  "CAST($2 AS BIGINT), CAST($3 AS SMALLINT), CAST($4 AS BIGINT), CAST($5 AS "
                  "SMALLINT), CAST($6 AS BIGINT), CAST($7 AS INTEGER), $8, CAST($9 AS "
                  "INTEGER), CAST($10 AS BIGINT), CAST($11 AS BIGINT), CAST($12 AS BIGINT) + "
                  "1) ON CONFLICT (transactional_id) DO NOTHING",
                  params)
            : tx.exec(
                  "UPDATE sluice_txn_metadata SET producer_id = CAST($2 AS BIGINT), "
                  "producer_epoch = CAST($3 AS SMALLINT), last_producer_id = CAST($4 AS "
                  "BIGINT), last_producer_epoch = CAST($5 AS SMALLINT), next_producer_id = "
                  "CAST($6 AS BIGINT), timeout_ms = CAST($7 AS INTEGER), state = $8, tv2 = "
                  "CAST($9 AS INTEGER), start_ms = CAST($10 AS BIGINT), update_ms = CAST($11 "
                  "AS BIGINT), version = version + 1 WHERE transactional_id = $1 AND version = "
                  "CAST($12 AS BIGINT)",
                  params);
    if (!meta) return meta.err();
    return meta->affected == 1;
}

result<void> put_children(pg_transaction& tx, const txn_metadata& t) {
    for (const auto& tp : t.partitions) {
        auto r = tx.exec(
            "INSERT INTO sluice_txn_partitions (transactional_id, topic_name, partition_id) "
            "VALUES ($1, $2, CAST($3 AS INTEGER))",
            {t.transactional_id, tp.topic, std::to_string(tp.partition)});
        if (!r) return r.err();
    }
    for (const auto& g : t.groups) {
        auto r =
            tx.exec("INSERT INTO sluice_txn_groups (transactional_id, group_id) VALUES ($1, $2)",
                    {t.transactional_id, g});
        if (!r) return r.err();
    }
    for (const auto& o : t.offsets) {
        auto r = tx.exec(
            "INSERT INTO sluice_txn_offsets (transactional_id, group_id, topic_name, "
            "partition_id, committed_offset, leader_epoch, metadata, commit_ms) VALUES ($1, $2, "
            "$3, CAST($4 AS INTEGER), CAST($5 AS BIGINT), CAST($6 AS INTEGER), $7, "
            "CAST($8 AS BIGINT))",
            {t.transactional_id, o.group_id, o.tp.topic, std::to_string(o.tp.partition),
             std::to_string(o.offset), std::to_string(o.leader_epoch), text_or_null(o.metadata),
             std::to_string(o.commit_ms)});
        if (!r) return r.err();
    }
    return {};
}

// Before the write of t's CompleteCommit: the pending offsets of the record stored as
// PrepareCommit at t.version become the groups' committed offsets (those of topics that
// still exist), and the brokers coordinating the groups are told. Nothing when the record
// moved on (the write that follows then changes nothing either) or was not prepared.
result<void> commit_pending_offsets(pg_transaction& tx, const txn_metadata& t) {
    if (t.state != txn::txn_state::complete_commit || t.version == 0) return {};
    auto moved = tx.exec(
        "INSERT INTO sluice_group_offsets (group_id, topic_name, partition_id, "
        "committed_offset, leader_epoch, metadata, commit_ms, expire_ms) "
        "SELECT o.group_id, o.topic_name, o.partition_id, o.committed_offset, o.leader_epoch, "
        "o.metadata, o.commit_ms, CAST(-1 AS BIGINT) FROM sluice_txn_offsets o "
        "JOIN sluice_txn_metadata m ON m.transactional_id = o.transactional_id "
        "WHERE o.transactional_id = $1 AND m.version = CAST($2 AS BIGINT) AND m.state = $3 "
        "AND EXISTS (SELECT 1 FROM sluice_topics x WHERE x.topic_name = o.topic_name) "
        "ON CONFLICT (group_id, topic_name, partition_id) DO UPDATE SET "
        "committed_offset = EXCLUDED.committed_offset, leader_epoch = EXCLUDED.leader_epoch, "
        "metadata = EXCLUDED.metadata, commit_ms = EXCLUDED.commit_ms, "
        "expire_ms = EXCLUDED.expire_ms",
        {t.transactional_id, std::to_string(t.version),
         std::string(txn::state_name(txn::txn_state::prepare_commit))});
    if (!moved) return moved.err();
    if (moved->affected == 0) return {};
    auto v = bump_change_version(tx, "txn_offsets");
    if (!v) return v.err();
    return {};
}

// The whole record over the version read (state_store::put).
result<bool> put_record(pg_transaction& tx, const txn_metadata& t) {
    if (auto r = commit_pending_offsets(tx, t); !r) return r.err();
    auto stored = put_metadata(tx, t);
    if (!stored || !*stored) return stored;
    if (auto r = erase_children(tx, t.transactional_id); !r) return r.err();
    if (auto r = put_children(tx, t); !r) return r.err();
    return true;
}

// Every id's record (`where` empty) or those `where` (a WHERE clause over
// transactional_id, with its params) picks, from one snapshot.
result<std::vector<txn_metadata>> load_records(pg_database& db, const std::string& where,
                                               const std::vector<pg_param>& params) {
    return db.transact<std::vector<txn_metadata>>(
        isolation_level::repeatable_read,
        [&](pg_transaction& tx) -> result<std::vector<txn_metadata>> {
            auto rows = tx.exec(
                "SELECT transactional_id, producer_id, producer_epoch, last_producer_id, "
                "last_producer_epoch, next_producer_id, timeout_ms, state, tv2, start_ms, "
                "update_ms, version FROM sluice_txn_metadata " +
                    where + " ORDER BY transactional_id",
                params);
            if (!rows) return rows.err();
            std::vector<txn_metadata> out;
            std::map<std::string, size_t> index;
            for (size_t r = 0; r < rows->size(); ++r) {
                txn_metadata t;
                t.transactional_id = rows->text(r, 0);
                t.producer_id = rows->int64(r, 1);
                t.producer_epoch = static_cast<int16_t>(rows->int64(r, 2));
                t.last_producer_id = rows->int64(r, 3);
                t.last_producer_epoch = static_cast<int16_t>(rows->int64(r, 4));
                t.next_producer_id = rows->int64(r, 5);
                t.timeout_ms = static_cast<int32_t>(rows->int64(r, 6));
                auto state = txn::parse_state(rows->text(r, 7));
                if (!state)
                    return error{errc::corrupt,
                                 fmt::format("transactional id '{}' has an unknown stored "
                                             "state '{}'",
                                             t.transactional_id, rows->text(r, 7))};
                t.state = *state;
                t.tv2 = rows->int64(r, 8) != 0;
                t.start_ms = rows->int64(r, 9);
                t.update_ms = rows->int64(r, 10);
                t.version = rows->int64(r, 11);
                index[t.transactional_id] = out.size();
                out.push_back(std::move(t));
            }
            if (auto c = load_children(tx, out, index, where, params); !c) return c.err();
            return out;
        });
}

}  // namespace

result<std::vector<txn_metadata>> pg_txn_store::load() {
    return load_records(*_db, "", {});
}

result<std::optional<txn_metadata>> pg_txn_store::load_one(const std::string& transactional_id) {
    auto r = load_records(*_db, "WHERE transactional_id = $1", {transactional_id});
    if (!r) return r.err();
    if (r->empty()) return std::optional<txn_metadata>{};
    return std::optional(std::move(r->front()));
}

result<bool> pg_txn_store::put(const txn_metadata& t) {
    return _db->transact<bool>(isolation_level::serializable,
                               [&](pg_transaction& tx) { return put_record(tx, t); });
}

result<bool> pg_txn_store::put_by_group(const txn_metadata& t, const std::string& group_id) {
    bool stored = false;
    auto fenced = fenced_write(*_db, _fence.get(), {group_id},
                               [&](pg_transaction& tx, const std::set<std::string>& refused) {
                                   stored = false;
                                   if (refused.count(group_id)) return result<void>{};
                                   auto r = put_record(tx, t);
                                   if (!r) return result<void>(r.err());
                                   stored = *r;
                                   return result<void>{};
                               });
    if (!fenced) return fenced.err();
    if (!fenced->empty())
        return error{errc::fenced,
                     fmt::format("group '{}': another broker holds its coordinator epoch", group_id)};
    return stored;
}

result<bool> pg_txn_store::erase(const std::string& transactional_id, int64_t version) {
    return _db->transact<
        bool>(isolation_level::serializable, [&](pg_transaction& tx) -> result<bool> {
        auto row = tx.exec(
            "DELETE FROM sluice_txn_metadata WHERE transactional_id = $1 AND version = CAST($2 AS "
            "BIGINT)",
            {transactional_id, std::to_string(version)});
        if (!row) return row.err();
        if (row->affected != 1) return false;
        if (auto r = erase_children(tx, transactional_id); !r) return r.err();
        return true;
    });
}

}  // namespace sluice::shared
