#pragma once

// One partition's log: an ordered list of segments, of which the last is active
// (appended to). Offsets are assigned here. With one replica the high watermark is the
// log end offset: a record is readable (Fetch, ListOffsets, SQL) once appended, before
// any answer to its producer, as in Kafka. The durable offset, the first offset not yet
// on stable storage, trails it; the manager's flusher advances it (group commit), and
// acks=-1 answers and expansions wait for it.
// Invariant: log start <= durable offset <= high watermark == log end offset, except
// that the log start may pass the durable offset after DeleteRecords (never the end).
//
// Threading: the event-loop thread appends and reads, the flusher thread syncs, other
// threads (SQL) may read; one mutex per partition serializes them, and fsync runs
// outside it so an append never waits for the disk.
//
// Memory: a declared partition that was never used holds only this object (see
// log_manager.h for the measured size); segments, descriptors and indexes load on
// first use.

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "log/fd_cache.h"
#include "log/io_throttle.h"
#include "log/journal.h"
#include "log/log_types.h"
#include "log/partition_store.h"
#include "log/producer_state.h"
#include "log/recovery.h"
#include "log/segment.h"
#include "protocol/control_batch.h"

namespace sluice::log {

class partition_log;
class record_selector;  // log/compaction_filter.h

// The flusher's dirty list, as a partition sees it.
class dirty_sink {
  public:
    virtual void enqueue_dirty(partition_log* p) = 0;

  protected:
    ~dirty_sink() = default;
};

// What every partition of a manager shares.
struct log_context {
    log_context(fs::path dir, size_t max_open_files)
        : logs_dir(std::move(dir)), files(max_open_files) {}
    fs::path logs_dir;  // <data_dir>/logs
    fd_cache files;
    recovery_reporter* reporter = nullptr;
    dirty_sink* dirty = nullptr;
    // Appends of at most journal_max_append bytes also go to the journal (null: none), so
    // the flusher need not fsync their partitions (log_manager.h, journal.h).
    journal* shared_journal = nullptr;
    size_t journal_max_append = 0;
    // producer.id.expiration.ms: a producer silent this long is forgotten (Kafka's
    // default, one day).
    int64_t producer_id_expiration_ms = 24 * 60 * 60 * 1000;
    // A partition whose load failed (a full disk at start-up, say) is out of service and
    // loaded again at its first use this long after the failure: often enough that freed
    // space brings it back within seconds, rarely enough that a partition that cannot
    // load does not rescan its files at every request.
    std::chrono::milliseconds load_retry_interval{2000};
    // The previous run crashed in this boot of the OS (recover_partition's same_boot).
    bool same_boot = false;
    // Partitions out of service after a failed load or start-up recovery, for the
    // manager's background retry (log_manager::retry_failed_loads).
    std::mutex retry_mu;
    std::set<topic_partition> load_retries;
};

struct topic_state;

// A byte range of one segment's data file, for sending without copying. It starts at a
// batch boundary and ends at or below the high watermark; it may end inside a batch
// when max_bytes cuts it there, as Kafka's own reads do (clients drop a partial
// trailing batch and fetch it next time). Bytes in the range never change while the
// file is held.
struct read_slice {
    std::shared_ptr<file> data_file;  // null when size is 0
    int64_t position = 0;
    size_t size = 0;
    offset_t high_watermark = 0;
    offset_t last_stable_offset = 0;
    offset_t log_start_offset = 0;
    offset_t log_end_offset = 0;
};

// The local implementation of partition_store (partition_store.h), whose comments say
// what its methods do; what is here is local-only or how this one does it.
class partition_log final : public partition_store {
  public:
    partition_log(topic_state* topic, int32_t partition, log_context* ctx)
        : _topic(topic), _ctx(ctx), _partition(partition) {}
    partition_log(const partition_log&) = delete;
    partition_log& operator=(const partition_log&) = delete;
    ~partition_log();

    // partition_store: append, then `done` at once, on this thread.
    void submit_append(std::span<uint8_t> payload,
                       const std::vector<protocol::validated_batch>& batches, timestamp_ms now,
                       append_done done) override;

