// Merging a partition's batches out of many small objects into one (maintenance.h).

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "protocol/record_batch.h"
#include "shared/maintenance/jobs.h"

namespace sluice::shared::maintenance {

namespace {

using row = batch_row;
using piece = batch_piece;

constexpr size_t max_batches_per_object = 10000;
constexpr size_t max_objects_per_job = 8;
constexpr size_t max_rows_read = 100000;

}  // namespace

std::vector<piece> pieces_of(const std::vector<row>& rows) {
    std::vector<piece> out;
    for (size_t i = 0; i < rows.size(); ++i) {
        if (!out.empty()) {
            piece& p = out.back();
            const row& last = rows[p.first + p.count - 1];
            if (last.object == rows[i].object && last.position + last.size == rows[i].position) {
                ++p.count;
                p.bytes += rows[i].size;
                continue;
            }
        }
        out.push_back({i, 1, rows[i].size});
    }
    return out;
}

namespace {

// The first run of at least s.merge_min_objects small pieces from `from` on, within the
// size and batch caps: [begin, end) in `pieces`; begin == end when there is none.
std::pair<size_t, size_t> next_run(const std::vector<piece>& pieces, size_t from,
                                   const settings& s) {
    size_t begin = from, bytes = 0, batches = 0;
    for (size_t i = from; i <= pieces.size(); ++i) {
        const bool fits = i < pieces.size() && pieces[i].bytes < s.merge_small_bytes &&
                          bytes + pieces[i].bytes <= s.merge_target_bytes &&
                          batches + pieces[i].count <= max_batches_per_object;
        if (fits) {
            bytes += pieces[i].bytes;
            batches += pieces[i].count;
            continue;
        }
        if (i - begin >= std::max<size_t>(s.merge_min_objects, 2)) return {begin, i};
        if (i == pieces.size()) break;
        // Start again here when this piece is small but did not fit, else after it.
        const bool small = pieces[i].bytes < s.merge_small_bytes;
        begin = small ? i : i + 1;
        bytes = small ? pieces[i].bytes : 0;
        batches = small ? pieces[i].count : 0;
    }
    return {pieces.size(), pieces.size()};
}

result<std::vector<row>> load_rows(pg_database& db, const job_key& job) {
    auto r = db.exec(
        "SELECT base_offset, object_key, byte_position, byte_size FROM sluice_batches WHERE "
        "topic_id = $1 AND partition_id = CAST($2 AS INTEGER) ORDER BY base_offset LIMIT " +
            std::to_string(max_rows_read),
        {job.topic_id, std::to_string(job.partition)});
    if (!r) return r.err();
    std::vector<row> rows;
    rows.reserve(r->size());
    for (size_t i = 0; i < r->size(); ++i)
        rows.push_back({r->int64(i, 0), r->text(i, 1), static_cast<uint64_t>(r->int64(i, 2)),
                        static_cast<uint64_t>(r->int64(i, 3))});
    return rows;
}

}  // namespace

result<std::string> copy_rows(object_store& store, const std::vector<row>& rows,
                              const std::vector<piece>& pieces, size_t begin, size_t end) {
    std::string out;
    for (size_t i = begin; i < end; ++i) {
        const piece& p = pieces[i];
        const row& r0 = rows[p.first];
        auto got = store.get(r0.object, byte_range{r0.position, p.bytes});
        if (!got) return got.err();
        if (got->size() != p.bytes)
            return error{errc::corrupt, fmt::format("{}: {} bytes at {} read as {}", r0.object,
                                                    p.bytes, r0.position, got->size())};
        uint64_t at = 0;
        for (size_t k = p.first; k < p.first + p.count; ++k) {
            auto h = protocol::read_batch_header(
                bytes_view(reinterpret_cast<const uint8_t*>(got->data()) + at, rows[k].size));
            if (!h || h->size_bytes() != rows[k].size)
                return error{
                    errc::corrupt,
                    fmt::format("{} at {}: not one record batch of {} bytes (batch {})",
                                rows[k].object, rows[k].position, rows[k].size, rows[k].base)};
            at += rows[k].size;
        }
        out += *got;
    }
    return out;
}

result<bool> rows_unchanged(pg_transaction& tx, const job_key& job, const std::vector<row>& rows) {
    auto now = tx.exec(
        "SELECT base_offset, object_key, byte_position, byte_size FROM sluice_batches "
        "WHERE topic_id = $1 AND partition_id = CAST($2 AS INTEGER) AND base_offset >= "
        "CAST($3 AS BIGINT) AND base_offset <= CAST($4 AS BIGINT) ORDER BY base_offset",
        {job.topic_id, std::to_string(job.partition), std::to_string(rows.front().base),
         std::to_string(rows.back().base)});
    if (!now) return now.err();
    bool same = now->size() == rows.size();
    for (size_t i = 0; same && i < rows.size(); ++i)
        same = row{now->int64(i, 0), now->text(i, 1), static_cast<uint64_t>(now->int64(i, 2)),
                   static_cast<uint64_t>(now->int64(i, 3))} == rows[i];
    return same;
}

namespace {

struct swap_outcome {
    bool refused = false;  // the lease passed or the rows changed: the new object is unused
    std::string why;
    uint64_t marked = 0;
};

// One transaction: the lease still held, the partition's row locked, the rows as they
// were read, then the new object's row, the rows pointed at it and the old objects marked
// when no batch is left in them.
result<swap_outcome> swap_rows(pg_database& db, const job_key& job, int64_t token,
                               const settings& s, const std::string& key, uint64_t size,
                               const std::vector<row>& moved) {
    return db.transact<swap_outcome>(
        isolation_level::read_committed, [&](pg_transaction& tx) -> result<swap_outcome> {
            if (auto held = check_lease(tx, job, token); !held)
                return swap_outcome{true, held.err().message, 0};
            if (auto lock = lock_partition(tx, job.topic_id, job.partition); !lock)
                return lock.err();
            auto same = rows_unchanged(tx, job, moved);
            if (!same) return same.err();
            if (!*same) return swap_outcome{true, "the batches changed meanwhile (retention?)", 0};
            auto ins = tx.exec(
                "INSERT INTO sluice_objects (object_key, size_bytes, created_by, created_at, "
                "state, state_changed_at) VALUES ($1, CAST($2 AS BIGINT), CAST($3 AS INTEGER), "
                "CURRENT_TIMESTAMP, 'live', CURRENT_TIMESTAMP)",
                {key, std::to_string(size), std::to_string(s.broker_id)});
            if (!ins) return ins.err();
            constexpr size_t rows_per_update = 2000;
            uint64_t position = 0;
            for (size_t from = 0; from < moved.size(); from += rows_per_update) {
                std::vector<pg_param> params{job.topic_id, std::to_string(job.partition), key};
                std::string values;
                for (size_t i = from; i < std::min(moved.size(), from + rows_per_update); ++i) {
                    values += fmt::format("{}(CAST(${} AS BIGINT), CAST(${} AS BIGINT))",
                                          values.empty() ? "" : ", ", params.size() + 1,
                                          params.size() + 2);
                    params.emplace_back(std::to_string(moved[i].base));
                    params.emplace_back(std::to_string(position));
                    position += moved[i].size;
                }
                auto up = tx.exec(
                    "UPDATE sluice_batches SET object_key = $3, byte_position = v.pos FROM "
                    "(VALUES " +
                        values +
                        ") AS v(base, pos) WHERE sluice_batches.topic_id = $1 AND "
                        "sluice_batches.partition_id = CAST($2 AS INTEGER) AND "
                        "sluice_batches.base_offset = v.base",
                    params);
                if (!up) return up.err();
            }
            std::vector<std::string> old;
            old.reserve(moved.size());
            for (const row& r : moved) old.push_back(r.object);
            auto marked = mark_unreferenced(tx, std::move(old));
            if (!marked) return marked.err();
            return swap_outcome{false, {}, *marked};
        });
}

}  // namespace

result<job_outcome> merge_partition(pg_database& db, object_store& store, const settings& s,
                                    const job_key& job, int64_t token, pass_stats& stats) {
    auto rows = load_rows(db, job);
    if (!rows) return rows.err();
    const auto pieces = pieces_of(*rows);
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string detail;
    size_t from = 0;
    for (size_t done = 0; done < max_objects_per_job; ++done) {
        auto [begin, end] = next_run(pieces, from, s);
        if (begin == end) break;
        from = end;
        auto data = copy_rows(store, *rows, pieces, begin, end);
        if (!data) return data.err();
        const size_t first = pieces[begin].first;
        const size_t last = pieces[end - 1].first + pieces[end - 1].count;  // exclusive
        std::vector<row> moved(rows->begin() + static_cast<std::ptrdiff_t>(first),
                               rows->begin() + static_cast<std::ptrdiff_t>(last));
        const int64_t unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
        const std::string key =
            fmt::format("{}/merged/{}/{}/{:020}-{}-{:08x}", s.object_prefix, job.topic_id,
                        job.partition, moved.front().base, unix_ms, static_cast<uint32_t>(rng()));
        if (auto put = store.put(key, *data); !put) return put.err();
        auto swapped = swap_rows(db, job, token, s, key, data->size(), moved);
        if (!swapped) return swapped.err();  // outcome maybe unknown: the cleanup decides
        if (swapped->refused) {
            (void)store.remove(key);  // no row points at it; the cleanup would find it too
            return error{errc::in_use, swapped->why};
        }
        stats.objects_merged += 1;
        stats.batches_moved += moved.size();
        stats.bytes_copied += data->size();
        stats.objects_marked += swapped->marked;
        detail +=
            fmt::format("{}{} batches from {} objects into {} ({} bytes)",
                        detail.empty() ? "" : "; ", moved.size(), end - begin, key, data->size());
    }
    job_outcome out{detail.empty() ? std::string("nothing to merge") : detail};
    // Capped (objects a job, rows read): the rest waits for the next interval, changed or
    // not.
    out.more = next_run(pieces, from, s).first != pieces.size() || rows->size() >= max_rows_read;
    return out;
}

}  // namespace sluice::shared::maintenance
