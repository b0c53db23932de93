#pragma once

// Shared mode's background work (docs/shared-mode.md, "Background work"): merging a
// partition's batches out of many small objects into one larger object, retention
// (retention.ms, retention.bytes), and deleting objects that no batch references (those
// merging or retention left, and those a broker that died between its upload and its
// commit left in the store). Each job runs under a lease in the shared catalog
// (sluice_job_leases, docs/formats/shared-catalog.md), once per partition and interval,
// on whichever broker takes it first, and only when its partition changed since it last
// ran (or retention's oldest batch expires); a broker that dies holding a lease loses it
// when the lease passes on the database's clock.
//
// A broker calls run_once() from a periodic thread (every few seconds: a pass that finds
// nothing due costs one query per job kind). DeleteRecords is advance_log_start(), which a
// handler calls directly (no lease: it is one transaction).

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "shared/object_store.h"
#include "shared/pg_database.h"

namespace sluice::shared::maintenance {

// The job kinds, as sluice_job_leases.job_kind names them.
inline constexpr const char* merge_job = "merge";          // per partition
inline constexpr const char* retention_job = "retention";  // per partition
inline constexpr const char* compact_job = "compact";      // per partition
inline constexpr const char* cleanup_job = "cleanup";      // one for the cluster

struct settings {
    int32_t broker_id = 0;
    int64_t incarnation = 0;  // the broker's (broker_registry), recorded with its leases
    // How often each job runs for a partition, cluster-wide: a job done is next due this
    // long after it finished, whichever broker runs it (once the partition changed).
    std::chrono::milliseconds interval{60000};
    // How long a job's lease lasts; a job checks it still holds it (fencing token, not
    // expired) in its final transaction, so a job slower than this commits nothing.
    std::chrono::milliseconds lease{120000};
    // An object no batch references any more is deleted from the store this long after
    // (reads that took their batch rows before may still read it), and an object in the
    // store that the catalog does not know (a broker died between upload and commit) once
    // it is this old. Longer than any upload-to-commit (the database's retry deadline).
    std::chrono::milliseconds delete_grace{300000};
    // Merging: a partition's part of one object smaller than merge_small_bytes is small;
    // a run of at least merge_min_objects small parts (in offset order) is copied into one
    // object of at most merge_target_bytes.
    uint64_t merge_small_bytes = 4u << 20;
    uint64_t merge_target_bytes = 64u << 20;
    size_t merge_min_objects = 8;
    // Where the brokers' objects are (shared_log_config::object_prefix): merged objects go
    // to OBJECT_PREFIX/merged/TOPIC_ID/PARTITION/..., and the cleanup lists OBJECT_PREFIX/.
    std::string object_prefix = "data";
    // Topic config defaults by topic config name ("retention.ms"), as the broker's own
    // settings give them (catalog::effective_config's broker_defaults).
    std::map<std::string, std::string> topic_defaults;
    // The jobs this broker takes (all four by default).
    std::vector<std::string> jobs{merge_job, retention_job, compact_job, cleanup_job};
    // Compaction reads at most this many bytes of a partition's batches per run (the
    // rest waits for the next run): its rewrite is held in memory.
    uint64_t compact_max_bytes = 64u << 20;
    // At most this many jobs per pass (the rest wait for the next pass or another broker).
    size_t max_jobs_per_pass = 64;
};

// One job run by this pass.
struct job_run {
    std::string kind;
    std::string topic_id;  // "" for the cleanup
    int32_t partition = -1;
    int64_t fencing_token = 0;
    bool ok = true;
    std::string detail;  // what it did, or its error
};

struct pass_stats {
    std::vector<job_run> jobs;
    // Merging
    uint64_t objects_merged = 0;  // objects written by merging
    uint64_t batches_moved = 0;
    uint64_t bytes_copied = 0;
    // Compaction
    uint64_t records_compacted = 0;  // records compaction removed
    // Retention and cleanup
    uint64_t batches_deleted = 0;
    uint64_t objects_marked = 0;   // no batch references them: deleted after the grace
    uint64_t objects_deleted = 0;  // from the store (and their rows)
    uint64_t orphans_deleted = 0;  // in the store, unknown to the catalog, past the grace
};

// One pass: takes the lease of each due job in turn (partitions in random order, so
// brokers running passes at once spread over them) and runs it. Errors of one job are in
// its job_run; the pass fails only when the database cannot be reached.
result<pass_stats> run_once(pg_database& db, object_store& store, const settings& s);

// DeleteRecords at the store level: the partition's log start moves to `offset` (-1: the
// high watermark), its batches wholly below it are deleted from the index, and objects
// left without batches are marked for deletion. One transaction, under the partition's
// row lock. Returns the log start after it (unchanged when `offset` is below it).
// Errors: out_of_range past the high watermark, not_found for an unknown partition.
result<int64_t> advance_log_start(pg_database& db, const std::string& topic_id, int32_t partition,
                                  int64_t offset);

}  // namespace sluice::shared::maintenance
