#pragma once

// Shared mode's partition logs (docs/shared-mode.md, "Partition logs"): one shared_log
// per broker holds
//   - the produce window: appends to any of its partitions wait up to `produce_window`
//     (or until `window_max_bytes` wait), then all of them go into one object, uploaded
//     to the object store, and one database transaction (batch_index.h's commit_object)
//     assigns their offsets, records where they lie and checks idempotent producers'
//     sequences; only then do the appends complete. Up to `windows_in_flight` closed
//     windows upload side by side while the one before commits; the commits go one at a
//     time in window order (window_pipeline.h, with its rule for failures);
//   - the read path: the batch index says which object and byte range hold an offset;
//     ranges are read through a cache in memory and on disk (object_cache.h);
//   - a LISTEN on batch_index.h's commit_channel, so that a wait for new data in a
//     partition wakes when any broker commits to it.
// shared_partition is the log::partition_store of one partition.
//
// Objects are named OBJECT_PREFIX/BROKER/UNIX_MS-SEQ-RANDOM; inside, each partition's
// batches lie together in the order they arrived, with the base offsets the producers
// sent (a read writes the assigned ones in, as the batch format's CRC does not cover
// them).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "log/partition_store.h"
#include "metrics/registry.h"
#include "shared/batch_index.h"
#include "shared/object_cache.h"
#include "shared/object_store.h"
#include "shared/pg_database.h"
#include "shared/window_pipeline.h"

namespace sluice::shared {

struct shared_log_config {
    int32_t broker_id = 0;
    // How long the first append waits for others before the window's object is written.
    std::chrono::milliseconds produce_window{20};
    size_t window_max_bytes = 8u << 20;  // write the object early once this much waits
    // Closed windows between closing and answering: the next one closes and uploads while
    // the one before commits (1: one window at a time).
    size_t windows_in_flight = 1;
    size_t cache_bytes = 256u << 20;  // the read-through cache's budget
    // Its disk tier (disk_cache.h): a directory and a budget; empty or 0: none.
    std::filesystem::path disk_cache_dir;
    uint64_t disk_cache_bytes = uint64_t{1} << 30;
    std::string object_prefix = "data";
    // Threads that run run_read()'s jobs, each with a database connection of its own.
    size_t reader_threads = 4;
};

class shared_partition;

class shared_log {
  public:
    // Connects to the database for commits, for reads outside run_read(), for each reader
    // thread, and once more to LISTEN.
    static result<std::unique_ptr<shared_log>> open(object_store& store, const pg_config& db,
                                                    shared_log_config config);
    // Writes what the window holds, then stops.
    ~shared_log();
    shared_log(const shared_log&) = delete;
    shared_log& operator=(const shared_log&) = delete;

    // Partition `name.partition` of the catalog's topic `topic_id` (32 hex digits), which
    // must exist there; valid as long as this.
    shared_partition& partition(const std::string& topic_id, const topic_partition& name);

    // Called on the listener's thread after each commit notification with the
    // partitions it moved, as (topic id, partition); `all` when every partition must be
    // read afresh (a reconnected listener). nullptr: none. Must not block.
    using commit_listener =
        std::function<void(const std::vector<std::pair<std::string, int32_t>>& moved, bool all)>;
    void set_commit_listener(commit_listener fn);

    // Fences the produce commits from now on by this broker's registration (object_commit::
    // broker_incarnation): set when the broker registers and again when it registers anew.
    void set_incarnation(int64_t incarnation) {
        _incarnation.store(incarnation, std::memory_order_release);
    }

    // Runs `job` on one of the reader threads, in submission order as threads free up.
    // There, the partitions' reads and lookups (which wait on the database and the object
    // store) use that thread's connection, so several run side by side, and the caller
    // (the broker's event loop) waits on none of them. A job reports back on its own
    // (event_loop::post). Jobs not started when the log is destroyed are dropped.
    void run_read(std::function<void()> job);
    // The connection of the reader thread this runs on (run_read's jobs), nullptr on any
    // other thread: stores whose calls may run in those jobs (pg_share_store) use it there.
    static pg_database* reader_database();
    // A subject's version in sluice_change_versions (pg_refresher.h).
    result<int64_t> change_version(const char* subject);

