#pragma once

// Expansions: each expands the events of one topic into rows of one SQL table, in the
// same commit as the event (docs/expansions.md). One background thread, the expander,
// reads what each partition's high watermark newly covers and writes its rows and its
// progress in one transaction (expansion/target_store.h); producers of an expanded topic are answered once
// their events are expanded. On start, each expansion first catches up from the log.
//
// Threading: every public member is thread-safe. The broker calls on_high_watermark
// from the flusher thread and when_expanded from the event loop; the HTTP API calls
// create, drop and list from its connection threads.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catalog/expansion_info.h"
#include "common/result.h"
#include "common/types.h"
#include "expansion/schema.h"
#include "expansion/target_store.h"
#include "sql/engine_options.h"

namespace sluice::catalog {
class expansion_store;
class topic_store;
}  // namespace sluice::catalog
namespace sluice::log {
class log_manager;
class partition_log;
class partition_store;
}  // namespace sluice::log
namespace sluice::sql {
class partition_source;
}  // namespace sluice::sql

namespace sluice::expansion {

struct running;  // service.cc

// A partition as the expansions read it: a local log (with its durable offset and append
// times), or the partition-log interface alone (shared mode).
struct source_partition {
    const log::partition_log* local = nullptr;
    const log::partition_store* store = nullptr;
    explicit operator bool() const { return store != nullptr; }
};

struct create_request {
    std::string topic;
    std::string target;            // "schema.table", or "table" for main.table
    std::string schema;            // the schema file's JSON
    std::string source = "value";  // "value" or "key"
    bool flatten = false;
    bool copy_source = false;
    bool backfill = false;  // expand the events already in the topic, in the background
};

struct status {
    catalog::expansion_info info;
    std::string state;           // "running", "backfilling" or "failed"
    std::string error;           // why it failed (it is retried)
    int64_t rows = -1;           // in the target table now; -1 when it cannot be read
    int64_t rows_written = 0;    // since the broker started
    int64_t lag = 0;             // events below the high watermarks not yet expanded
    int64_t backfill_total = 0;  // events the backfill covers
    int64_t backfill_done = 0;
    std::vector<column> columns;  // of the target, in order
};

struct service_options {
    // The topics the expansions read and where their definitions are kept (the catalog's,
    // or the shared catalog's: broker::metadata_stores).
    catalog::topic_store* topics = nullptr;
    catalog::expansion_store* expansions = nullptr;
    log::log_manager* logs = nullptr;
    // Where targets are stored (expansion/target_store.h); open() refuses null.
    std::shared_ptr<target_backend> targets;
    // Shared mode (docs/expansions.md, "Shared mode"): the partitions of `topics`' topics
    // through the partition-log interface instead of `logs`. Every broker then expands
    // every event into a copy of each target of its own, starting where the shared
    // definition says (expansion_info::starts), and learns of other brokers' creates and
    // drops through definitions_changed(); the events' high watermarks are read every
    // second, and on on_high_watermark.
    sql::partition_source* partitions = nullptr;
    // Events per transaction at most; a larger backlog takes several.
    int64_t max_rows_per_commit = 50'000;
    // How long a failed expansion waits before it is tried again.
    std::chrono::milliseconds retry_interval{10'000};
};

class service final : public sql::table_guard {
  public:
    // Loads the expansions of the catalog and brings each up to its partitions' high
    // watermarks before returning (an expansion that cannot is marked failed, and
    // retried once the expander runs). Errors: none so far; failures are per expansion.
    static result<std::unique_ptr<service>> open(service_options o);
    ~service() override;  // stop()
    service(const service&) = delete;
    service& operator=(const service&) = delete;

    // Starts the expander thread.
    void start();
    // Stops it (a transaction in progress finishes); answers every waiter.
    void stop();

    // Errors: not_found (no such topic), already_exists (the target is taken),
    // invalid_argument (names, schema, options, an incompatible existing table: the
    // message says which), io_error.
    result<status> create(const create_request& r);
    // Errors: not_found, io_error. drop_table also drops the target table.
    result<void> drop(const std::string& target, bool drop_table);
    std::vector<status> list() const;
    std::optional<status> find(const std::string& target) const;

    // Shared mode: the definitions in `expansions` changed (another broker created or
    // dropped one); the expander starts and stops expansions to match, soon.
    void definitions_changed();

    // --- for the broker ---
    bool expands(const std::string& topic) const;
    // The flusher moved these partitions' high watermarks.
    void on_high_watermark(const std::vector<topic_partition>& tps);
    // Runs fn (on the expander thread, or on the calling one when it is so already) once
    // every healthy expansion of tp.topic has expanded the events up to `last`; at once
    // when the topic has none.
    void when_expanded(const topic_partition& tp, offset_t last, std::function<void()> fn);

    // --- sql::table_guard ---
    std::string protected_table(std::string_view schema, std::string_view table) const override;
    std::string protected_schema(std::string_view schema) const override;
    std::string source_topic(std::string_view schema, std::string_view table) const override;

  private:
    explicit service(service_options o);
    void run();
    // Expands the live range of `parts` (ascending, distinct) up to the high watermarks,
    // at most max_rows_per_commit events; true when some are left.
    bool expand_live(running& e, const std::vector<int32_t>& parts);
    std::vector<int32_t> partitions_of(const std::string& topic) const;
    // One chunk of e's backfill; true when some is left.
    bool expand_backfill(running& e);
    void fail(running& e, const error& err);
    // After a failed transaction (rolled back): true to try again soon (the target's file
    // was busy), false when e is now failed.
    bool retry_or_fail(running& e, const error& err);
    // After e's published progress moved or its health changed: the waiters of its topic
    // now satisfied run.
    void publish(const running& e);
    // The lowest live position of the healthy expansions of tp's topic; max when none.
    offset_t position(const topic_partition& tp) const;            // _mu held
    status describe(const running& e) const;                       // _mu held
    void count_target_rows(status& s) const;                       // _mu not held: reads the table
    void add_lag(status& s, const progress_map& published) const;  // _mu not held
    result<void> catch_up(running& e);
    // Prepares info's expansion, catches it up (marked failed, to be retried, when it
    // cannot) and adds it to the maps; false when the definition cannot be read.
    bool load(const catalog::expansion_info& info);
    void forget(const running& e);  // _mu held: takes e out of the maps
    // Shared mode: opens (creating when absent) this broker's copy of e's target, its
    // progress set from the definition's starts when it has none.
    result<void> open_copy(running& e);
    // Shared mode: starts the expansions of the definitions not running here, stops those
    // whose definition is gone (keeping their tables). Holds _create_mu.
    void sync_definitions();
    source_partition partition(const std::string& topic, int32_t p) const;
    bool topic_exists(const std::string& topic) const;

    service_options _o;
    std::shared_ptr<target_backend> _targets;
    std::mutex _create_mu;  // one create or drop at a time
    mutable std::mutex _mu;
    std::condition_variable _cv;
    bool _stop = false;
    bool _definitions_changed = false;                           // guarded by _mu
    std::map<std::string, std::shared_ptr<running>> _by_target;  // by lower-case target
    std::multimap<std::string, std::shared_ptr<running>> _by_topic;
    std::set<topic_partition> _dirty;
    // Ordered by topic, then partition, so that one topic's waiters are one range.
    std::map<topic_partition, std::multimap<offset_t, std::function<void()>>> _waiters;
    std::thread _thread;
};

}  // namespace sluice::expansion
