#include "shared/pg_offset_store.h"

#include "shared/pg_codec.h"

namespace sluice::shared {

using catalog::offset_write;
using catalog::stored_offset;

result<std::unique_ptr<pg_offset_store>> pg_offset_store::open(
    const pg_config& config, std::shared_ptr<group_fence> fence) {
    auto db = pg_database::connect(config);
    if (!db) return db.err();
    return std::make_unique<pg_offset_store>(std::move(*db), std::move(fence));
}

result<std::vector<stored_offset>> pg_offset_store::load() {
    auto rows = _db->exec(
        "SELECT group_id, topic_name, partition_id, committed_offset, leader_epoch, metadata, "
        "commit_ms, expire_ms FROM sluice_group_offsets "
        "ORDER BY group_id, topic_name, partition_id");
    if (!rows) return rows.err();
    std::vector<stored_offset> out;
    out.reserve(rows->size());
    for (size_t r = 0; r < rows->size(); ++r) {
        stored_offset o;
        o.group_id = rows->text(r, 0);
        o.topic = rows->text(r, 1);
        o.partition = static_cast<int32_t>(rows->int64(r, 2));
        o.offset = rows->int64(r, 3);
        o.leader_epoch = static_cast<int32_t>(rows->int64(r, 4));
        o.metadata = optional_text(*rows, r, 5);
        o.commit_ms = rows->int64(r, 6);
        o.expire_ms = rows->int64(r, 7);
        out.push_back(std::move(o));
    }
    return out;
}

namespace {

result<void> apply_offset_write(pg_transaction& tx, const offset_write& w) {
    const stored_offset& r = w.row;
    const std::string part = std::to_string(r.partition);
    switch (w.op) {
        case offset_write::kind::commit: {
            auto del = tx.exec(
                "DELETE FROM sluice_group_offsets WHERE group_id = $1 AND topic_name = $2 AND "
                "partition_id = CAST($3 AS INTEGER)",
                {r.group_id, r.topic, part});
            if (!del) return del.err();
            auto ins = tx.exec(
                "INSERT INTO sluice_group_offsets (group_id, topic_name, partition_id, "
                "committed_offset, leader_epoch, metadata, commit_ms, expire_ms) "
                "SELECT CAST($1 AS TEXT), CAST($2 AS VARCHAR(249)), CAST($3 AS INTEGER), CAST($4 "
                "AS BIGINT), CAST($5 AS INTEGER), "
                "CAST($6 AS TEXT), CAST($7 AS BIGINT), CAST($8 AS BIGINT) "
                "WHERE EXISTS (SELECT 1 FROM sluice_topics WHERE topic_name = CAST($2 AS "
                "VARCHAR(249)))",
                {r.group_id, r.topic, part, std::to_string(r.offset),
                 std::to_string(r.leader_epoch), text_or_null(r.metadata),
                 std::to_string(r.commit_ms), std::to_string(r.expire_ms)});
            if (!ins) return ins.err();
            return {};
        }
        case offset_write::kind::erase: {
            auto del = tx.exec(
                "DELETE FROM sluice_group_offsets WHERE group_id = $1 AND topic_name = $2 AND "
                "partition_id = CAST($3 AS INTEGER)",
                {r.group_id, r.topic, part});
            if (!del) return del.err();
            return {};
        }
        case offset_write::kind::erase_if_unchanged: {
            auto del = tx.exec(
                "DELETE FROM sluice_group_offsets WHERE group_id = $1 AND topic_name = $2 AND "
                "partition_id = CAST($3 AS INTEGER) AND commit_ms = CAST($4 AS BIGINT)",
                {r.group_id, r.topic, part, std::to_string(r.commit_ms)});
            if (!del) return del.err();
            return {};
        }
        case offset_write::kind::erase_group: {
            auto del =
                tx.exec("DELETE FROM sluice_group_offsets WHERE group_id = $1", {r.group_id});
            if (!del) return del.err();
            return {};
        }
    }
    return {};
}

}  // namespace

result<catalog::fenced_groups> pg_offset_store::apply(std::span<const offset_write> writes) {
    return fenced_apply(
        *_db, _fence.get(), writes,
        [](const offset_write& w) { return w.by_coordinator ? &w.row.group_id : nullptr; },
        apply_offset_write);
}

}  // namespace sluice::shared
