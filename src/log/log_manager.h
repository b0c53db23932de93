#pragma once

// All partition logs of a broker under <data_dir>/logs, the descriptor cache they
// share, crash recovery at start-up, and the flusher thread (group commit). Directory
// layout and the clean-shutdown marker: docs/formats/data-dir.md.
//
// Memory: a declared, never-used partition costs sizeof(partition_log) = 96 bytes
// (x86-64, libstdc++) inside its topic's deque, about 103 bytes measured with malloc
// overhead (log_manager_test, 20,000 partitions), and nothing on disk.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/worker_group.h"
#include "log/partition_log.h"
#include "log/recovery.h"

namespace sluice::log {

class log_manager final : private dirty_sink {
  public:
    struct options {
        std::filesystem::path data_dir;
        size_t max_open_files = 1024;
        // Cleaner I/O budget (bytes read + written per second, per pass), so compaction
        // leaves the disk to producers; <= 0: unlimited. 32 MiB/s is a fraction of what
        // any SSD sustains and cleans a 1 GiB segment in about a minute.
        int64_t cleaner_io_bytes_per_sec = 32LL << 20;
        // Appends of at most this many bytes are also written to the journal (journal.h),
        // so that a flush pass fsyncs one journal file rather than each partition they
        // went to; larger ones are fsynced in their partition only, to write big data once.
        // 0: no journal.
        size_t journal_max_append = 64 << 10;
        int64_t journal_file_bytes = 8 << 20;  // a journal file is sealed at this size
        // When appends arrived during a flush pass, the next pass starts no sooner than
        // this long after the previous one started; after idle, a pass starts at once.
        // Fewer, fuller fsyncs for a disk whose flushes queue up under a trickle of small
        // requests; each pass waits longer, so the median rises. 0: back to back (no
        // setting measured better on every load here; docs/benchmarks-history.md).
        std::chrono::microseconds flush_pass_interval{0};
        // producer.id.expiration.ms (partition_log.h's log_context).
        int64_t producer_id_expiration_ms = 24 * 60 * 60 * 1000;
        // How soon a partition whose load failed is loaded again (log_context).
        std::chrono::milliseconds load_retry_interval{2000};
    };

    // What open() found, for the start-up log line.
    struct open_summary {
        bool clean_shutdown = false;     // marker found (or a fresh data directory)
        bool fresh = false;              // no logs yet: a new data directory
        size_t partitions_scanned = 0;   // recovered eagerly after an unclean shutdown
        size_t partitions_repaired = 0;  // of those, changed by recovery
        size_t partitions_failed = 0;    // recovery failed; they report errors on use
        int64_t bytes_truncated = 0;
        int64_t indexes_rebuilt = 0;
        int64_t corruptions = 0;            // damage in sealed segments, left as is
        int64_t append_time_estimates = 0;  // last segments whose append times were estimated
        // The previous run started in this boot of the OS (logs/.boot-id): after an
        // unclean shutdown, the process crashed, not the OS.
        bool same_boot = false;
        // Journal replay (after any shutdown): entries read, entries whose records some
        // partition lacked and got back, partitions those went to, and entries for topics
        // no longer declared (or declared anew under another id).
        size_t journal_entries = 0;
        size_t journal_entries_replayed = 0;
        size_t journal_partitions_replayed = 0;
        size_t journal_entries_stale = 0;
    };

    explicit log_manager(options opts);  // no I/O
    ~log_manager();                      // close() unless already closed
    log_manager(const log_manager&) = delete;
    log_manager& operator=(const log_manager&) = delete;

    // Reads and removes the clean-shutdown marker; without it every partition directory
    // is recovered now. Then replays the journal into the declared topics' partitions:
    // declare them (add_topic) first, as the broker does from its catalog; entries of
    // topics not declared are dropped. Empties the trash and starts the flusher. Call
    // before any other use. Errors: io_error.
    result<open_summary> open();