    // `payload` holds the batches protocol::validate_batches returned. Assigns offsets
    // from log_end_offset() (rewriting each base offset) and, for LogAppendTime topics,
    // stamps `now`. One write to the active segment, rolling first when segment_bytes or
    // segment_ms say so (the old segment is fsynced before the new one is used). The
    // append-time index (append_times) records `now`, raised to the partition's previous
    // append time if the clock stepped back.
    // Errors: io_error (also after an earlier failed fsync), invalid_argument.
    result<append_info> append(std::span<uint8_t> payload,
                               const std::vector<protocol::validated_batch>& batches,
                               timestamp_ms now);

    // Transaction markers (KIP-98): appends a control batch (protocol/control_batch.h)
    // ending the producer's ongoing transaction in this partition, through the append
    // path (journal, flusher): the marker is durable once durable_offset() passes the
    // returned last_offset (log_manager::when_durable(log, info.last_offset, ...)). An
    // ABORT adds the transaction to the aborted-transaction index. Verdicts (nothing
    // appended): invalid_epoch (the producer's epoch here is newer), coordinator_fenced
    // (an older coordinator epoch than the last marker's). Errors: as append.
    result<append_info> write_marker(int64_t producer_id, int16_t producer_epoch, bool commit,
                                     int32_t coordinator_epoch, timestamp_ms now);

    // Whole batches from the one holding `offset`, below the high watermark (the last
    // stable offset when `committed`: isolation_level READ_COMMITTED), within max_bytes
    // (the first batch regardless when min_one). Data from one segment. offset at or past
    // that bound: empty. Outside [log start, log end]: out_of_range.
    result<read_result> read(offset_t offset, size_t max_bytes, bool min_one,
                             bool committed = false) const override;
    // The same range as a file slice, cut at max_bytes (the first batch whole when
    // min_one) rather than at a batch boundary; what Fetch sends with sendfile.
    result<read_slice> read_slice_at(offset_t offset, size_t max_bytes, bool min_one,
                                     bool committed = false) const;

    // The first offset of the oldest ongoing transaction, or the high watermark when
    // none is ongoing: what READ_COMMITTED readers may see (Kafka's last stable offset).
    offset_t last_stable_offset() const override;
    // The aborted transactions with records in [from, to) (Fetch's aborted_transactions
    // for a READ_COMMITTED answer), by marker offset. Errors: as available().
    result<std::vector<aborted_txn>> aborted_transactions(offset_t from,
                                                          offset_t to) const override;

    offset_t high_watermark() const override;  // first offset not readable: the log end offset
    offset_t log_end_offset() const override;  // next offset to assign
    // First offset not yet on stable storage: what a crash of the machine (not of the
    // process: appended bytes are in the page cache) may lose from.
    offset_t durable_offset() const;
    // First readable offset (ListOffsets EARLIEST). It may lie inside a segment after
    // delete_records; reads starting in that segment may still return the whole batch
    // holding it, as Kafka's do (clients skip records below their fetch offset).
    offset_t log_start_offset() const override;

    // DeleteRecords: makes `before` the log start offset (-1: the high watermark) unless
    // the log already starts later (it never moves back), then deletes the segments
    // lying wholly below it, except the active one. The new start is durable (the
    // log-start-offset file, docs/formats/log-start-offset.md) before any reader sees it
    // and before this returns; records below it that were not are fsynced first, so a
    // machine crash never leaves a durable start past the durable end. Returns the log
    // start offset (Kafka's low watermark).
    // Errors: out_of_range (before < -1, or above the high watermark), io_error.
    result<offset_t> delete_records(offset_t before);

    // Whether the partition serves: loads it (again, when an earlier load failed and its
    // retry is due). Errors: io_error (out of service), not_found (topic deleted).
    result<void> available() const;

    // First record at or below the high watermark, at or above the log start, with
    // timestamp >= ts.
    result<std::optional<offset_and_time>> offset_for_timestamp(timestamp_ms ts) const override;
    // The (first) record with the largest timestamp, in [log start, high watermark).
    result<std::optional<offset_and_time>> max_timestamp_offset() const override;

