// Compaction of a partition (cleanup.policy=compact) in shared mode (maintenance.h): the
// latest record of each key stays, by the rules single-node mode's cleaner applies
// (log::record_selector, log/compaction_filter.h); the kept batches, with their offsets,
// go into one new object and the partition's index rows are swapped in one transaction.

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/logging.h"
#include "log/compaction_filter.h"
#include "protocol/record_batch.h"
#include "shared/batch_index.h"
#include "shared/maintenance/jobs.h"

namespace sluice::shared::maintenance {

namespace {

// The part of the partition a run compacts, read in one snapshot.
struct cleanable {
    std::vector<batch_row> rows;          // in offset order
    std::vector<int64_t> max_timestamps;  // the rows' max_timestamp_ms
    std::vector<int64_t> append_times;    // the rows' append_time_ms
    std::vector<int64_t> last_offsets;    // the rows' last_offset
    int64_t log_start = 0;
    int64_t clean_offset = 0;               // sluice_partitions.clean_offset
    int64_t end = 0;                        // first offset past the rows
    std::vector<log::aborted_txn> aborted;  // the partition's aborted transactions
};

struct lags {
    int64_t min_lag_ms = 0;
    int64_t max_lag_ms = std::numeric_limits<int64_t>::max();
    double min_dirty_ratio = 0.5;
    int64_t delete_retention_ms = 0;
};

// The rows below the cleanable end: the last stable offset (an open transaction may
// still abort what follows), never the partition's last batch (as Kafka never cleans the
// active segment: the high watermark stays on a batch), and no batch holding a record
// younger than min.compaction.lag.ms; at most s.compact_max_bytes of them.
result<cleanable> load_cleanable(pg_database& db, const job_key& job, const settings& s,
                                 const lags& l, int64_t now_ms) {
    cleanable c;
    auto r = db.transact(isolation_level::repeatable_read, [&](pg_transaction& tx) -> result<void> {
        c = cleanable{};
        const std::vector<pg_param> key{job.topic_id, std::to_string(job.partition)};
        auto b = tx.exec(
            "SELECT p.log_start_offset, p.high_watermark, p.clean_offset, (SELECT "
            "MIN(o.first_offset) FROM sluice_txn_open o WHERE o.topic_id = p.topic_id AND "
            "o.partition_id = p.partition_id), (SELECT MAX(base_offset) FROM sluice_batches x "
            "WHERE x.topic_id = p.topic_id AND x.partition_id = p.partition_id) FROM "
            "sluice_partitions p WHERE p.topic_id = $1 AND p.partition_id = CAST($2 AS INTEGER)",
            key);
        if (!b) return b.err();
        if (b->size() != 1)
            return error{errc::not_found, fmt::format("no partition {} of topic id {}",
                                                      job.partition, job.topic_id)};
        c.log_start = b->int64(0, 0);
        c.clean_offset = b->int64(0, 2);
        int64_t end = b->int64(0, 1);
        if (!b->is_null(0, 3)) end = std::min(end, b->int64(0, 3));
        if (b->is_null(0, 4)) return {};  // no batch
        end = std::min(end, b->int64(0, 4));
        auto params = key;
        params.emplace_back(std::to_string(end));
        auto q = tx.exec(
            "SELECT base_offset, last_offset, object_key, byte_position, byte_size, "
            "max_timestamp_ms, append_time_ms FROM sluice_batches WHERE topic_id = $1 AND "
            "partition_id = CAST($2 AS INTEGER) AND last_offset < CAST($3 AS BIGINT) ORDER BY "
            "base_offset "
            "LIMIT 100000",
            params);
        if (!q) return q.err();
        uint64_t bytes = 0;
        c.end = c.log_start;
        for (size_t i = 0; i < q->size(); ++i) {
            const auto size = static_cast<uint64_t>(q->int64(i, 4));
            const int64_t max_ts = q->int64(i, 5);
            if (l.min_lag_ms > 0 && now_ms - max_ts < l.min_lag_ms) break;
            if (!c.rows.empty() && bytes + size > s.compact_max_bytes) break;
            bytes += size;
            c.rows.push_back(
                {q->int64(i, 0), q->text(i, 2), static_cast<uint64_t>(q->int64(i, 3)), size});
            c.max_timestamps.push_back(max_ts);
            c.append_times.push_back(q->int64(i, 6));
            c.last_offsets.push_back(q->int64(i, 1));
            c.end = q->int64(i, 1) + 1;
        }
        auto a = tx.exec(
            "SELECT producer_id, first_offset, last_offset FROM sluice_txn_aborted WHERE "
            "topic_id = $1 AND partition_id = CAST($2 AS INTEGER) ORDER BY last_offset",
            key);
        if (!a) return a.err();
        for (size_t i = 0; i < a->size(); ++i)
            c.aborted.push_back({a->int64(i, 0), a->int64(i, 1), a->int64(i, 2)});
        return {};
    });
    if (!r) return r.err();
    return c;
}

// One kept batch of the new object.
struct kept_row {
    int64_t base = 0;
    int64_t last = 0;
    uint64_t position = 0;
    uint64_t size = 0;
    int64_t max_timestamp = 0;
    int32_t records = 0;
    int64_t append_time = -1;  // the original batch's
};

struct rewrite {
    std::string data;
    std::vector<kept_row> rows;
    int64_t removed = 0;
};

// Runs the selector over the rows' batches (`data`: their stored bytes, in row order).
result<rewrite> select_records(const cleanable& c, std::string& data,
                               log::record_selector& select) {
    std::vector<size_t> at;
    size_t pos = 0;
    for (size_t i = 0; i < c.rows.size(); ++i) {
        at.push_back(pos);
        auto* p = reinterpret_cast<uint8_t*>(data.data()) + pos;
        restore_batch(p, c.rows[i].size, c.rows[i].base, c.max_timestamps[i]);
        pos += c.rows[i].size;
    }
    auto batch = [&](size_t i) {
        return bytes_view(reinterpret_cast<const uint8_t*>(data.data()) + at[i], c.rows[i].size);
    };
    const int64_t dirty_start = select.settings().dirty_start;
    for (size_t i = 0; i < c.rows.size(); ++i) {
        auto h = protocol::read_batch_header(batch(i));
        if (!h)
            return error{errc::corrupt, fmt::format("no record batch at offset {} of {}",
                                                    c.rows[i].base, c.rows[i].object)};
        if (h->last_offset() >= dirty_start) select.note_latest(*h, batch(i));
    }
    rewrite out;
    bytes kept;
    for (size_t i = 0; i < c.rows.size(); ++i) {
        auto h = *protocol::read_batch_header(batch(i));
        const size_t from = kept.size();
        auto v = select.filter(h, batch(i), kept);
        if (!v) return v.err();
        out.removed += v->removed;
        if (kept.size() == from) continue;
        auto nh = protocol::read_batch_header(bytes_view(kept).subspan(from));
        if (!nh) return error{errc::corrupt, "compaction wrote a batch without its header"};
        const bool append_time = nh->ts_type() == protocol::timestamp_type::log_append_time;
        out.rows.push_back({nh->base_offset, nh->last_offset(), from, kept.size() - from,
                            append_time ? c.max_timestamps[i] : nh->max_timestamp, nh->record_count,
                            c.append_times[i]});
    }
    out.data.assign(kept.begin(), kept.end());
    return out;
}

struct compact_swap {
    bool refused = false;  // the lease passed or the rows changed: the new object is unused
    std::string why;
    uint64_t marked = 0;
};

// One transaction: the lease still held, the partition's row locked, its rows as they
// were read; then the new object, the rows replaced, the clean offset moved, the dropped
// ABORT markers' entries deleted and the old objects marked when no batch is left in them.
result<compact_swap> swap_compacted(pg_database& db, const job_key& job, int64_t token,
                                    const settings& s, const std::string& key, const cleanable& c,
                                    const rewrite& w, const log::record_selector& select) {
    return db.transact<compact_swap>(
        isolation_level::read_committed, [&](pg_transaction& tx) -> result<compact_swap> {
            if (auto held = check_lease(tx, job, token); !held)
                return compact_swap{true, held.err().message, 0};
            auto bounds = lock_partition(tx, job.topic_id, job.partition);
            if (!bounds) return bounds.err();
            auto same = rows_unchanged(tx, job, c.rows);
            if (!same) return same.err();
            if (!*same || bounds->first != c.log_start)
                return compact_swap{true, "the batches changed meanwhile (merge or retention?)", 0};
            const std::vector<pg_param> part{job.topic_id, std::to_string(job.partition)};
            if (!w.rows.empty()) {
                auto ins = tx.exec(
                    "INSERT INTO sluice_objects (object_key, size_bytes, created_by, created_at, "
                    "state, state_changed_at) VALUES ($1, CAST($2 AS BIGINT), CAST($3 AS "
                    "INTEGER), CURRENT_TIMESTAMP, 'live', CURRENT_TIMESTAMP)",
                    {key, std::to_string(w.data.size()), std::to_string(s.broker_id)});
                if (!ins) return ins.err();
            }
            auto range = part;
            range.emplace_back(std::to_string(c.rows.front().base));
            range.emplace_back(std::to_string(c.rows.back().base));
            auto del = tx.exec(
                "DELETE FROM sluice_batches WHERE topic_id = $1 AND partition_id = CAST($2 AS "
                "INTEGER) AND base_offset >= CAST($3 AS BIGINT) AND base_offset <= CAST($4 AS "
                "BIGINT)",
                range);
            if (!del) return del.err();
            constexpr size_t rows_per_insert = 2000;
            for (size_t from = 0; from < w.rows.size(); from += rows_per_insert) {
                std::vector<pg_param> params{job.topic_id, std::to_string(job.partition), key};
                std::string values;
                for (size_t i = from; i < std::min(w.rows.size(), from + rows_per_insert); ++i) {
                    const kept_row& k = w.rows[i];
                    const size_t n = params.size();
                    values += fmt::format(
                        "{}($1, CAST($2 AS INTEGER), CAST(${} AS BIGINT), CAST(${} AS BIGINT), "
                        "$3, CAST(${} AS BIGINT), CAST(${} AS INTEGER), CAST(${} AS BIGINT), "
                        "CAST(${} AS INTEGER), CAST(${} AS BIGINT))",
                        values.empty() ? "" : ", ", n + 1, n + 2, n + 3, n + 4, n + 5, n + 6,
                        n + 7);
                    for (int64_t v : {k.base, k.last, static_cast<int64_t>(k.position),
                                      static_cast<int64_t>(k.size), k.max_timestamp,
                                      static_cast<int64_t>(k.records), k.append_time})
                        params.emplace_back(std::to_string(v));
                }
                auto ins = tx.exec(
                    "INSERT INTO sluice_batches (topic_id, partition_id, base_offset, "
                    "last_offset, object_key, byte_position, byte_size, max_timestamp_ms, "
                    "record_count, append_time_ms) VALUES " +
                        values,
                    params);
                if (!ins) return ins.err();
            }
            auto moved = part;
            moved.emplace_back(std::to_string(c.end));
            auto up = tx.exec(
                "UPDATE sluice_partitions SET clean_offset = CAST($3 AS BIGINT) WHERE topic_id = "
                "$1 AND partition_id = CAST($2 AS INTEGER)",
                moved);
            if (!up) return up.err();
            for (const auto& [producer, marker] : select.dropped_aborts()) {
                auto gone = part;
                gone.emplace_back(std::to_string(marker));
                auto d = tx.exec(
                    "DELETE FROM sluice_txn_aborted WHERE topic_id = $1 AND partition_id = "
                    "CAST($2 AS INTEGER) AND last_offset = CAST($3 AS BIGINT)",
                    gone);
                if (!d) return d.err();
            }
            std::vector<std::string> old;
            for (const batch_row& r : c.rows) old.push_back(r.object);
            auto marked = mark_unreferenced(tx, std::move(old));
            if (!marked) return marked.err();
            return compact_swap{false, {}, *marked};
        });
}

int64_t compact_now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// A partition of a topic whose cleanup.policy holds compact (its configs in `topic`).
result<job_outcome> compact_topic_partition(pg_database& db, object_store& store, const settings& s,
                                            const job_key& job, int64_t token, pass_stats& stats,
                                            const catalog::topic_info& topic) {
    lags l;
    l.min_lag_ms = config_int(topic, s, "min.compaction.lag.ms", 0);
    l.max_lag_ms = config_int(topic, s, "max.compaction.lag.ms", l.max_lag_ms);
    l.delete_retention_ms = config_int(topic, s, "delete.retention.ms", 86400000);
    try {
        l.min_dirty_ratio = std::stod(
            catalog::effective_config(topic, "min.cleanable.dirty.ratio", s.topic_defaults));
    } catch (...) {
    }
    // Record times are the producers' (or brokers') clocks: judged against this broker's,
    // as Kafka's cleaner does.
    const int64_t now = compact_now_ms();
    auto c = load_cleanable(db, job, s, l, now);
    if (!c) return c.err();
    if (c->rows.empty()) return job_outcome{"nothing to compact"};
    // The dirty part: what no run has seen yet. A run goes when it is at least
    // min.cleanable.dirty.ratio of the cleanable bytes, or its oldest batch is older than
    // max.compaction.lag.ms (judged by that batch's largest timestamp).
    const int64_t dirty_start = std::max(c->clean_offset, c->log_start);
    uint64_t total = 0;
    uint64_t dirty = 0;
    std::optional<int64_t> oldest_dirty;
    for (size_t i = 0; i < c->rows.size(); ++i) {
        total += c->rows[i].size;
        if (c->last_offsets[i] < dirty_start) continue;
        dirty += c->rows[i].size;
        if (!oldest_dirty) oldest_dirty = c->max_timestamps[i];
    }
    if (dirty == 0 || c->end <= dirty_start) return job_outcome{"nothing dirty"};
    const double ratio = static_cast<double>(dirty) / static_cast<double>(total);
    const bool forced = oldest_dirty && now - *oldest_dirty > l.max_lag_ms;
    if (ratio < l.min_dirty_ratio && !forced)
        return job_outcome{
            fmt::format("dirty ratio {:.2f} below {:.2f}", ratio, l.min_dirty_ratio)};

    const auto pieces = pieces_of(c->rows);
    auto data = copy_rows(store, c->rows, pieces, 0, pieces.size());
    if (!data) return data.err();
    log::record_selector select(
        {c->log_start, dirty_start, {}, c->aborted, l.delete_retention_ms, now});
    auto w = select_records(*c, *data, select);
    if (!w) return w.err();
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    const std::string key =
        fmt::format("{}/compacted/{}/{}/{:020}-{}-{:08x}", s.object_prefix, job.topic_id,
                    job.partition, c->rows.front().base, now, static_cast<uint32_t>(rng()));
    if (!w->rows.empty()) {
        if (auto put = store.put(key, w->data); !put) return put.err();
    }
    auto swapped = swap_compacted(db, job, token, s, key, *c, *w, select);
    if (!swapped) return swapped.err();  // outcome maybe unknown: the cleanup decides
    if (swapped->refused) {
        if (!w->rows.empty()) (void)store.remove(key);
        return error{errc::in_use, swapped->why};
    }
    stats.records_compacted += static_cast<uint64_t>(w->removed);
    stats.objects_marked += swapped->marked;
    log_info("cleaner", "{}:{}: compacted offsets {}..{}: {} records removed, {} of {} bytes kept",
             job.topic_id, job.partition, c->rows.front().base, c->end - 1, w->removed,
             w->data.size(), data->size());
    return job_outcome{fmt::format(
        "offsets {}..{} (dirty ratio {:.2f}{}): {} batches into {} ({} bytes of {}), {} records "
        "removed; clean up to offset {}",
        c->rows.front().base, c->end - 1, ratio, forced ? ", max.compaction.lag.ms" : "",
        w->rows.size(), w->rows.empty() ? std::string("no object") : key, w->data.size(),
        data->size(), w->removed, c->end)};
}

}  // namespace

result<job_outcome> compact_partition(pg_database& db, object_store& store, const settings& s,
                                      const job_key& job, int64_t token, pass_stats& stats) {
    auto loaded = load_topic_configs(db, job.topic_id);
    if (!loaded) return loaded.err();
    const std::string policy =
        catalog::effective_config(*loaded, "cleanup.policy", s.topic_defaults);
    if (policy.find("compact") == std::string::npos)
        return job_outcome{"cleanup.policy " + policy + ": nothing to compact"};
    auto out = compact_topic_partition(db, store, s, job, token, stats, *loaded);
    // Compaction also depends on time (min.compaction.lag.ms, max.compaction.lag.ms, the
    // tombstones' delete.retention.ms): a compacted topic's job runs every interval.
    if (out) out->wake_ms = compact_now_ms();
    return out;
}

}  // namespace sluice::shared::maintenance
