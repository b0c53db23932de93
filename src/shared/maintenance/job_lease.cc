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

result<std::vector<job_key>> due_jobs(pg_database& db, const std::string& kind) {
    std::vector<job_key> out;
    if (kind == cleanup_job) {
        auto r = db.exec(std::string("SELECT 1 FROM sluice_job_leases l WHERE ") + key_where +
                             " AND (NOT " + lease_free + " OR next_due_at > CURRENT_TIMESTAMP)",
                         key_params({kind, "", -1}));
        if (!r) return r.err();
        if (r->size() == 0) out.push_back({kind, "", -1});
        return out;
    }
    auto r = db.exec(
        std::string("SELECT p.topic_id, p.partition_id FROM sluice_partitions p LEFT JOIN "
                    "sluice_job_leases l ON l.job_kind = $1 AND l.topic_id = CAST(p.topic_id AS "
                    "VARCHAR(32)) AND l.partition_id = p.partition_id WHERE l.job_kind IS NULL "
                    "OR (") +
            lease_free + " AND l.next_due_at <= CURRENT_TIMESTAMP) ORDER BY p.topic_id, " +
            "p.partition_id",
        {kind});
    if (!r) return r.err();
    for (size_t i = 0; i < r->size(); ++i)
        out.push_back({kind, r->text(i, 0), static_cast<int32_t>(r->int64(i, 1))});
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
                          const std::optional<std::string>& failure) {
    auto params = key_params(job);
    params.emplace_back(std::to_string(token));
    params.emplace_back(interval_text(s.interval));
    params.emplace_back(failure ? "0" : "1");
    params.emplace_back(failure);
    auto up = db.exec(
        std::string(
            "UPDATE sluice_job_leases SET lease_expires_at = CURRENT_TIMESTAMP, "
            "next_due_at = CURRENT_TIMESTAMP + CAST($5 AS INTERVAL), runs = runs + "
            "CAST($6 AS BIGINT), last_done_at = CURRENT_TIMESTAMP, last_error = $7 WHERE ") +
            key_where + " AND fencing_token = CAST($4 AS BIGINT)",
        params);
    if (!up) return up.err();
    return {};
}

}  // namespace sluice::shared::maintenance
