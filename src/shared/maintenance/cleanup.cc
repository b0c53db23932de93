// Deleting objects that no batch references (maintenance.h): those merging, retention and
// topic deletion left (after the grace period), and those in the store that the catalog
// never knew (a broker died between its upload and its commit).

#include <string>
#include <vector>

#include <fmt/format.h>

#include "shared/maintenance/jobs.h"

namespace sluice::shared::maintenance {

namespace {

// "$1, $2, ..." for keys[from, to), appended to params.
std::string placeholders(const std::vector<std::string>& keys, size_t from, size_t to,
                         std::vector<pg_param>& params) {
    std::string in;
    for (size_t i = from; i < to; ++i) {
        in += fmt::format("{}${}", in.empty() ? "" : ", ", params.size() + 1);
        params.emplace_back(keys[i]);
    }
    return in;
}

constexpr size_t keys_per_statement = 500;
constexpr const char* unreferenced =
    "NOT EXISTS (SELECT 1 FROM sluice_batches b WHERE "
    "b.object_key = sluice_objects.object_key)";

// Live objects without batches (a topic deleted, a window whose batches were all refused
// as duplicates) older than the grace: marked, so that the next step deletes them later.
result<uint64_t> mark_forgotten(pg_database& db, const settings& s, const job_key& job,
                                int64_t token) {
    return db.transact<uint64_t>(
        isolation_level::read_committed, [&](pg_transaction& tx) -> result<uint64_t> {
            if (auto held = check_lease(tx, job, token); !held) return held.err();
            auto r = tx.exec(std::string("SELECT object_key FROM sluice_objects WHERE state = "
                                         "'live' AND created_at < CURRENT_TIMESTAMP - CAST($1 AS "
                                         "INTERVAL) AND ") +
                                 unreferenced + " LIMIT 10000",
                             {interval_text(s.delete_grace)});
            if (!r) return r.err();
            std::vector<std::string> keys;
            for (size_t i = 0; i < r->size(); ++i) keys.push_back(r->text(i, 0));
            return mark_unreferenced(tx, std::move(keys));
        });
}

// Objects marked 'deleting' longer than the grace ago: out of the store, then their rows.
result<uint64_t> delete_marked(pg_database& db, object_store& store, const settings& s,
                               const job_key& job, int64_t token) {
    auto r = db.exec(std::string("SELECT object_key FROM sluice_objects WHERE state = 'deleting' "
                                 "AND state_changed_at < CURRENT_TIMESTAMP - CAST($1 AS "
                                 "INTERVAL) AND ") +
                         unreferenced + " ORDER BY object_key LIMIT 10000",
                     {interval_text(s.delete_grace)});
    if (!r) return r.err();
    std::vector<std::string> keys;
    for (size_t i = 0; i < r->size(); ++i) keys.push_back(r->text(i, 0));
    for (const auto& key : keys)
        if (auto rm = store.remove(key); !rm) return rm.err();  // absent: fine
    uint64_t deleted = 0;
    for (size_t from = 0; from < keys.size(); from += keys_per_statement) {
        auto d = db.transact<uint64_t>(
            isolation_level::read_committed, [&](pg_transaction& tx) -> result<uint64_t> {
                if (auto held = check_lease(tx, job, token); !held) return held.err();
                std::vector<pg_param> params;
                const std::string in = placeholders(
                    keys, from, std::min(keys.size(), from + keys_per_statement), params);
                auto del = tx.exec("DELETE FROM sluice_objects WHERE object_key IN (" + in +
                                       ") AND state = 'deleting'",
                                   params);
                if (!del) return del.err();
                return static_cast<uint64_t>(del->affected);
            });
        if (!d) return d.err();
        deleted += *d;
    }
    return deleted;
}

// Objects in the store under the prefix that the catalog does not know, older than the
// grace by the store's clock against the database's. Each is claimed first: a row in
// state 'deleting' is inserted (nothing when a commit inserted it meanwhile), so that a
// broker that uploaded it and commits only now fails on the row (unique key) and
// acknowledges nothing; then it is deleted from the store. The row goes a grace later
// (delete_marked).
result<uint64_t> delete_orphans(pg_database& db, object_store& store, const settings& s,
                                const job_key& job, int64_t token) {
    auto now = db.exec("SELECT CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000 AS BIGINT)");
    if (!now) return now.err();
    const int64_t cutoff_ms = now->int64(0, 0) - s.delete_grace.count();
    auto listed = store.list(s.object_prefix + "/");
    if (!listed) return listed.err();
    std::vector<std::string> old;
    for (const auto& o : *listed)
        if (o.last_modified_ms >= 0 && o.last_modified_ms < cutoff_ms) old.push_back(o.key);
    std::vector<std::string> orphans;
    for (size_t from = 0; from < old.size(); from += keys_per_statement) {
        std::vector<pg_param> params;
        const std::string in =
            placeholders(old, from, std::min(old.size(), from + keys_per_statement), params);
        auto known = db.exec("SELECT object_key FROM sluice_objects WHERE object_key IN (" + in +
                                 ") ORDER BY object_key",
                             params);
        if (!known) return known.err();
        size_t k = 0;
        for (size_t i = from; i < std::min(old.size(), from + keys_per_statement); ++i) {
            while (k < known->size() && known->text(k, 0) < old[i]) ++k;
            if (k < known->size() && known->text(k, 0) == old[i]) continue;
            orphans.push_back(old[i]);
        }
    }
    uint64_t deleted = 0;
    for (const auto& key : orphans) {
        auto claimed = db.transact<bool>(
            isolation_level::read_committed, [&](pg_transaction& tx) -> result<bool> {
                if (auto held = check_lease(tx, job, token); !held) return held.err();
                auto ins = tx.exec(
                    "INSERT INTO sluice_objects (object_key, size_bytes, created_by, created_at, "
                    "state, state_changed_at) VALUES ($1, 0, -1, CURRENT_TIMESTAMP, 'deleting', "
                    "CURRENT_TIMESTAMP) ON CONFLICT (object_key) DO NOTHING",
                    {key});
                if (!ins) return ins.err();
                return ins->affected == 1;
            });
        if (!claimed) return claimed.err();
        if (!*claimed) continue;  // committed meanwhile: not an orphan
        if (auto rm = store.remove(key); !rm) return rm.err();
        ++deleted;
    }
    return deleted;
}

}  // namespace

result<job_outcome> clean_objects(pg_database& db, object_store& store, const settings& s,
                                  const job_key& job, int64_t token, pass_stats& stats) {
    auto marked = mark_forgotten(db, s, job, token);
    if (!marked) return marked.err();
    stats.objects_marked += *marked;
    auto deleted = delete_marked(db, store, s, job, token);
    if (!deleted) return deleted.err();
    stats.objects_deleted += *deleted;
    auto orphans = delete_orphans(db, store, s, job, token);
    if (!orphans) return orphans.err();
    stats.orphans_deleted += *orphans;
    // Leases of partitions that are gone (their topic deleted).
    auto gone = db.exec(
        "DELETE FROM sluice_job_leases WHERE partition_id >= 0 AND lease_expires_at <= "
        "CURRENT_TIMESTAMP AND NOT EXISTS (SELECT 1 FROM sluice_partitions p WHERE "
        "CAST(p.topic_id AS VARCHAR(32)) = sluice_job_leases.topic_id AND p.partition_id = "
        "sluice_job_leases.partition_id)");
    if (!gone) return gone.err();
    return job_outcome{fmt::format("{} objects marked, {} deleted, {} orphans deleted", *marked,
                                   *deleted, *orphans)};
}

}  // namespace sluice::shared::maintenance
