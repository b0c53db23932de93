#pragma once

// Where the share-partition work of share groups runs: ShareFetch's and
// ShareAcknowledge's (the reads of the log and group::share::partition_work's
// acquisitions, acknowledgements and releases), and the share coordinator's own (a
// leaving or timed-out member's release, the share group offset APIs and
// system.share_groups' windows, share::coordinator::set_runner).
// In shared mode it waits on the database and the object store, so it runs on the shared
// log's reader threads (shared_log::run_read), as Fetch's reads do, never on the event
// loop: a slow database delays that share session's answers, not the broker's other
// connections. Jobs of one share session (group, member id) run one at a time in the
// order they were given, so a session's acknowledgements, acquisitions and closing
// release apply in the order of its requests, as they did on the loop, and the release of
// a member that left comes after the work of its requests before the leave; the offset
// APIs of one group (key (group, "")) apply in arrival order too. Keys run side by side. In single-node mode (share-partitions in memory, changed on the loop thread)
// a job runs at once, on the caller's thread.

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>

namespace sluice::net {
class event_loop;
}
namespace sluice::shared {
class shared_log;
}

namespace sluice::broker {

class share_work_queue {
  public:
    explicit share_work_queue(net::event_loop& loop) : _loop(loop) {}
    // Shared mode: jobs run on the log's reader threads from now on.
    void set_log(shared::shared_log* log) { _log = log; }

    // Loop thread: runs `job` (which must hold nothing that is the loop's alone, such as
    // a request's connection: it is let go off the loop), then `done` (if any) on the
    // loop thread.
    // A job given while the log stops may never run.
    void run(const std::string& group, const std::string& member, std::function<void()> job,
             std::function<void()> done);

  private:
    using key = std::pair<std::string, std::string>;
    struct entry {
        std::function<void()> job;
        std::function<void()> done;
    };
    void start(const key& k);
    void finish(const key& k);

    net::event_loop& _loop;
    shared::shared_log* _log = nullptr;
    std::map<key, std::deque<entry>> _sessions;  // the front's job runs or is queued
};

}  // namespace sluice::broker