    // Broker append times (docs/formats/append-time-index.md) for the records in
    // [from, limit), `from` raised to the log start and `limit` lowered to the high
    // watermark: runs in offset order, the first starting at or before `from`; a
    // record's append time is the time of the last run starting at or before its offset.
    // Adjacent runs have different times. Empty when from >= limit. Loads the append-time
    // files of the segments in the range. Errors: io_error, corrupt.
    result<std::vector<append_time_run>> append_times(offset_t from, offset_t limit) const;
    // The first offset in [log start, high watermark) whose append time is >= ts; the high
    // watermark when none. Offsets compaction emptied count with their run. Reads the
    // first and last times of O(log segments) segment files, then one file whole.
    result<offset_t> offset_for_append_time(timestamp_ms ts) const;

    // The idempotent producers this partition knows (DescribeProducers), expired ones
    // dropped first. Loads the partition.
    result<std::vector<producer_entry>> producers(timestamp_ms now) const;

    // Offsets and sizes at one instant, for system tables. Loads the partition.
    struct summary {
        offset_t log_start_offset = 0;
        offset_t high_watermark = 0;
        offset_t log_end_offset = 0;
        size_t segments = 0;
        int64_t bytes = 0;  // data files, headers included
    };
    result<summary> describe() const;

    topic_partition id() const override;
    int32_t partition() const { return _partition; }
    const topic_state* topic() const { return _topic; }
    bool loaded() const { return _loaded.load(std::memory_order_acquire); }
    size_t segment_count() const;
    size_t memory_bytes() const;  // this object plus what it has loaded

  private:
    friend class log_manager;

    struct state {
        fs::path dir;
        std::vector<std::unique_ptr<segment>> segments;
        std::optional<error> failed;  // sticky: a failed fsync leaves page state unknown
        // `failed` came from a load, which changed nothing that a retry cannot redo: it
        // is retried from retry_at (log_context::load_retry_interval).
        bool load_failed = false;
        bool disk_full = false;  // the last append failed with ENOSPC (logged once)
        std::chrono::steady_clock::time_point retry_at;
        uint64_t created_gen = 0;   // bumped when a segment file or the dir is created
        uint64_t synced_gen = 0;    // created_gen covered by the last directory fsync
        bool parent_dirty = false;  // the partition directory itself is new
        // Serializes trims (delete_records, retention) so that the log-start-offset file
        // and the segment list move together; taken before _mu, and held while the file
        // is fsynced so that _mu need not be.
        std::mutex trim_mu;
        offset_t durable_start = -1;  // in the log-start-offset file (-1: none); trim_mu
        // Compaction: one pass at a time; taken before trim_mu, held for the whole pass.
        std::mutex clean_mu;
        // The first dirty offset (cleaner-checkpoint); -2 until read. clean_mu.
        offset_t clean_offset = -2;
        // The last append time handed out (no_timestamp: none known); appends never go
        // below it, so append times never decrease within the partition.
        timestamp_ms append_clock = no_timestamp;
        // Appends not in the journal (counted), and the count the last fsync of the
        // partition's files covered: when they differ a flush pass must fsync the files.
        uint64_t unjournaled = 0;
        uint64_t unjournaled_synced = 0;
        // Writeback started (flusher) up to this byte of the segment at kick_base.
        offset_t kick_base = -1;
        int64_t kick_pos = 0;
        // Idempotent producers' sequences and epochs (producer_state.h), and the offset
        // the snapshot file covers (-1: none known).
        producer_state producers;
        offset_t snapshot_at = -1;
        timestamp_ms producers_swept = 0;  // when expired producers were last dropped
    };

    // What a trim did.
    struct trim_result {
        size_t segments = 0;  // deleted
        int64_t bytes = 0;    // of their data files
        offset_t log_start = 0;
    };

