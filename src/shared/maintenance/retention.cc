// Retention (retention.ms, retention.bytes) and DeleteRecords: moving a partition's log
// start and deleting the batch rows below it (maintenance.h).

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "catalog/topic_config.h"
#include "shared/maintenance/jobs.h"

namespace sluice::shared::maintenance {

namespace {

std::vector<pg_param> partition_params(const std::string& topic_id, int32_t partition) {
    return {topic_id, std::to_string(partition)};
}

struct trimmed {
    int64_t log_start = 0;
    uint64_t batches_deleted = 0;
    uint64_t objects_marked = 0;
    uint64_t aborted_pruned = 0;
    std::optional<int64_t> oldest_timestamp;  // the first batch left's largest timestamp
};

// One statement over the partition's rows with the log start: $1 the topic id, $2 the
// partition, $3 the log start. Returns the rows it affected.
result<uint64_t> exec_at_log_start(pg_transaction& tx, const std::string& topic_id,
                                   int32_t partition, int64_t log_start, const char* sql) {
    auto params = partition_params(topic_id, partition);
    params.emplace_back(std::to_string(log_start));
    auto done = tx.exec(sql, params);
    if (!done) return done.err();
    return static_cast<uint64_t>(done->affected);
}

// The aborted transactions whose marker lies below the log start: a fetch starts at the
// log start or later, and a transaction's records all come before its marker, so no
// read_committed fetch needs them any more (Kafka drops them with their segments).
constexpr const char* prune_aborted_sql =
    "DELETE FROM sluice_txn_aborted WHERE topic_id = $1 AND partition_id = CAST($2 AS INTEGER) "
    "AND last_offset < CAST($3 AS BIGINT)";

// The idempotent producers whose last batch lies wholly below the log start (or that
// wrote only markers here), without a transaction open in the partition, are forgotten,
// as single-node mode's log::producer_state::evict_below and Kafka forget them: the next
// batch of such a producer is one of an unknown producer, taken at any sequence, and
// DescribeProducers no longer lists it. Their sluice_producer_batches rows go with them.
constexpr const char* evict_producers_sql =
    "WITH gone AS (DELETE FROM sluice_producer_state s WHERE s.topic_id = $1 AND "
    "s.partition_id = CAST($2 AS INTEGER) AND NOT EXISTS (SELECT 1 FROM "
    "sluice_producer_batches b WHERE b.topic_id = s.topic_id AND b.partition_id = "
    "s.partition_id AND b.producer_id = s.producer_id AND b.last_offset >= CAST($3 AS BIGINT)) "
    "AND NOT EXISTS (SELECT 1 FROM sluice_txn_open o WHERE o.topic_id = s.topic_id AND "
    "o.partition_id = s.partition_id AND o.producer_id = s.producer_id) "
    "RETURNING s.producer_id) "
    "DELETE FROM sluice_producer_batches b USING gone WHERE b.topic_id = $1 AND "
    "b.partition_id = CAST($2 AS INTEGER) AND b.producer_id = gone.producer_id";

// With the partition's row locked (bounds: log start, high watermark): the log start to
// `target`, the batches wholly below it out of the index, their objects marked when no
// batch is left in them, the aborted transactions and the producers below it forgotten.
result<trimmed> trim_locked(pg_transaction& tx, const std::string& topic_id, int32_t partition,
                            std::pair<int64_t, int64_t> bounds, int64_t target) {
    trimmed out{bounds.first, 0, 0, 0, std::nullopt};
    auto pruned = exec_at_log_start(tx, topic_id, partition, std::max(bounds.first, target),
                                    prune_aborted_sql);
    if (!pruned) return pruned.err();
    out.aborted_pruned = *pruned;
    if (target <= bounds.first) return out;
    auto params = partition_params(topic_id, partition);
    params.emplace_back(std::to_string(target));
    auto objects = tx.exec(
        "SELECT DISTINCT object_key FROM sluice_batches WHERE topic_id = $1 AND partition_id = "
        "CAST($2 AS INTEGER) AND last_offset < CAST($3 AS BIGINT)",
        params);
    if (!objects) return objects.err();
    auto del = tx.exec(
        "DELETE FROM sluice_batches WHERE topic_id = $1 AND partition_id = CAST($2 AS INTEGER) "
        "AND last_offset < CAST($3 AS BIGINT)",
        params);
    if (!del) return del.err();
    auto up = tx.exec(
        "UPDATE sluice_partitions SET log_start_offset = CAST($3 AS BIGINT) WHERE topic_id = $1 "
        "AND partition_id = CAST($2 AS INTEGER)",
        params);
    if (!up) return up.err();
    if (auto ev = exec_at_log_start(tx, topic_id, partition, target, evict_producers_sql); !ev)
        return ev.err();
    std::vector<std::string> keys;
    for (size_t i = 0; i < objects->size(); ++i) keys.push_back(objects->text(i, 0));
    auto marked = mark_unreferenced(tx, std::move(keys));
    if (!marked) return marked.err();
    out.log_start = target;
    out.batches_deleted = static_cast<uint64_t>(del->affected);
    out.objects_marked = *marked;
    return out;
}

}  // namespace

result<catalog::topic_info> load_topic_configs(pg_database& db, const std::string& topic_id) {
    auto cfg =
        db.exec("SELECT config_key, config_value FROM sluice_topic_configs WHERE topic_id = $1",
                {topic_id});
    if (!cfg) return cfg.err();
    catalog::topic_info topic;
    for (size_t i = 0; i < cfg->size(); ++i) topic.configs[cfg->text(i, 0)] = cfg->text(i, 1);
    return topic;
}

int64_t config_int(const catalog::topic_info& topic, const settings& s, const std::string& key,
                   int64_t fallback) {
    try {
        return std::stoll(catalog::effective_config(topic, key, s.topic_defaults));
    } catch (...) {
        return fallback;
    }
}

result<std::pair<int64_t, int64_t>> lock_partition(pg_transaction& tx, const std::string& topic_id,
                                                   int32_t partition) {
    auto row = tx.exec(
        "SELECT log_start_offset, high_watermark FROM sluice_partitions WHERE topic_id = $1 AND "
        "partition_id = CAST($2 AS INTEGER) FOR UPDATE",
        partition_params(topic_id, partition));
    if (!row) return row.err();
    if (row->size() != 1)
        return error{errc::not_found, fmt::format("no partition {} of topic id {} in the shared "
                                                  "catalog",
                                                  partition, topic_id)};
    return std::pair{row->int64(0, 0), row->int64(0, 1)};
}

result<uint64_t> mark_unreferenced(pg_transaction& tx, std::vector<std::string> keys) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    uint64_t marked = 0;
    constexpr size_t objects_per_statement = 500;
    for (size_t from = 0; from < keys.size(); from += objects_per_statement) {
        std::vector<pg_param> params;
        std::string in;
        for (size_t i = from; i < std::min(keys.size(), from + objects_per_statement); ++i) {
            in += fmt::format("{}${}", in.empty() ? "" : ", ", params.size() + 1);
            params.emplace_back(keys[i]);
        }
        // Locked first (key order): a transaction moving the last batches out of one of
        // these objects at once waits here, and the UPDATE below (a new statement, so a
        // new snapshot at read committed) sees what it committed.
        auto lock = tx.exec("SELECT object_key FROM sluice_objects WHERE object_key IN (" + in +
                                ") ORDER BY object_key FOR UPDATE",
                            params);
        if (!lock) return lock.err();
        auto up = tx.exec(
            "UPDATE sluice_objects SET state = 'deleting', state_changed_at = CURRENT_TIMESTAMP "
            "WHERE object_key IN (" +
                in +
                ") AND state = 'live' AND NOT EXISTS (SELECT 1 FROM sluice_batches b WHERE "
                "b.object_key = sluice_objects.object_key)",
            params);
        if (!up) return up.err();
        marked += static_cast<uint64_t>(up->affected);
    }
    return marked;
}