    struct stats {
        uint64_t objects = 0;  // uploaded and committed
        uint64_t batches = 0;
        uint64_t bytes = 0;
        uint64_t failed_windows = 0;
    };
    stats counters() const;
    object_cache::stats cache_counters() const { return _cache.counters(); }
    // The disk tier (nullptr: none).
    disk_cache* disk_tier() const { return _disk.get(); }

  private:
    friend class shared_partition;
    struct pending {
        shared_partition* part;
        std::string data;  // the batches, as validated
        std::vector<protocol::validated_batch> batches;
        log::partition_store::append_done done;
        int8_t marker = -1;            // a transaction marker: 0 ABORT, 1 COMMIT
        bool log_append_time = false;  // stamp the batches with the window's time
        uint64_t arrival = 0;          // window_pipeline::stamp()
    };
    // A closed window: its appends (entries, in arrival order), then its object as built
    // by the upload stage.
    struct produce_window final : window_pipeline::window {
        std::vector<pending> taken;
        object_commit commit;             // every batch of `taken`
        std::vector<size_t> batch_entry;  // commit.batches[k] is of taken[batch_entry[k]]
        std::string object;
        std::vector<std::pair<shared_partition*, std::pair<uint64_t, uint64_t>>> spans;
        std::chrono::steady_clock::time_point closed;  // for sluice_shared_window_seconds
        std::chrono::steady_clock::time_point uploaded;  // for its phase commit_wait
    };

    shared_log(object_store& store, shared_log_config config);
    void enqueue(pending p);
    void run_window();
    // window_pipeline's stages.
    result<void> upload_window(produce_window& w);
    result<void> commit_window(produce_window& w);
    void fail_window(produce_window& w, const error& e);
    void build_object(produce_window& w);
    void run_listener();
    void run_reader(pg_database* db);
    // The connection reads use: the reader thread's own there, else _read_db.
    pg_database& read_db() const;
    // A commit moved partitions' high watermarks (payload lines), or everything must be
    // read afresh (empty payload, a reconnected listener).
    void note_commit(const std::string& payload);

    object_store& _store;
    const shared_log_config _config;
    std::unique_ptr<disk_cache> _disk;  // before _cache, which uses it
    object_cache _cache;
    std::unique_ptr<pg_database> _commit_db;  // the window thread's
    std::unique_ptr<pg_database> _read_db;    // reads outside run_read (calls serialized)
    std::vector<std::unique_ptr<pg_database>> _reader_dbs;  // one per reader thread
    std::unique_ptr<pg_listener> _listener;

    mutable std::mutex _mu;
    std::condition_variable _window_cv;
    std::vector<pending> _waiting;
    size_t _waiting_bytes = 0;
    std::chrono::steady_clock::time_point _window_opened;
    bool _stopping = false;
    std::atomic<int64_t> _incarnation{0};
    stats _stats;
    std::map<std::pair<std::string, int32_t>, std::unique_ptr<shared_partition>> _partitions;

    // Waits for new data: generation bumps at each commit notification.
    std::mutex _data_mu;
    std::condition_variable _data_cv;
    uint64_t _data_gen = 0;
    uint64_t _refresh_gen = 0;  // bumps when the high watermarks must be read afresh

    std::mutex _listener_mu;
    commit_listener _on_commit;  // guarded by _listener_mu

    std::mutex _read_mu;
    std::condition_variable _read_cv;
    std::deque<std::function<void()>> _read_jobs;  // guarded by _read_mu
    bool _readers_stopping = false;                // guarded by _read_mu

    std::unique_ptr<window_pipeline> _pipeline;  // after what its stages use
    std::thread _window_thread;
    std::thread _listener_thread;
    std::vector<std::thread> _readers;
    metrics::collector_handle _cache_metrics;  // last: removed first
};

// One partition of shared mode: log::partition_store over the batch index and the
// object store. Offsets come from the database at each call (a broker holds no state):
// log end == high watermark (a batch is committed or absent). Transactions: the last
// stable offset is the first offset of the oldest transaction open in the partition
// (sluice_txn_open), the aborted ones are in sluice_txn_aborted.
class shared_partition final : public log::partition_store {
  public:
    shared_partition(shared_log& owner, std::string topic_id, topic_partition name)
        : _owner(owner), _topic_id(std::move(topic_id)), _name(std::move(name)) {}

