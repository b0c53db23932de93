#include "shared/pg_share_store.h"

#include <map>
#include <tuple>

#include <fmt/format.h>

#include "common/clock.h"
#include "group/coordinator.h"
#include "shared/shared_log.h"

namespace sluice::shared {

using group::share::in_flight_record;
using group::share::record_state;
using group::share::share_partition;
using group::share::stored_share_partition;
using group::share::tp;

result<std::unique_ptr<pg_share_store>> pg_share_store::open(const pg_config& config) {
    auto db = pg_database::connect(config);
    if (!db) return db.err();
    return std::make_unique<pg_share_store>(std::move(*db));
}

namespace {

// The coordinator's locks run on the steady clock; the database keeps wall-clock
// deadlines, which every broker reads alike.
struct clocks {
    int64_t steady = group::steady_now_ms();
    int64_t wall = now_ms();
};

using key = std::tuple<std::string, std::string, int32_t>;  // group, topic, partition

// The rows `where` picks (a WHERE clause over group_id, topic_name, partition_id), with
// their acquired records, in key order.
result<std::vector<stored_share_partition>> read_rows(pg_transaction& tx, const std::string& where,
                                                      const std::vector<pg_param>& params,
                                                      bool for_update) {
    auto rows = tx.exec(
        "SELECT group_id, topic_name, partition_id, start_offset, end_offset, records FROM "
        "sluice_share_partitions " +
            where + " ORDER BY group_id, topic_name, partition_id" +
            (for_update ? " FOR UPDATE" : ""),
        params);
    if (!rows) return rows.err();
    std::vector<stored_share_partition> out;
    std::map<key, size_t> index;
    for (size_t r = 0; r < rows->size(); ++r) {
        stored_share_partition s;
        s.group = rows->text(r, 0);
        s.partition = {rows->text(r, 1), static_cast<int32_t>(rows->int64(r, 2))};
        auto window =
            group::share::parse_window(rows->int64(r, 3), rows->int64(r, 4), rows->text(r, 5));
        if (!window)
            return error{errc::corrupt,
                         fmt::format("share group '{}': the stored window of {}-{} does not parse",
                                     s.group, s.partition.first, s.partition.second)};
        s.state = std::move(*window);
        index[{s.group, s.partition.first, s.partition.second}] = out.size();
        out.push_back(std::move(s));
    }
    auto acquired = tx.exec(
        "SELECT group_id, topic_name, partition_id, first_offset, last_offset, member_id, "
        "delivery_count, lock_until_ms FROM sluice_share_acquired " +
            where + " ORDER BY group_id, topic_name, partition_id, first_offset",
        params);
    if (!acquired) return acquired.err();
    const clocks now;
    for (size_t r = 0; r < acquired->size(); ++r) {
        auto it = index.find({acquired->text(r, 0), acquired->text(r, 1),
                              static_cast<int32_t>(acquired->int64(r, 2))});
        if (it == index.end()) continue;
        stored_share_partition& s = out[it->second];
        auto records = s.state.records();
        for (int64_t o = acquired->int64(r, 3); o <= acquired->int64(r, 4); ++o) {
            if (o < s.state.start() || o >= s.state.end()) continue;
            records[o] = in_flight_record{
                record_state::acquired, static_cast<int16_t>(acquired->int64(r, 6)),
                acquired->text(r, 5), acquired->int64(r, 7) - now.wall + now.steady};
        }
        s.state = share_partition(s.state.start(), s.state.end(), std::move(records));
    }
    return out;
}

const char* const by_partition =
    "WHERE group_id = $1 AND topic_name = $2 AND partition_id = CAST($3 AS INTEGER)";

std::vector<pg_param> partition_params(const std::string& group, const tp& p) {
    return {group, p.first, std::to_string(p.second)};
}

result<void> erase_rows(pg_transaction& tx, const std::string& group, const tp& p) {
    for (const char* table : {"sluice_share_acquired", "sluice_share_partitions"})
        if (auto r = tx.exec(fmt::format("DELETE FROM {} {}", table, by_partition),
                             partition_params(group, p));
            !r)
            return r.err();
    return {};
}

// The partition's row (replacing the one there) and one row per run of records acquired
// by one member with one delivery count and one deadline.
result<void> write_rows(pg_transaction& tx, const std::string& group, const tp& p,
                        const share_partition& s) {
    auto row = tx.exec(
        "INSERT INTO sluice_share_partitions (group_id, topic_name, partition_id, "
        "start_offset, end_offset, records) VALUES ($1, $2, CAST($3 AS INTEGER), "
        "CAST($4 AS BIGINT), CAST($5 AS BIGINT), $6) ON CONFLICT (group_id, topic_name, "
        "partition_id) DO UPDATE SET start_offset = EXCLUDED.start_offset, end_offset = "
        "EXCLUDED.end_offset, records = EXCLUDED.records",
        {group, p.first, std::to_string(p.second), std::to_string(s.start()),
         std::to_string(s.end()), group::share::format_records(s.records())});
    if (!row) return row.err();
    if (auto r = tx.exec(fmt::format("DELETE FROM sluice_share_acquired {}", by_partition),
                         partition_params(group, p));
        !r)
        return r.err();
    const clocks now;
    const auto& recs = s.records();
    for (auto it = recs.begin(); it != recs.end();) {
        if (it->second.state != record_state::acquired) {
            ++it;
            continue;
        }
        const in_flight_record& first = it->second;
        const int64_t from = it->first;
        int64_t to = from;
        for (++it;
             it != recs.end() && it->first == to + 1 &&
             it->second.state == record_state::acquired && it->second.member == first.member &&
             it->second.delivery_count == first.delivery_count &&
             it->second.lock_until_ms == first.lock_until_ms;
             ++it)
            to = it->first;
        auto r = tx.exec(
            "INSERT INTO sluice_share_acquired (group_id, topic_name, partition_id, "
            "first_offset, last_offset, member_id, delivery_count, lock_until_ms) VALUES ($1, "
            "$2, CAST($3 AS INTEGER), CAST($4 AS BIGINT), CAST($5 AS BIGINT), $6, "
            "CAST($7 AS SMALLINT), CAST($8 AS BIGINT))",
            {group, p.first, std::to_string(p.second), std::to_string(from), std::to_string(to),
             first.member, std::to_string(first.delivery_count),
             std::to_string(first.lock_until_ms - now.steady + now.wall)});
        if (!r) return r.err();
    }
    return {};
}

}  // namespace

pg_database& pg_share_store::db() {
    pg_database* reader = shared_log::reader_database();
    return reader ? *reader : *_db;
}

result<std::vector<stored_share_partition>> pg_share_store::load(const std::string& group) {
    return db().transact<std::vector<stored_share_partition>>(
        isolation_level::repeatable_read, [&](pg_transaction& tx) {
            return read_rows(tx, "WHERE (CAST($1 AS TEXT) = '' OR group_id = $1)", {group}, false);
        });
}

result<void> pg_share_store::save(const std::string& group, const tp& p, const share_partition& s) {
    return db().transact(isolation_level::serializable,
                         [&](pg_transaction& tx) { return write_rows(tx, group, p, s); });
}

result<void> pg_share_store::erase(const std::string& group, const std::vector<tp>& parts) {
    return db().transact(isolation_level::serializable, [&](pg_transaction& tx) -> result<void> {
        for (const auto& p : parts)
            if (auto r = erase_rows(tx, group, p); !r) return r;
        return {};
    });
}

result<void> pg_share_store::update(const std::string& group, const tp& p, const update_fn& fn) {
    return db().transact(isolation_level::serializable, [&](pg_transaction& tx) -> result<void> {
        auto rows = read_rows(tx, by_partition, partition_params(group, p), true);
        if (!rows) return rows.err();
        std::optional<share_partition> state;
        if (!rows->empty()) state = std::move(rows->front().state);
        if (!fn(state) || !state) return {};
        return write_rows(tx, group, p, *state);
    });
}

}  // namespace sluice::shared