    // Declares (or re-configures, or grows) a topic's partitions. Creates nothing on
    // disk: a partition's directory appears with its first append.
    void add_topic(const std::string& topic, int32_t partitions, const log_config& cfg);
    // Forgets the topic and deletes its data (rename to <logs>/.trash, then remove).
    // Its partition_log pointers are invalid afterwards; its pending when_durable
    // callbacks get errc::not_found. Errors: not_found, io_error.
    result<void> remove_topic(const std::string& topic);
    // nullptr when the topic or partition is unknown. Valid until remove_topic.
    partition_log* get(const std::string& topic, int32_t partition);
    // For readers on other threads (SQL) that hold a topic across calls: the topic stays
    // alive, and its partition_log pointers valid, while the pointer is held; after
    // remove_topic, its partitions answer not_found.
    std::shared_ptr<topic_state> topic(const std::string& name);
    // nullptr when t has no such partition.
    partition_log* partition(topic_state& t, int32_t partition);

    // done() runs on the flusher thread once everything appended to `log` up to and
    // including last_offset is on stable storage; with io_error when the fsync failed,
    // with shutting_down (on the calling thread) after close().
    void when_durable(partition_log* log, offset_t last_offset,
                      std::function<void(result<void>)> done);
    // Called on the flusher thread after a pass with the partitions whose durable
    // offset advanced (their high watermark moved at the append).
    void set_high_watermark_listener(std::function<void(const std::vector<topic_partition>&)> fn);

    // What a retention pass did.
    struct retention_stats {
        size_t partitions_touched = 0;  // lost at least one segment
        size_t segments_deleted = 0;
        int64_t bytes_deleted = 0;     // of their data files
        size_t partitions_loaded = 0;  // not loaded before; this pass loaded them to trim
        size_t partitions_failed = 0;  // errors, logged; retried at the next pass
    };
    // One retention pass; the caller schedules it (Kafka's
    // log.retention.check.interval.ms). For every partition of each topic with
    // delete_enabled, deletes the oldest segments, in order, while the segment's largest
    // record timestamp (the append time on LogAppendTime topics) is more than
    // retention_ms before `now`, or the partition without it still holds at least
    // retention_bytes (data files; the active segment never goes for size). Only
    // segments wholly below the high watermark go. An expired, non-empty active segment
    // is first replaced by an empty one at the log end. The log start offset moves to the
    // first remaining segment, durably. Configs are read afresh for each topic, so
    // add_topic changes apply at the next pass.
    //
    // Partitions not loaded since start-up (never used: a broker restarted after a week
    // may hold many) are judged from their files without loading them: one directory
    // listing (names and sizes) and the last entry of the oldest segment's time index,
    // a lower bound of its largest timestamp. Only those that may have something to
    // delete are loaded, and then trimmed exactly as loaded ones; the others cost those
    // few system calls per pass and no memory. A partition directory of an undeclared
    // topic is not looked at.
    retention_stats enforce_retention(timestamp_ms now);

    // What a compaction pass did.
    struct compaction_stats {
        size_t partitions_cleaned = 0;  // a pass ran (ratio or max lag called for it)
        size_t segments_rewritten = 0;
        int64_t records_removed = 0;
        int64_t bytes_read = 0;
        int64_t bytes_written = 0;
        int64_t bytes_reclaimed = 0;  // data files replaced, less their rewrites
        size_t partitions_failed = 0;  // errors, logged; retried at the next pass
    };
    // One compaction pass over every partition of each topic with `compact` (see
    // partition_log::clean); the caller schedules it, as enforce_retention, from one
    // background thread. Partitions not loaded since start-up are loaded only when they
    // hold more than one segment. I/O is throttled to options::cleaner_io_bytes_per_sec.
    compaction_stats enforce_compaction(timestamp_ms now);
    // Makes a running compaction pass, and every later one, stop at once (between
    // reads, or in a throttle sleep) leaving the old segments: call before joining the
    // thread that runs passes.
    void stop_compaction() { _clean_cancel.fetch_add(1); }

    // Loads again, in the background, each partition out of service after a failed load
    // or start-up recovery whose retry is due (log_context::load_retry_interval), so that
    // it comes back without a restart even if nothing uses it; the broker calls it
    // periodically. Returns how many came back.
    size_t retry_failed_loads();

