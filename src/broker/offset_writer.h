#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catalog/offset_store.h"
#include "group/state_store.h"
#include "net/event_loop.h"

namespace sluice::broker {

// Makes committed offsets and group state durable off the event loop. Writes are applied
// in submission order; everything queued while a transaction runs goes into the next one
// (group commit: one fsync for every consumer that committed meanwhile; group state, in
// its own store, takes a second transaction when a batch holds both). Each job's callback
// then runs on the loop thread, in submission order, so the coordinator's in-memory copy
// follows the same order as the database.
class offset_writer final : public group::state_writer {
  public:
    using done_fn = std::function<void(result<void>)>;

    offset_writer(std::unique_ptr<catalog::offset_store> store,
                  std::unique_ptr<group::state_store> groups, net::event_loop& loop);
    // Finishes every queued job (their callbacks are posted to the loop) and joins.
    ~offset_writer() override;
    offset_writer(const offset_writer&) = delete;
    offset_writer& operator=(const offset_writer&) = delete;

    void submit(std::vector<catalog::offset_write> writes, done_fn done);
    // Shared mode: called on the loop with the groups whose writes a store refused
    // because another broker took them over (shared/group_fence.h), before the callbacks
    // of those writes, which get errc::fenced.
    void on_fenced(std::function<void(const std::set<std::string>&)> fn) {
        _on_fenced = std::move(fn);
    }
    // group::state_writer: the coordinator's group state.
    void write(group::group_write w, done_fn done) override;

  private:
    struct job {
        std::vector<catalog::offset_write> writes;
        std::vector<group::group_write> group_writes;
        done_fn done;
        // The groups of its group coordinator's writes (those a store may refuse), named
        // before the writes are moved into a transaction.
        std::set<std::string> coordinated;
    };
    void enqueue(job j);
    static std::optional<std::string> fenced_group(const job& j,
                                                   const std::set<std::string>& fenced);
    void run();

    std::function<void(const std::set<std::string>&)> _on_fenced;  // loop thread
    std::unique_ptr<catalog::offset_store> _store;
    std::unique_ptr<group::state_store> _groups;
    net::event_loop& _loop;
    std::mutex _mu;
    std::condition_variable _cv;
    std::deque<job> _queue;  // guarded by _mu
    bool _stop = false;      // guarded by _mu
    std::thread _thread;
};

}  // namespace sluice::broker
