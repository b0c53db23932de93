#include "shared/batch_index.h"

#include <map>
#include <utility>

#include <fmt/format.h>

namespace sluice::shared {

using partition_key = std::pair<std::string, int32_t>;

result<std::vector<int64_t>> commit_object(pg_database& db, const object_commit& commit) {
    if (commit.batches.empty())
        return error{errc::invalid_argument, "an object commit with no batches"};
    std::map<partition_key, int64_t> next;  // ordered: the lock order
    for (const auto& b : commit.batches) next.emplace(partition_key{b.topic_id, b.partition}, 0);
    return db.transact<std::vector<int64_t>>(
        isolation_level::read_committed, [&](pg_transaction& tx) -> result<std::vector<int64_t>> {
            std::vector<pg_param> params;
            std::string rows;
            for (const auto& [key, _] : next) {
                rows += fmt::format("{}(${}, CAST(${} AS INTEGER))", rows.empty() ? "" : ", ",
                                    params.size() + 1, params.size() + 2);
                params.emplace_back(key.first);
                params.emplace_back(std::to_string(key.second));
            }
            auto locked = tx.exec(
                fmt::format("SELECT topic_id, partition_id, high_watermark FROM sluice_partitions "
                            "WHERE (topic_id, partition_id) IN ({}) "
                            "ORDER BY topic_id, partition_id FOR UPDATE",
                            rows),
                params);
            if (!locked) return locked.err();
            if (locked->size() != next.size()) {
                return error{
                    errc::not_found,
                    fmt::format("{} of the {} partitions of object {} do not exist",
                                next.size() - locked->size(), next.size(), commit.object_key)};
            }
            for (size_t r = 0; r < locked->size(); ++r) {
                next[{locked->text(r, 0), static_cast<int32_t>(locked->int64(r, 1))}] =
                    locked->int64(r, 2);
            }
            auto obj = tx.exec(
                "INSERT INTO sluice_objects (object_key, size_bytes, created_by, created_at, "
                "state, state_changed_at) "
                "VALUES ($1, $2, $3, CURRENT_TIMESTAMP, 'live', CURRENT_TIMESTAMP)",
                {commit.object_key, std::to_string(commit.size), std::to_string(commit.broker_id)});
            if (!obj) return obj.err();
            std::vector<int64_t> bases;
            std::vector<pg_param> bp;
            std::string values;
            for (const auto& b : commit.batches) {
                int64_t& hw = next[{b.topic_id, b.partition}];
                bases.push_back(hw);
                size_t n = bp.size();
                values += fmt::format("{}(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                                      values.empty() ? "" : ", ", n + 1, n + 2, n + 3, n + 4, n + 5,
                                      n + 6, n + 7, n + 8, n + 9);
                for (auto v :
                     {b.topic_id, std::to_string(b.partition), std::to_string(hw),
                      std::to_string(hw + b.record_count - 1), commit.object_key,
                      std::to_string(b.byte_position), std::to_string(b.byte_size),
                      std::to_string(b.max_timestamp_ms), std::to_string(b.record_count)}) {
                    bp.emplace_back(std::move(v));
                }
                hw += b.record_count;
            }
            auto ins = tx.exec(
                "INSERT INTO sluice_batches (topic_id, partition_id, base_offset, last_offset, "
                "object_key, byte_position, byte_size, max_timestamp_ms, record_count) VALUES " +
                    values,
                bp);
            if (!ins) return ins.err();
            std::vector<pg_param> up;
            std::string hws;
            for (const auto& [key, hw] : next) {
                size_t n = up.size();
                hws += fmt::format("{}(${}, CAST(${} AS INTEGER), CAST(${} AS BIGINT))",
                                   hws.empty() ? "" : ", ", n + 1, n + 2, n + 3);
                up.emplace_back(key.first);
                up.emplace_back(std::to_string(key.second));
                up.emplace_back(std::to_string(hw));
            }
            auto moved =
                tx.exec("UPDATE sluice_partitions SET high_watermark = v.hw FROM (VALUES " + hws +
                            ") AS v (topic_id, partition_id, hw) "
                            "WHERE sluice_partitions.topic_id = v.topic_id "
                            "AND sluice_partitions.partition_id = v.partition_id",
                        up);
            if (!moved) return moved.err();
            return bases;
        });
}

result<void> create_topic(pg_database& db, const std::string& topic_id, const std::string& name,
                          int32_t partitions) {
    return db.transact(isolation_level::read_committed, [&](pg_transaction& tx) -> result<void> {
        auto t = tx.exec(
            "INSERT INTO sluice_topics (topic_id, topic_name, partition_count, created_at, state) "
            "VALUES ($1, $2, $3, CURRENT_TIMESTAMP, 'live')",
            {topic_id, name, std::to_string(partitions)});
        if (!t) return t.err();
        for (int32_t p = 0; p < partitions; ++p) {
            auto r = tx.exec(
                "INSERT INTO sluice_partitions (topic_id, partition_id, log_start_offset, "
                "high_watermark, leader_epoch) VALUES ($1, $2, 0, 0, 0)",
                {topic_id, std::to_string(p)});
            if (!r) return r.err();
        }
        return {};
    });
}

}  // namespace sluice::shared
