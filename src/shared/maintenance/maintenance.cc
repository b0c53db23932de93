// run_once (maintenance.h): the due jobs, each under its lease.

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "common/logging.h"
#include "shared/maintenance/jobs.h"

namespace sluice::shared::maintenance {

namespace {

result<job_outcome> run_job(pg_database& db, object_store& store, const settings& s,
                            const job_key& job, int64_t token, pass_stats& stats) {
    if (job.kind == merge_job) return merge_partition(db, store, s, job, token, stats);
    if (job.kind == retention_job) return retain_partition(db, s, job, token, stats);
    if (job.kind == compact_job) return compact_partition(db, store, s, job, token, stats);
    return clean_objects(db, store, s, job, token, stats);
}

}  // namespace

result<pass_stats> run_once(pg_database& db, object_store& store, const settings& s) {
    pass_stats stats;
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    const std::string digest = settings_digest(s);
    for (const std::string& kind : s.jobs) {
        if (kind != merge_job && kind != retention_job && kind != compact_job &&
            kind != cleanup_job)
            return error{errc::invalid_config, "no background job '" + kind + "'"};
        const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
        auto due = due_jobs(db, kind, digest, now_ms);
        if (!due) return due.err();
        // Brokers running passes at once mostly try different partitions first.
        std::shuffle(due->begin(), due->end(), rng);
        for (const auto& [job, seen] : *due) {
            if (stats.jobs.size() >= s.max_jobs_per_pass) return stats;
            auto token = take_lease(db, job, s);
            if (!token) return token.err();
            if (!*token) continue;  // another broker has it, or ran it since
            auto outcome = run_job(db, store, s, job, **token, stats);
            job_run run{kind, job.topic_id, job.partition, **token, bool(outcome), {}};
            run.detail = outcome ? outcome->detail : outcome.err().message;
            if (!outcome)
                log_warn("shared", "background job {} on {}/{}: {}", kind, job.topic_id,
                         job.partition, run.detail);
            // Done with nothing left: due again when the partition changes (or wakes).
            std::optional<finished_state> state;
            if (outcome && seen && !outcome->more) {
                state = finished_state{*seen, digest, outcome->wake_ms};
                if (outcome->log_start) state->seen.log_start = *outcome->log_start;
            }
            auto fin = finish_lease(db, job, **token, s,
                                    outcome ? std::nullopt : std::optional(run.detail), state);
            if (!fin) return fin.err();
            stats.jobs.push_back(std::move(run));
        }
    }
    return stats;
}

}  // namespace sluice::shared::maintenance