    topic_partition id() const override { return _name; }
    // The batches go into the broker's produce window; `done` runs on the window's
    // thread after the commit. Errors: the store's or the database's (the append then
    // did not happen, unless the database lost the connection during COMMIT: then the
    // outcome is unknown and says so; an idempotent producer's retry is safe).
    void submit_append(std::span<uint8_t> payload,
                       const std::vector<protocol::validated_batch>& batches, timestamp_ms now,
                       append_done done) override;
    // submit_append for a topic whose message.timestamp.type is LogAppendTime when
    // `log_append_time`: the batches carry the append time (the window's, on this
    // broker's clock, raised by the commit to the partition's last one when that is
    // later), and `done`'s append_info says it.
    void submit(std::span<uint8_t> payload, const std::vector<protocol::validated_batch>& batches,
                bool log_append_time, append_done done);
    result<log::read_result> read(offset_t offset, size_t max_bytes, bool min_one,
                                  bool committed = false) const override;
    // These read the database; when it cannot be reached they answer the last value seen.
    offset_t high_watermark() const override;
    offset_t log_end_offset() const override { return high_watermark(); }
    offset_t last_stable_offset() const override;
    offset_t log_start_offset() const override;
    result<std::vector<log::aborted_txn>> aborted_transactions(offset_t from,
                                                               offset_t to) const override;
    result<std::optional<log::offset_and_time>> offset_for_timestamp(
        timestamp_ms ts) const override;
    result<std::optional<log::offset_and_time>> max_timestamp_offset() const override;

    // Waits until the high watermark passes `offset` or `timeout` passes (long polls);
    // woken by other brokers' commits (NOTIFY). Returns the high watermark.
    offset_t wait_for_data(offset_t offset, std::chrono::milliseconds timeout) const;

    // DeleteRecords: moves the log start to `offset` (-1: the high watermark), never
    // back, in one database transaction (maintenance::advance_log_start); returns the
    // log start after it. Errors: out_of_range past the high watermark; the database's.
    result<offset_t> delete_records(offset_t offset);

    // Appends a COMMIT or ABORT marker (a control batch) of the producer through the
    // produce window; `done` as for submit_append (verdict invalid_epoch: the partition
    // has a newer epoch of the producer, and nothing was written).
    void write_marker(int64_t producer_id, int16_t producer_epoch, bool commit, timestamp_ms now,
                      append_done done);
    // The producers of the partition (DescribeProducers): their epoch, last sequence and
    // timestamp, and the first offset of their open transaction here (-1: none).
    struct producer_row {
        int64_t producer_id = -1;
        int16_t epoch = -1;
        int32_t last_sequence = -1;
        int64_t last_timestamp = -1;
        int64_t txn_first_offset = -1;
        int32_t coordinator_epoch = -1;  // not kept in shared mode
    };
    result<std::vector<producer_row>> producers() const;

    const std::string& topic_id() const { return _topic_id; }
    // The log start last read from the database (no call: for answers that must not wait).
    offset_t cached_log_start() const { return _start.load(std::memory_order_acquire); }

  private:
    friend class shared_log;
    struct bounds {
        offset_t log_start = 0;
        offset_t high_watermark = 0;
        offset_t last_stable = 0;
    };
    result<bounds> load_bounds() const;
    // The first record with timestamp >= ts in the batch starting at `base` (nullopt: none).
    result<std::optional<log::offset_and_time>> find_in_batch(offset_t base, timestamp_ms ts,
                                                              bool largest) const;

    shared_log& _owner;
    const std::string _topic_id;
    const topic_partition _name;
    mutable std::atomic<offset_t> _hw{0};
    mutable std::atomic<offset_t> _start{0};
};

}  // namespace sluice::shared