    // The space reserve (docs/operations.md, "Full disk"): <logs>/.space-reserve, a file of
    // reserve_bytes kept allocated so that the writes that free space (the catalog commit
    // of DeleteTopics, the log-start-offset file of DeleteRecords) can be made on a full
    // disk. with_spare_space runs fn; when it fails for want of space and the reserve is
    // held, the reserve is deleted and fn runs once more. refill_spare_space makes the
    // file again when it is missing and the disk has room (open(), after deletions, and
    // at every retention pass); false when it could not.
    static constexpr int64_t reserve_bytes = 4 << 20;
    template <typename Fn>
    auto with_spare_space(Fn&& fn) -> decltype(fn()) {
        auto r = fn();
        if (!r && is_no_space(r.err()) && release_spare_space()) r = fn();
        return r;
    }
    bool refill_spare_space();
    bool release_spare_space();  // true when a reserve was there to delete
    // The same for the logs directory `logs_dir`, before (or without) a log manager:
    // the WAL index of a SQLite database opened on a full disk (catalog/shm_vfs.h).
    static bool release_spare_space_in(const std::filesystem::path& logs_dir);

    // Flushes everything, stops the flusher, saves the active indexes, closes files,
    // writes the clean-shutdown marker (not when a partition has failed).
    void close();

    // Holds the flusher before its next pass (tests; maintenance). close() still flushes.
    void set_flush_paused(bool paused);

    // Introspection (tests, metrics).
    const fd_cache& files() const { return _ctx.files; }
    uint64_t flush_passes() const;
    const fs::path& logs_dir() const { return _ctx.logs_dir; }

  private:
    struct waiter {
        partition_log* log;
        offset_t last_offset;
        std::function<void(result<void>)> done;
    };
    using ready_list = std::vector<std::pair<std::function<void(result<void>)>, result<void>>>;

    void enqueue_dirty(partition_log* p) override;
    void flusher_loop();
    // Flusher, between passes: fsyncs one partition of the oldest sealed journal file
    // (every partition of it when files pile up), and recycles the file once all of its
    // partitions are done.
    void checkpoint_step();
    result<void> replay_journal(open_summary& sum);
    // Data files whose whole pages below `end` the journal made durable: the flusher
    // starts their writeback after answering the pass's waiters (see flusher_loop).
    struct writeback {
        std::shared_ptr<file> data;
        partition_log::byte_range range;
    };
    void flush_pass(std::vector<partition_log*>& dirty, std::vector<waiter>& waiters,
                    ready_list& ready, std::vector<waiter>& unresolved,
                    std::vector<topic_partition>& advanced, std::vector<writeback>& writebacks);
    result<void> recover_all(open_summary& sum, bool same_boot);
    void retain(partition_log& p, const log_config& cfg, timestamp_ms now, retention_stats& stats);
    // Retention and compaction walk topics alike: each under _retention_mu (so
    // remove_topic waits for at most one topic), stopping once close() turned them off or
    // fn returns false.
    void each_topic_for_background_work(
        const std::function<bool(const std::string&, const log_config&,
                                 const std::vector<partition_log*>&)>& fn);
    int32_t index_interval_for(const std::string& dir_name);

    options _opts;
    log_context _ctx;
    counting_reporter _reporter;

    mutable std::shared_mutex _topics_mu;
    std::unordered_map<std::string, std::shared_ptr<topic_state>> _topics;

    // Flusher state, under _q_mu.
    mutable std::mutex _q_mu;
    std::condition_variable _q_cv;
    std::vector<partition_log*> _dirty;  // O(dirty) bookkeeping: each partition once
    std::vector<waiter> _waiters;
    ready_list _ready;
    std::function<void(const std::vector<topic_partition>&)> _listener;
    bool _stopping = false;
    bool _paused = false;
    uint64_t _passes = 0;
    // Held for a whole flush pass, so remove_topic never frees a partition mid-sync.
    std::mutex _pass_mu;

    // Held by a retention pass while it works on one topic, and by remove_topic before it
    // frees a topic's partitions and by close(). _retention_on says whether passes may
    // run (between open() and close()).
    std::mutex _retention_mu;
    bool _retention_on = false;
    // Non-zero: compaction passes stop (stop_compaction, or remove_topic while it waits
    // for a pass to leave the topic).
    std::atomic<int> _clean_cancel{0};

    std::unique_ptr<journal> _journal;
    // Sealed journal files whose partitions still need an fsync (flusher thread only).
    struct checkpoint {
        journal::sealed_file file;
        size_t next = 0;  // the first partition not yet fsynced
        bool failed = false;
    };
    std::deque<checkpoint> _checkpoints;

    std::thread _flusher;
    // The flusher's helpers for a pass's segment fsyncs (created with the flusher).
    std::unique_ptr<worker_group> _syncers;
    bool _opened = false;
    bool _closed = false;
};

}  // namespace sluice::log
