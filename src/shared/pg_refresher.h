#pragma once

// How brokers sharing a catalog learn of each other's changes to what they keep in memory
// (users and policies, expansions' definitions, topics): each change commits with NOTIFY
// on the subject's channel and, for users, policies and expansions, moves the subject's
// row of sluice_change_versions on (docs/formats/shared-catalog.md). A pg_refresher
// thread LISTENs on the channels and runs the subjects' refreshes when notified, when its
// connection was made again (notifications sent meanwhile are lost) and every
// poll_interval whatever happens (NOTIFY is an accelerator only), so a change made on
// one broker is in another's memory within milliseconds, and at the latest after one
// poll_interval while the database is reachable.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "shared/pg_database.h"

namespace sluice::shared {

// Locks the subject's row of sluice_change_versions (until the transaction ends, so that
// the subject's writers serialize) and moves its version on. Returns the new version.
result<int64_t> bump_change_version(pg_transaction& tx, const char* subject);
// The subject's version as the transaction sees it.
result<int64_t> read_change_version(pg_transaction& tx, const char* subject);

// What the stores of users and policies and of expansions share: a state read whole, with
// the version it is at (a `State` has `int64_t version`), by `load` in a transaction.
template <typename State>
using state_loader = std::function<result<State>(pg_transaction&)>;

// The subject's state from one snapshot (REPEATABLE READ) when its version is not `seen`;
// nullopt when it is (one single-row read).
template <typename State>
result<std::optional<State>> load_if_moved(pg_database& db, const char* subject, int64_t seen,
                                           const state_loader<State>& load) {
    return db.transact<std::optional<State>>(
        isolation_level::repeatable_read, [&](pg_transaction& tx) -> result<std::optional<State>> {
            auto v = read_change_version(tx, subject);
            if (!v) return v.err();
            if (*v == seen) return std::optional<State>{};
            auto s = load(tx);
            if (!s) return s.err();
            return std::optional<State>(std::move(*s));
        });
}

// One change of the subject at READ COMMITTED: takes the subject's version row lock and
// moves it on first (so the body's checks see every earlier change and no later one can
// come between them and the commit), runs `body`, reads the state back and NOTIFYs
// `channel` with `payload`. Returns the state as committed.
template <typename State>
result<State> change_and_load(pg_database& db, const char* subject, const char* channel,
                              const std::string& payload,
                              const std::function<result<void>(pg_transaction&)>& body,
                              const state_loader<State>& load) {
    return db.transact<State>(isolation_level::read_committed,
                              [&](pg_transaction& tx) -> result<State> {
                                  if (auto v = bump_change_version(tx, subject); !v) return v.err();
                                  if (auto r = body(tx); !r) return r.err();
                                  auto s = load(tx);
                                  if (!s) return s.err();
                                  if (auto n = tx.notify(channel, payload); !n) return n.err();
                                  return s;
                              });
}

class pg_refresher {
  public:
    struct subject {
        std::string channel;
        // Reads the subject again when it changed; returns whether it did.
        std::function<result<bool>()> refresh;
    };
    // LISTENs on the subjects' channels on a connection of its own and starts the thread.
    static result<std::unique_ptr<pg_refresher>> start(
        const pg_config& config, std::vector<subject> subjects,
        std::chrono::milliseconds poll_interval = std::chrono::milliseconds(1000));
    ~pg_refresher();  // stops the thread (within a quarter of a second)
    pg_refresher(const pg_refresher&) = delete;
    pg_refresher& operator=(const pg_refresher&) = delete;

    // Refreshes run (each subject's call counts; for tests and metrics).
    uint64_t refreshes() const { return _refreshes.load(); }

  private:
    pg_refresher(std::unique_ptr<pg_listener> l, std::vector<subject> s,
                 std::chrono::milliseconds poll)
        : _listener(std::move(l)), _subjects(std::move(s)), _poll(poll) {}
    void run();
    void refresh(const subject& s);

    std::unique_ptr<pg_listener> _listener;
    std::vector<subject> _subjects;
    const std::chrono::milliseconds _poll;
    std::atomic<bool> _stop{false};
    std::atomic<uint64_t> _refreshes{0};
    std::thread _thread;
};

}  // namespace sluice::shared
