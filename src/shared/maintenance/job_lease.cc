// Job leases in sluice_job_leases (jobs.h; docs/formats/shared-catalog.md, version 3).

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "shared/maintenance/jobs.h"

namespace sluice::shared::maintenance {

namespace {

std::vector<pg_param> key_params(const job_key& job) {
    return {job.kind, job.topic_id, std::to_string(job.partition)};
}

constexpr const char* key_where =
    "job_kind = $1 AND topic_id = $2 AND partition_id = CAST($3 AS INTEGER)";

// A lease (row l) is free once it expired or once its holder's broker registration
// (sluice_brokers) says that broker is gone: its broker lease passed, or a restart
// registered a new incarnation. So a killed broker's jobs move with its broker lease
// instead of waiting out the job lease. A holder that never registered (a tool) keeps
// its lease until it expires.
constexpr const char* lease_free =
    "(l.lease_expires_at <= CURRENT_TIMESTAMP OR EXISTS (SELECT 1 FROM sluice_brokers b "
    "WHERE b.broker_id = l.holder_broker AND (b.incarnation <> l.holder_incarnation OR "
    "b.lease_expires_at <= CURRENT_TIMESTAMP)))";

}  // namespace

std::string interval_text(std::chrono::milliseconds ms) {
    return fmt::format("{} milliseconds", ms.count());
}

std::string settings_digest(const settings& s) {
    std::string text = fmt::format("merge {} {} {} compact {}", s.merge_small_bytes,
                                   s.merge_target_bytes, s.merge_min_objects, s.compact_max_bytes);
    for (const auto& [k, v] : s.topic_defaults) text += fmt::format(";{}={}", k, v);
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    return fmt::format("{:016x}", h);
}

result<std::vector<due_job>> due_jobs(pg_database& db, const std::string& kind,
                                      const std::string& digest, int64_t now_ms) {
    std::vector<due_job> out;
    if (kind == cleanup_job) {
        auto r = db.exec(std::string("SELECT 1 FROM sluice_job_leases l WHERE ") + key_where +
                             " AND (NOT " + lease_free + " OR next_due_at > CURRENT_TIMESTAMP)",
                         key_params({kind, "", -1}));
        if (!r) return r.err();
        if (r->size() == 0) out.push_back({{kind, "", -1}, std::nullopt});
        return out;
    }
    // A partition whose job ran and saw it as it is now (same high watermark, log start,
    // configs, settings) and whose wake time has not come is not due: an idle partition
    // costs no lease transaction.
    auto r = db.exec(
        std::string(
            "SELECT p.topic_id, p.partition_id, p.high_watermark, p.log_start_offset, "
            "COALESCE(c.digest, '') FROM sluice_partitions p LEFT JOIN (SELECT topic_id, "
            "MD5(STRING_AGG(config_key || '=' || config_value, ';' ORDER BY config_key)) AS "
            "digest FROM sluice_topic_configs GROUP BY topic_id) c ON c.topic_id = p.topic_id "
            "LEFT JOIN sluice_job_leases l ON l.job_kind = $1 AND l.topic_id = CAST(p.topic_id "
            "AS VARCHAR(32)) AND l.partition_id = p.partition_id WHERE l.job_kind IS NULL OR (") +
            lease_free +
            " AND l.next_due_at <= CURRENT_TIMESTAMP AND (l.seen_high_watermark IS NULL OR "
            "l.seen_high_watermark <> p.high_watermark OR l.seen_log_start <> p.log_start_offset "
            "OR l.seen_configs <> COALESCE(c.digest, '') OR l.seen_settings <> $2 OR l.wake_ms "
            "<= CAST($3 AS BIGINT))) ORDER BY p.topic_id, p.partition_id",
        {kind, digest, std::to_string(now_ms)});
    if (!r) return r.err();
    for (size_t i = 0; i < r->size(); ++i)
        out.push_back({{kind, r->text(i, 0), static_cast<int32_t>(r->int64(i, 1))},
                       partition_seen{r->int64(i, 2), r->int64(i, 3), r->text(i, 4)}});
    return out;
}

result<std::optional<int64_t>> take_lease(pg_database& db, const job_key& job, const settings& s) {
    return db.transact<std::optional<int64_t>>(
        isolation_level::read_committed, [&](pg_transaction& tx) -> result<std::optional<int64_t>> {
            // The first take of a job makes its row (free and due); brokers making it at
            // once: the others' inserts wait for the first and do nothing.
            auto ins = tx.exec(
                "INSERT INTO sluice_job_leases (job_kind, topic_id, partition_id, holder_broker, "
                "holder_incarnation, fencing_token, acquired_at, lease_expires_at, next_due_at, "
                "runs) VALUES ($1, $2, CAST($3 AS INTEGER), NULL, NULL, 0, NULL, "
                "CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 0) "
                "ON CONFLICT (job_kind, topic_id, partition_id) DO NOTHING",
                key_params(job));
            if (!ins) return ins.err();
            auto row = tx.exec(std::string("SELECT fencing_token, CASE WHEN ") + lease_free +
                                   " AND next_due_at <= CURRENT_TIMESTAMP THEN 1 ELSE 0 END FROM "
                                   "sluice_job_leases l WHERE " +
                                   key_where + " FOR UPDATE",
                               key_params(job));
            if (!row) return row.err();
            if (row->size() != 1 || row->int64(0, 1) == 0) return std::optional<int64_t>{};
            const int64_t token = row->int64(0, 0) + 1;
            auto params = key_params(job);
            params.emplace_back(std::to_string(s.broker_id));
            params.emplace_back(std::to_string(s.incarnation));
            params.emplace_back(std::to_string(token));
            params.emplace_back(interval_text(s.lease));
            auto up = tx.exec(
                std::string("UPDATE sluice_job_leases SET holder_broker = CAST($4 AS INTEGER), "
                            "holder_incarnation = CAST($5 AS BIGINT), fencing_token = CAST($6 AS "
                            "BIGINT), acquired_at = CURRENT_TIMESTAMP, lease_expires_at = "
                            "CURRENT_TIMESTAMP + CAST($7 AS INTERVAL) WHERE ") +
                    key_where,
                params);
            if (!up) return up.err();
            return std::optional<int64_t>{token};
        });
}

result<void> check_lease(pg_transaction& tx, const job_key& job, int64_t token) {
    auto params = key_params(job);
    params.emplace_back(std::to_string(token));
    auto row = tx.exec(
        std::string("SELECT CASE WHEN fencing_token = CAST($4 AS BIGINT) AND lease_expires_at > "
                    "CURRENT_TIMESTAMP THEN 1 ELSE 0 END, fencing_token, holder_broker FROM "
                    "sluice_job_leases WHERE ") +
            key_where + " FOR UPDATE",
        params);
    if (!row) return row.err();
    if (row->size() == 1 && row->int64(0, 0) == 1) return {};
    return error{errc::in_use,
                 fmt::format("the {} job's lease on {}/{} (token {}) passed{}: committing nothing",
                             job.kind, job.topic_id, job.partition, token,
                             row->size() == 1 && row->int64(0, 1) != token
                                 ? fmt::format(" and broker {} took it (token {})", row->text(0, 2),
                                               row->int64(0, 1))
                                 : std::string())};
}

result<void> finish_lease(pg_database& db, const job_key& job, int64_t token, const settings& s,
                          const std::optional<std::string>& failure,
                          const std::optional<finished_state>& state) {
    auto params = key_params(job);
    params.emplace_back(std::to_string(token));
    params.emplace_back(interval_text(s.interval));
    params.emplace_back(failure ? "0" : "1");
    params.emplace_back(failure);
    const bool keep = state && !failure;
    params.emplace_back(keep ? pg_param(std::to_string(state->seen.high_watermark)) : std::nullopt);
    params.emplace_back(keep ? pg_param(std::to_string(state->seen.log_start)) : std::nullopt);
    params.emplace_back(keep ? pg_param(state->seen.configs) : std::nullopt);
    params.emplace_back(keep ? pg_param(state->settings) : std::nullopt);
    params.emplace_back(keep && state->wake_ms ? pg_param(std::to_string(*state->wake_ms))
                                               : std::nullopt);
    auto up = db.exec(
        std::string(
            "UPDATE sluice_job_leases SET lease_expires_at = CURRENT_TIMESTAMP, "
            "next_due_at = CURRENT_TIMESTAMP + CAST($5 AS INTERVAL), runs = runs + "
            "CAST($6 AS BIGINT), last_done_at = CURRENT_TIMESTAMP, last_error = $7, "
            "seen_high_watermark = CAST($8 AS BIGINT), seen_log_start = CAST($9 AS BIGINT), "
            "seen_configs = $10, seen_settings = $11, wake_ms = CAST($12 AS BIGINT) WHERE ") +
            key_where + " AND fencing_token = CAST($4 AS BIGINT)",
        params);
    if (!up) return up.err();
    return {};
}

}  // namespace sluice::shared::maintenance
