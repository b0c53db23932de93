#pragma once

// Inside src/shared/maintenance: the job lease (job_lease.cc) and the jobs (merge.cc,
// retention.cc, cleanup.cc) that run_once (maintenance.cc) runs under it.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "catalog/topic_config.h"
#include "shared/maintenance/maintenance.h"

namespace sluice::shared::maintenance {

struct job_key {
    std::string kind;
    std::string topic_id;    // "" for a cluster-wide job
    int32_t partition = -1;  // -1 for a cluster-wide job
};

// "N milliseconds", for CAST(... AS INTERVAL).
std::string interval_text(std::chrono::milliseconds ms);

// What a per-partition job found of its partition when it was listed as due: recorded
// with the lease when the job succeeds, so that it is due again only once something
// changed (new batches, the log start moved, the topic's configs changed).
struct partition_seen {
    int64_t high_watermark = 0;
    int64_t log_start = 0;
    std::string configs;  // a digest of the topic's sluice_topic_configs rows
};

struct due_job {
    job_key key;
    std::optional<partition_seen> seen;  // nullopt for the cleanup
};

// A digest of the settings a job's outcome depends on (the topic config defaults, the
// merge and compaction sizes): a broker with other settings runs the jobs again.
std::string settings_digest(const settings& s);

// The jobs of `kind` that are due. The cleanup: its row absent, or free and due. A
// per-partition kind: every partition whose lease row is absent, or free, due (its
// interval passed) and either never finished successfully or changed since (high
// watermark, log start, topic configs, `digest` of the settings), or whose wake time
// (milliseconds since the epoch, against `now_ms`) came. One query.
result<std::vector<due_job>> due_jobs(pg_database& db, const std::string& kind,
                                      const std::string& digest, int64_t now_ms);

// Takes the job's lease when it is free (expired) and due: the holder, lease_expires_at =
// now + s.lease, fencing_token + 1. Returns the token, or nullopt when another broker
// holds it or it is not due.
result<std::optional<int64_t>> take_lease(pg_database& db, const job_key& job, const settings& s);

// In the job's final transaction, before its writes: locks the lease row and fails with
// in_use unless it still carries `token` and has not expired (the job was too slow and
// another broker may hold it now: it must commit nothing).
result<void> check_lease(pg_transaction& tx, const job_key& job, int64_t token);

// What a successful per-partition job leaves in its lease row: what it saw, and when it
// must run again even if nothing changes.
struct finished_state {
    partition_seen seen;
    std::string settings;            // settings_digest
    std::optional<int64_t> wake_ms;  // nullopt: only when something changes
};

// Ends the lease: done (next due after s.interval, runs + 1) or failed (last_error kept).
// `state` (kept only when the job succeeded) makes the job due again only on a change;
// without it the job is due again after the interval. Nothing when another broker took
// the lease since.
result<void> finish_lease(pg_database& db, const job_key& job, int64_t token, const settings& s,
                          const std::optional<std::string>& failure,
                          const std::optional<finished_state>& state = std::nullopt);

// One row of a partition's batch index, as merging and compaction move it.
struct batch_row {
    int64_t base = 0;
    std::string object;
    uint64_t position = 0;
    uint64_t size = 0;
    bool operator==(const batch_row&) const = default;
};

// Adjacent rows of one object, contiguous in it: one range read.
struct batch_piece {
    size_t first = 0;  // index in the rows
    size_t count = 0;
    uint64_t bytes = 0;
};

// The rows (in offset order) as runs of one object each, read in one range.
std::vector<batch_piece> pieces_of(const std::vector<batch_row>& rows);

// The bytes of pieces [begin, end), byte for byte as stored, each row checked to be one
// whole record batch of its indexed size.
result<std::string> copy_rows(object_store& store, const std::vector<batch_row>& rows,
                              const std::vector<batch_piece>& pieces, size_t begin, size_t end);

// In a job's final transaction (the partition's row locked): whether the partition's
// rows from rows.front().base to rows.back().base are still exactly `rows` (a merge,
// compaction, retention or DeleteRecords may have changed them since they were read).
result<bool> rows_unchanged(pg_transaction& tx, const job_key& job,
                            const std::vector<batch_row>& rows);

// The topic's configs as the catalog holds them (sluice_topic_configs), for
// catalog::effective_config with settings::topic_defaults.
result<catalog::topic_info> load_topic_configs(pg_database& db, const std::string& topic_id);
int64_t config_int(const catalog::topic_info& topic, const settings& s, const std::string& key,
                   int64_t fallback);

// What a job did, for its job_run's detail and the pass's counters.
struct job_outcome {
    std::string detail;
    bool more = false;  // work left (a cap reached): due again after the interval
    // Due again at this time (milliseconds since the epoch, the brokers' clock) even when
    // the partition does not change: retention's next expiry, compaction's time limits.
    std::optional<int64_t> wake_ms;
    // The log start the job left behind, when it moved it itself (retention): not a
    // change that makes its own job due again.
    std::optional<int64_t> log_start;
};

// The jobs. Each runs with the lease held and checks it (check_lease) in the
// transaction that makes its work visible.
result<job_outcome> merge_partition(pg_database& db, object_store& store, const settings& s,
                                    const job_key& job, int64_t token, pass_stats& stats);
result<job_outcome> retain_partition(pg_database& db, const settings& s, const job_key& job,
                                     int64_t token, pass_stats& stats);
result<job_outcome> compact_partition(pg_database& db, object_store& store, const settings& s,
                                      const job_key& job, int64_t token, pass_stats& stats);
result<job_outcome> clean_objects(pg_database& db, object_store& store, const settings& s,
                                  const job_key& job, int64_t token, pass_stats& stats);

// Locks the partition's row (the lock the produce commit takes too) and returns its log
// start and high watermark; not_found when the partition does not exist.
result<std::pair<int64_t, int64_t>> lock_partition(pg_transaction& tx, const std::string& topic_id,
                                                   int32_t partition);

// Marks `keys` (objects batches pointed into before this transaction deleted or moved
// them) 'deleting' where no batch references them any more. Locks their rows first, in
// key order, so that two transactions moving the last batches out of one object at once
// queue and the second sees the first's work. Returns how many it marked.
result<uint64_t> mark_unreferenced(pg_transaction& tx, std::vector<std::string> keys);

}  // namespace sluice::shared::maintenance
