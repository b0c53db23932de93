#include "catalog/offset_store.h"

#include <fmt/format.h>

#include "catalog/sqlite_db.h"

namespace sluice::catalog {

local_offset_store::local_offset_store(std::unique_ptr<detail::db> d) : _db(std::move(d)) {}
local_offset_store::~local_offset_store() = default;

result<std::unique_ptr<local_offset_store>> local_offset_store::open(
    const std::filesystem::path& path) {
    auto d = detail::db::open(path);
    if (!d) return d.err();
    // The same settings as the catalog's connection: FULL makes a commit survive power
    // loss; the busy timeout covers a topic change holding the write lock.
    if (auto r = (*d)->exec("PRAGMA busy_timeout = 5000; PRAGMA synchronous = FULL"); !r)
        return r.err();
    return std::unique_ptr<local_offset_store>(new local_offset_store(std::move(*d)));
}

result<std::vector<stored_offset>> local_offset_store::load() {
    auto st = _db->prepare(
        "SELECT group_id, topic, partition, offset, leader_epoch, metadata, commit_ms, "
        "expire_ms, metadata IS NULL FROM group_offsets");
    if (!st) return st.err();
    std::vector<stored_offset> out;
    for (;;) {
        auto row = st->step();
        if (!row) return row.err();
        if (!*row) break;
        stored_offset o;
        o.group_id = st->column_text(0);
        o.topic = st->column_text(1);
        o.partition = static_cast<int32_t>(st->column_int64(2));
        o.offset = st->column_int64(3);
        o.leader_epoch = static_cast<int32_t>(st->column_int64(4));
        if (st->column_int64(8) == 0) o.metadata = st->column_text(5);
        o.commit_ms = st->column_int64(6);
        o.expire_ms = st->column_int64(7);
        out.push_back(std::move(o));
    }
    return out;
}

namespace {

result<void> apply_writes(detail::db& db, std::span<const offset_write> writes) {
    if (writes.empty()) return {};
    auto txn = detail::write_txn::begin(db);
    if (!txn) return txn.err();
    auto commit = db.prepare(
        "INSERT OR REPLACE INTO group_offsets (group_id, topic, partition, offset, "
        "leader_epoch, metadata, commit_ms, expire_ms) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 "
        "WHERE EXISTS (SELECT 1 FROM topics WHERE name = ?2)");
    auto erase = db.prepare(
        "DELETE FROM group_offsets WHERE group_id = ?1 AND topic = ?2 AND partition = ?3");
    auto erase_unchanged = db.prepare(
        "DELETE FROM group_offsets WHERE group_id = ?1 AND topic = ?2 AND partition = ?3 "
        "AND commit_ms = ?4");
    auto erase_group = db.prepare("DELETE FROM group_offsets WHERE group_id = ?1");
    for (auto* st : {&commit, &erase, &erase_unchanged, &erase_group})
        if (!*st) return st->err();
    for (const auto& w : writes) {
        const auto& r = w.row;
        result<void> done;
        switch (w.op) {
            case offset_write::kind::commit:
                commit->reset().bind(1, r.group_id).bind(2, r.topic).bind(3, r.partition);
                commit->bind(4, r.offset).bind(5, int64_t{r.leader_epoch});
                if (r.metadata)
                    commit->bind(6, *r.metadata);
                else
                    commit->bind_null(6);
                done = commit->bind(7, r.commit_ms).bind(8, r.expire_ms).run();
                break;
            case offset_write::kind::erase:
                done =
                    erase->reset().bind(1, r.group_id).bind(2, r.topic).bind(3, r.partition).run();
                break;
            case offset_write::kind::erase_if_unchanged:
                done = erase_unchanged->reset()
                           .bind(1, r.group_id)
                           .bind(2, r.topic)
                           .bind(3, r.partition)
                           .bind(4, r.commit_ms)
                           .run();
                break;
            case offset_write::kind::erase_group:
                done = erase_group->reset().bind(1, r.group_id).run();
                break;
        }
        if (!done) return done;
    }
    return txn->commit();
}

}  // namespace

result<fenced_groups> local_offset_store::apply(std::span<const offset_write> writes) {
    if (auto r = apply_writes(*_db, writes); !r) return r.err();
    return fenced_groups{};
}

}  // namespace sluice::catalog