result<int64_t> advance_log_start(pg_database& db, const std::string& topic_id, int32_t partition,
                                  int64_t offset) {
    return db.transact<int64_t>(
        isolation_level::read_committed, [&](pg_transaction& tx) -> result<int64_t> {
            auto bounds = lock_partition(tx, topic_id, partition);
            if (!bounds) return bounds.err();
            const int64_t target = offset == -1 ? bounds->second : offset;
            if (target < 0 || target > bounds->second)
                return error{errc::out_of_range,
                             fmt::format("offset {} is past the high watermark {} of partition "
                                         "{} of topic id {}",
                                         offset, bounds->second, partition, topic_id)};
            auto t = trim_locked(tx, topic_id, partition, *bounds, target);
            if (!t) return t.err();
            return t->log_start;
        });
}

result<job_outcome> retain_partition(pg_database& db, const settings& s, const job_key& job,
                                     int64_t token, pass_stats& stats) {
    auto loaded = load_topic_configs(db, job.topic_id);
    if (!loaded) return loaded.err();
    const catalog::topic_info& topic = *loaded;
    const std::string policy = catalog::effective_config(topic, "cleanup.policy", s.topic_defaults);
    const int64_t retention_ms = config_int(topic, s, "retention.ms", -1);
    const int64_t retention_bytes = config_int(topic, s, "retention.bytes", -1);
    if (policy.find("delete") == std::string::npos)
        return job_outcome{"cleanup.policy " + policy + ": nothing to delete"};
    if (retention_ms < 0 && retention_bytes < 0) return job_outcome{"no retention limit"};
    // Record timestamps are the producers' (or brokers') clocks, so retention judges them
    // against a broker's clock, as Kafka does.
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    auto t = db.transact<trimmed>(
        isolation_level::read_committed, [&](pg_transaction& tx) -> result<trimmed> {
            if (auto held = check_lease(tx, job, token); !held) return held.err();
            auto bounds = lock_partition(tx, job.topic_id, job.partition);
            if (!bounds) return bounds.err();
            int64_t target = bounds->first;
            auto params = partition_params(job.topic_id, job.partition);
            if (retention_ms >= 0) {
                // The first batch holding a record newer than the cutoff stays, and all after.
                auto p = params;
                p.emplace_back(std::to_string(now_ms - retention_ms));
                auto r = tx.exec(
                    "SELECT MIN(base_offset) FROM sluice_batches WHERE topic_id = $1 AND "
                    "partition_id = CAST($2 AS INTEGER) AND max_timestamp_ms >= CAST($3 AS "
                    "BIGINT)",
                    p);
                if (!r) return r.err();
                target = std::max(target, r->is_null(0, 0) ? bounds->second : r->int64(0, 0));
            }
            if (retention_bytes >= 0) {
                // Oldest batches go while what follows them still holds retention.bytes.
                auto p = params;
                p.emplace_back(std::to_string(retention_bytes));
                auto r = tx.exec(
                    "SELECT MIN(base_offset) FROM (SELECT base_offset, SUM(byte_size) OVER "
                    "(ORDER BY base_offset DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) "
                    "AS after_bytes FROM sluice_batches WHERE topic_id = $1 AND partition_id = "
                    "CAST($2 AS INTEGER)) s WHERE COALESCE(after_bytes, 0) < CAST($3 AS BIGINT)",
                    p);
                if (!r) return r.err();
                if (!r->is_null(0, 0)) target = std::max(target, r->int64(0, 0));
            }
            auto out = trim_locked(tx, job.topic_id, job.partition, *bounds, target);
            if (!out || retention_ms < 0) return out;
            // The first batch left goes once its newest record is older than retention.ms
            // (the log start stops at it until then, whatever the batches after it hold).
            auto first = tx.exec(
                "SELECT max_timestamp_ms FROM sluice_batches WHERE topic_id = $1 AND "
                "partition_id = CAST($2 AS INTEGER) ORDER BY base_offset LIMIT 1",
                params);
            if (!first) return first.err();
            if (first->size() == 1) out->oldest_timestamp = first->int64(0, 0);
            return out;
        });
    if (!t) return t.err();
    stats.batches_deleted += t->batches_deleted;
    stats.objects_marked += t->objects_marked;
    job_outcome done{
        fmt::format("log start {}, {} batches deleted, {} objects marked, {} aborted "
                    "transactions forgotten",
                    t->log_start, t->batches_deleted, t->objects_marked, t->aborted_pruned)};
    done.log_start = t->log_start;
    // Nothing changes on an idle partition until then: its job sleeps till that time.
    if (t->oldest_timestamp) {
        constexpr int64_t never = std::numeric_limits<int64_t>::max();
        done.wake_ms = *t->oldest_timestamp > never - retention_ms - 1
                           ? never
                           : *t->oldest_timestamp + retention_ms + 1;
    }
    return done;
}

}  // namespace sluice::shared::maintenance