    result<void> ensure_loaded() const;  // _mu held
    result<void> load() const;
    fs::path dir_path() const;
    segment* active() const { return _st->segments.empty() ? nullptr : _st->segments.back().get(); }
    segment* segment_for(offset_t offset) const;
    result<void> ensure_indexes(segment& seg) const;
    result<void> prepare_segment(const log_config& cfg, size_t bytes, offset_t last_offset,
                                 timestamp_ms now);
    result<void> roll_segment(timestamp_ms now);  // seal the active one, add one at the end
    // KIP-354: a compacted topic's active segment rolls once its first record was appended
    // more than max_compaction_lag_ms ago, so that the cleaner may take it. Judged by the
    // broker's append time (a producer's old CreateTime must not roll at every append).
    static bool compaction_roll_due(const segment& seg, const log_config& cfg, timestamp_ms now);
    result<void> add_segment(timestamp_ms now);
    // Writes batches whose offsets (from base to end) are set: segment, indexes, append
    // time t. `stamped`: the LogAppendTime stamp for the time index, else no_timestamp.
    // _mu held.
    result<void> write_batches(const log_config& cfg, bytes_view payload,
                               const std::vector<protocol::validated_batch>& batches, offset_t base,
                               offset_t end, timestamp_ms now, timestamp_ms t,
                               timestamp_ms stamped);
    // The append after the producer check: offsets, segment, producer state (`marker`:
    // the control record of a transaction marker), journal, log end. _mu held.
    result<append_info> append_checked(const log_config& cfg, std::span<uint8_t> payload,
                                       const std::vector<protocol::validated_batch>& batches,
                                       timestamp_ms now, const protocol::control_record* marker);
    void fail(const error& e) const;
    // A load failed: out of service until a retry succeeds (ensure_loaded).
    void fail_load(const error& e, bool retrying) const;
    void forget_retry() const;  // out of the manager's retry list
    void settle_log_start(offset_t from_file) const;
    // Sets the last stable offset from the producer table and the log end. _mu held.
    void settle_stable() const;

    // Scans the batches of `seg` holding offsets in [from, limit); fn returns false to stop.
    template <typename Fn>
    result<void> scan_range(segment& seg, offset_t from, offset_t limit, Fn&& fn) const;
    result<std::optional<offset_and_time>> locate_max(segment& seg, offset_t from, offset_t limit,
                                                      timestamp_ms max_ts) const;
    result<std::optional<offset_and_time>> segment_max(segment& seg, offset_t limit,
                                                       timestamp_ms beat) const;
    result<std::optional<offset_and_time>> segment_max_from(segment& seg, offset_t from,
                                                            offset_t limit) const;

    // --- append times (partition_log_append_time.cc) ---
    size_t segment_index(const segment& seg) const;
    // Loads a sealed segment's append times, estimating what its file lacks. _mu held.
    result<void> ensure_append_times(segment& seg) const;
    // First and last append times of segment i (nullopt: it has no entry), from memory,
    // a cache, or the file's first and last entries; loads the segment's entries only
    // when the file cannot tell (`load` false: no_timestamp's then, as unknown). _mu held.
    result<std::optional<append_time_bounds>> segment_append_bounds(size_t i, bool load) const;

    // --- idempotent producers (partition_log_producers.cc) ---
    // Rebuilds the producer table: the snapshot, then the batch headers after it (all of
    // them without a usable snapshot). _mu held, segments loaded.
    result<void> load_producers() const;
    // The verdict for an append of `batches` (one batch when it has a producer id: the
    // handler checks that). _mu held.
    sequence_check check_producers(const std::vector<protocol::validated_batch>& batches,
                                   timestamp_ms now) const;
    // Records appended batches whose offsets start at base. _mu held.
    void note_producers(const std::vector<protocol::validated_batch>& batches, offset_t base,
                        timestamp_ms now);
    // Batches carrying their offsets (replay); markers are decoded. Errors: corrupt.
    result<void> note_producers(bytes_view data) const;
    // One batch found in the log (load, replay): its producer's sequence or, for a
    // transaction marker, the end of its transaction. Errors: corrupt (a marker).
    result<void> note_logged_batch(const protocol::batch_header& h, bytes_view batch,
                                   timestamp_ms now) const;
    // Writes the producer snapshot as of the log end (docs/formats/producer-snapshot.md)
    // unless the file is current: at a roll and at shutdown. _mu held.
    result<void> save_producer_snapshot() const;
    // Forgets the aborted transactions whose ABORT markers (producer, offset) compaction
    // removes, and the snapshot that holds them (a crash before the next one rebuilds the
    // state from the log). _mu not held.
    result<void> forget_aborted(const std::vector<std::pair<int64_t, offset_t>>& markers);

