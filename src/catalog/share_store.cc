#include "catalog/share_store.h"

#include <fmt/format.h>

#include "catalog/sqlite_db.h"

namespace sluice::catalog {

using group::share::share_partition;
using group::share::stored_share_partition;

share_store::share_store(std::unique_ptr<detail::db> d) : _db(std::move(d)) {}
share_store::~share_store() = default;

result<std::unique_ptr<share_store>> share_store::open(const std::filesystem::path& path) {
    auto d = detail::db::open(path);
    if (!d) return d.err();
    // As the catalog's own connection: FULL makes a commit survive power loss.
    if (auto r = (*d)->exec("PRAGMA busy_timeout = 5000; PRAGMA synchronous = FULL"); !r)
        return r.err();
    return std::unique_ptr<share_store>(new share_store(std::move(*d)));
}

result<std::vector<stored_share_partition>> share_store::load(const std::string& group) {
    auto rows = _db->prepare(
        "SELECT group_id, topic, partition, start_offset, end_offset, records "
        "FROM share_partitions WHERE ?1 = '' OR group_id = ?1 ORDER BY group_id, topic, "
        "partition");
    if (!rows) return rows.err();
    rows->bind(1, group);
    std::vector<stored_share_partition> out;
    for (;;) {
        auto row = rows->step();
        if (!row) return row.err();
        if (!*row) break;
        stored_share_partition s;
        s.group = rows->column_text(0);
        s.partition = {rows->column_text(1), static_cast<int32_t>(rows->column_int64(2))};
        const int64_t start = rows->column_int64(3);
        const int64_t end = rows->column_int64(4);
        auto window = group::share::parse_window(start, end, rows->column_text(5));
        if (!window)
            return error{errc::corrupt,
                         fmt::format("share group '{}': the stored window of {}-{} does not parse",
                                     s.group, s.partition.first, s.partition.second)};
        s.state = std::move(*window);
        out.push_back(std::move(s));
    }
    return out;
}

result<void> share_store::save(const std::string& group, const group::share::tp& p,
                               const share_partition& s) {
    auto st = _db->prepare(
        "INSERT OR REPLACE INTO share_partitions (group_id, topic, partition, start_offset, "
        "end_offset, records) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    if (!st) return st.err();
    st->bind(1, group).bind(2, p.first).bind(3, int64_t{p.second});
    st->bind(4, s.start()).bind(5, s.end()).bind(6, group::share::format_records(s.records()));
    return st->run();
}

result<void> share_store::erase(const std::string& group,
                                const std::vector<group::share::tp>& parts) {
    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    auto st = _db->prepare(
        "DELETE FROM share_partitions WHERE group_id = ?1 AND topic = ?2 AND partition = ?3");
    if (!st) return st.err();
    for (const auto& p : parts) {
        st->reset();
        st->bind(1, group).bind(2, p.first).bind(3, int64_t{p.second});
        if (auto r = st->run(); !r) return r;
    }
    return txn->commit();
}

}  // namespace sluice::catalog
