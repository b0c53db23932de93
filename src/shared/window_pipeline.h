#pragma once

// The produce windows of shared_log between closing and answering (docs/shared-mode.md,
// "Windows in flight"): up to `max_in_flight` of them at once. Each closed window's
// upload starts at once on an upload thread of its own, beside the uploads and the commit
// of the windows before it; the commits run one at a time on one thread, in the order the
// windows closed, each after the previous window's commit ended, so that offsets and
// idempotent sequences are assigned and checked in arrival order as with one window at a
// time.
//
// The rule for failures: a window whose upload or commit fails fails all of its entries;
// and every entry that arrived before that failure was known (its arrival stamp is below
// the failure's) and depends on one of the failed entries, one of the same partition and
// idempotent producer (dependency), is cancelled with the failure's error, retriable,
// without being committed, in whatever window it waits (in flight behind the failed one,
// or the open one). So a producer's batches with sequences n and n+1 in consecutive
// windows commit both, in order, or n+1 is not committed unless n was: it is answered
// with the retriable error instead of an out-of-order sequence, and the producer sends
// it again after n. Entries that arrived after the failure was known (a producer's
// retries) are not cancelled. Entries without a dependency (producers that are not
// idempotent) are never cancelled: as in Kafka, such a producer with several requests in
// flight may see a retried batch land after a later one.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/result.h"

namespace sluice::shared {

class window_pipeline {
  public:
    // An entry's partition (any stable address naming it) and idempotent producer id.
    using dependency = std::pair<const void*, int64_t>;

    // A closed window, made by the owner: one record per entry (an append).
    struct window {
        virtual ~window() = default;
        struct entry {
            uint64_t arrival = 0;  // window_pipeline::stamp() when it arrived
            std::vector<dependency> depends_on;
        };
        std::vector<entry> entries;
        // Set by the pipeline before the commit stage: why an entry is not to be committed
        // (empty: commit it). Read by the commit and fail stages only.
        std::vector<std::optional<error>> cancelled;
        uint64_t seq = 0;  // the window's number, in closing order (set by submit)
    };

    struct stages {
        // Makes and uploads the window's object; runs on an upload thread, alongside the
        // uploads and the commit of other windows.
        std::function<result<void>(window&)> upload;
        // After a successful upload and the previous window's commit, on the commit
        // thread: commits the entries not cancelled (none: commits nothing) and answers
        // every entry, the cancelled ones with their error. An error: nothing was
        // committed (or the outcome is unknown), and nothing was answered.
        std::function<result<void>(window&)> commit;
        // Answers every entry: the window's upload or commit failed with `e` (a cancelled
        // entry: with its own error, or `e`).
        std::function<void(window&, const error& e)> fail;
    };

    window_pipeline(size_t max_in_flight, stages s);
    // Finishes the windows submitted (uploads, commits, answers), then stops.
    ~window_pipeline();
    window_pipeline(const window_pipeline&) = delete;
    window_pipeline& operator=(const window_pipeline&) = delete;

    // An arrival stamp for a new entry (increasing); entries of a window must carry
    // stamps above those of every window submitted before it.
    uint64_t stamp();
    // Blocks until fewer than max_in_flight windows are in flight.
    void wait_for_room();
    // Starts the window's upload (call after wait_for_room; never blocks).
    void submit(std::unique_ptr<window> w);
    size_t in_flight() const;

  private:
    struct slot {
        std::unique_ptr<window> w;
        enum class state : uint8_t { queued, uploading, uploaded } st = state::queued;
        std::optional<error> failure;  // the upload's
    };
    void run_uploader();
    void run_committer();
    // Sets w.cancelled from the failures noted so far (commit thread only).
    void cancel_dependents(window& w);
    void note_failure(const window& w, const error& e);

    const size_t _max_in_flight;
    const stages _stages;
    mutable std::mutex _mu;
    std::condition_variable _cv;
    std::deque<slot> _slots;  // in closing order; the front one commits next
    uint64_t _next_seq = 0;
    uint64_t _arrivals = 0;
    bool _stopping = false;
    // For each dependency of a failed entry: the arrival stamp at the failure; entries of
    // it that arrived before are cancelled (commit thread only).
    struct failed_at {
        uint64_t before = 0;  // the arrival stamp after the failure's last
        uint64_t window = 0;  // the window that failed
        std::string message;  // its error
    };
    std::map<dependency, failed_at> _failed_before;
    std::vector<std::thread> _uploaders;
    std::thread _committer;
};

}  // namespace sluice::shared