    // --- trimming (partition_log_retention.cc) ---
    state* loaded_state();
    // Makes `target` the durable log start (if higher), then deletes the segments wholly
    // below the log start. trim_mu held, _mu not.
    result<trim_result> advance_start(state& st, offset_t target);
    // How many segments, oldest first, retention deletes now. _mu held.
    result<size_t> retention_count(const log_config& cfg, timestamp_ms now) const;
    // The segment's largest record timestamp, as retention judges it. _mu held.
    result<timestamp_ms> largest_timestamp(segment& seg) const;

    // --- compaction (partition_log_compaction.cc) ---
  public:
    // What a compaction pass did (or why it did nothing).
    struct clean_result {
        bool cleaned = false;    // a pass ran (the dirty ratio or max lag called for it)
        double dirty_ratio = 0;  // dirty bytes / cleanable bytes when judged
        int64_t bytes_read = 0;
        int64_t bytes_written = 0;    // of rewritten segments (data files)
        int64_t bytes_reclaimed = 0;  // data files replaced, less their rewrites
        int64_t records_removed = 0;
        size_t segments_rewritten = 0;
        size_t segments_merged = 0;  // removed: merged into a rewritten one before them
        offset_t clean_offset = -1;  // the new first dirty offset
    };
    // One compaction pass (log_manager::enforce_compaction): in the sealed segments below
    // the high watermark whose records are all older than min_compaction_lag_ms, keeps
    // only the latest record of each key, and drops tombstones once a pass has seen them
    // and their timestamp is older than delete_retention_ms. Runs when the dirty bytes
    // (segments holding offsets at or past the checkpoint) are at least
    // min_cleanable_dirty_ratio of the cleanable bytes, or when the oldest dirty record is
    // older than max_compaction_lag_ms. Rewritten segments replace the old ones by the
    // swap of docs/formats/segment.md. Errors: io_error (the partition then fails),
    // corrupt.
    result<clean_result> clean(const log_config& cfg, timestamp_ms now, io_throttle& io);
    // Whether a partition not loaded yet may have something to clean: more than one
    // segment (only sealed ones are cleaned), or one with data (its active segment may
    // be due to roll by max_compaction_lag_ms). Told from a directory listing.
    bool compaction_candidate() const;

  private:
    struct clean_plan;
    // What a segment keeps: its batches filtered, their positions in data, append times.
    struct kept_batches {
        bytes data;
        std::vector<std::pair<protocol::batch_header, size_t>> batches;
        std::vector<timestamp_ms> times;
        int64_t removed = 0;   // records
        bool changed = false;  // a kept batch was rewritten (a marker's delete horizon)
    };
    result<bool> plan_clean(const log_config& cfg, timestamp_ms now, clean_plan& plan);
    // The end of the group starting at plan.segs[from]: the segments after it that fit,
    // with it, in segment_bytes and in the indexes' u32 offsets.
    static size_t group_end(const clean_plan& plan, size_t from, int64_t segment_bytes);
    // Writes plan.segs[from, to) under cleaning/ as one segment (named by the first's base
    // offset), unless it is one segment that loses nothing. Returns the new data file's
    // size, or -1 when nothing was written. _st->clean_mu held.
    result<int64_t> rewrite_group(const clean_plan& plan, size_t from, size_t to,
                                  record_selector& select, const log_config& cfg, timestamp_ms now,
                                  io_throttle& io, bytes& buf_space, clean_result& out);
    result<kept_batches> filter_segment(const clean_plan& plan, size_t index, bytes_view buf,
                                        record_selector& select);
    // Forgets the rewrites of segments that retention or DeleteRecords removed during
    // the pass. trim_mu held.
    result<void> drop_trimmed(std::vector<offset_t>& bases, std::vector<int64_t>& sizes,
                              std::vector<std::vector<offset_t>>& merged);
    // Puts the rewritten segments in place; each replaces its namesake and the segments
    // merged into it (merged[i]: their base offsets) go.
    result<void> swap_cleaned(const std::vector<offset_t>& bases, const std::vector<int64_t>& sizes,
                              const std::vector<std::vector<offset_t>>& merged);

    // --- manager side ---
    // A flush pass, in two steps around the journal's sync: plan_sync takes what is
    // appended now (under the lock); finish_sync fsyncs the partition's files when the
    // plan says so or the journal failed, then moves the durable offset to the plan's
    // target and returns whether it moved.
    struct sync_plan {
        std::shared_ptr<file> data;  // the active segment's data file
        fs::path dir;
        offset_t target = 0;
        offset_t seg_base = 0;
        int64_t seg_pos = 0;
        uint64_t gen = 0;
        uint64_t unjournaled = 0;
        bool new_files = false;
        bool parent = false;
        bool files = false;  // fsync the files (not everything since the last one is journaled)
    };
    // nullopt: nothing to make durable. `files`: fsync the files even when the journal
    // holds every append since the last fsync (checkpoints, replay).
    result<std::optional<sync_plan>> plan_sync(bool files);
    result<bool> finish_sync(sync_plan& plan, bool journal_synced);
    // After a pass the journal covered: the whole pages of the plan's data file from
    // where writeback last started to the plan's end (nullopt: none). Taking the range
    // counts it as started.
    struct byte_range {
        int64_t from = 0;
        int64_t to = 0;
    };
    std::optional<byte_range> take_writeback(const sync_plan& plan);
    // Both steps without the journal: the partition's files are fsynced.
    result<bool> sync_files();
    // Replay (log_manager::open): whole batches that already carry their offsets, the
    // first at `base`. Skips those the log holds (below its end) and appends the rest, as
    // not journaled; returns how many bytes it appended. Errors: out_of_range (the
    // batches left start past the log end: a gap), corrupt, io_error.
    result<size_t> append_replayed(bytes_view batches, offset_t base, timestamp_ms append_time);
    // Shutdown: writes the active segment's indexes (with its final time entry).
    result<void> save_for_shutdown();
    std::optional<error> failure() const;
    void unload();  // forgets files and segments (remove_topic)
    // One retention pass over this partition (log_manager::enforce_retention).
    result<trim_result> apply_retention(const log_config& cfg, timestamp_ms now);
    // Whether a partition not loaded yet may hold a segment retention would delete, told
    // from its files alone (see log_manager::enforce_retention). False is always right;
    // true may be wrong, and loading the partition settles it.
    bool retention_candidate(const log_config& cfg, timestamp_ms now) const;

    topic_state* _topic;
    log_context* _ctx;
    int32_t _partition;
    mutable std::atomic<bool> _loaded{false};
    // Recovery at start-up failed here: the next load runs it first (log_manager::open).
    mutable bool _recover_first = false;
    std::atomic<bool> _queued{false};  // in the flusher's dirty list
    mutable std::mutex _mu;
    mutable std::atomic<offset_t> _durable{0};
    mutable std::atomic<offset_t> _leo{0};  // also the high watermark
    mutable std::atomic<offset_t> _lso{0};  // the log START offset
    // The last stable offset (transactions): <= _leo; set with it under _mu.
    mutable std::atomic<offset_t> _stable{0};
    mutable std::unique_ptr<state> _st;  // null until first use
};

// A topic's name, settings and partitions; owned by the log_manager.
struct topic_state {
    explicit topic_state(std::string n, const log_config& c) : name(std::move(n)), _cfg(c) {}
    log_config config() const {
        std::lock_guard lk(_mu);
        return _cfg;
    }
    void set_config(const log_config& c) {
        std::lock_guard lk(_mu);
        _cfg = c;
    }

    const std::string name;
    std::deque<partition_log> partitions;  // deque: adding partitions moves none
    std::atomic<bool> removed{false};      // set by log_manager::remove_topic

  private:
    mutable std::mutex _mu;
    log_config _cfg;
};

}  // namespace sluice::log
