#pragma once

// Brokers' registration with a lease in the shared catalog's sluice_brokers table
// (docs/formats/shared-catalog.md, docs/shared-mode.md#broker-leases). A broker takes its
// id with a lease that it renews before it passes; the live brokers are those whose lease
// has not passed, on the database's clock (brokers' clocks need not agree). A broker that
// stops renewing (killed, cut off) drops out of the list when its lease passes, and its
// partitions and groups move (placement.h).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "shared/pg_database.h"

namespace sluice::shared {

struct broker_address {
    int32_t broker_id = 0;
    std::string host;  // as clients reach it
    int32_t kafka_port = 0;
    std::optional<int32_t> sql_port;   // the PostgreSQL-protocol SQL listener
    std::optional<int32_t> http_port;  // the HTTP API
    std::optional<std::string> rack;
    bool operator==(const broker_address&) const = default;
};

struct live_broker {
    broker_address address;
    // Grows each time a process takes the id: a process's writes can be fenced by it.
    int64_t incarnation = 0;
    bool operator==(const live_broker&) const = default;
};

// The brokers whose lease has not passed, by id (any broker may ask; no registration
// needed).
result<std::vector<live_broker>> live_brokers(pg_database& db);

// One broker's registration. Thread-safe.
class broker_registry {
  public:
    // Takes address.broker_id with a lease of `lease` (at least 100 ms). Refused with
    // errc::in_use while another process holds the id with a lease that has not passed
    // (a broker restarted after kill -9 gets its id back once the old lease passes). Owns
    // its connection.
    static result<std::unique_ptr<broker_registry>> register_broker(
        const pg_config& config, broker_address address, std::chrono::milliseconds lease);
    ~broker_registry();  // stops renewing; the lease is left to pass (release() ends it)
    broker_registry(const broker_registry&) = delete;
    broker_registry& operator=(const broker_registry&) = delete;

    // Extends the lease by `lease` from now. When the lease had passed (the database was
    // out of reach for longer than a lease, so the others stopped counting this broker),
    // the id is taken again as a new incarnation: true then. errc::in_use when another
    // process took the id since (this one was fenced: it must stop serving).
    result<bool> renew();
    // Ends the lease now (a clean shutdown): the others stop counting this broker at once.
    result<void> release();
    result<std::vector<live_broker>> live();

    // The current incarnation (a renewal after the lease passed takes a new one).
    int64_t incarnation() const { return _incarnation.load(std::memory_order_acquire); }
    // Whether the lease is held: registered and renewed within a lease. False from the
    // moment the last successful renewal (or the registration) is a whole lease old, on
    // this broker's clock counted from before it was asked, until a renewal succeeds
    // again: the others may count this broker out from then on, whether or not the
    // renewing thread has noticed yet (a paused process, a renewal still waiting on the
    // database).
    bool member() const {
        return _member.load(std::memory_order_acquire) &&
               std::chrono::steady_clock::now().time_since_epoch().count() <
                   _valid_until.load(std::memory_order_acquire);
    }
    const broker_address& address() const { return _address; }

    // What the renewing thread reports, on that thread.
    struct lease_events {
        // Not renewed within a lease (the database out of reach): stop serving as a
        // member of the cluster. Renewing goes on.
        std::function<void(const error&)> lost;
        // Renewed again after `lost` (or the database found the lease passed): serve
        // again, as `incarnation` (a new one when the old lease had passed).
        std::function<void(int64_t incarnation)> regained;
        // Another process took the id: stop serving for good. Renewing stops.
        std::function<void(const error&)> fenced;
    };
    // Renews every lease/3 on a thread of its own, through database outages (see
    // lease_events), until stop_renewing() or the id is taken by another process.
    void start_renewing(lease_events events);
    void stop_renewing();

  private:
    broker_registry(std::unique_ptr<pg_database> db, broker_address address,
                    std::chrono::milliseconds lease, int64_t incarnation,
                    std::chrono::steady_clock::time_point asked)
        : _db(std::move(db)),
          _address(std::move(address)),
          _lease(lease),
          _incarnation(incarnation),
          _valid_until((asked + lease).time_since_epoch().count()) {}
    void renew_loop(const lease_events& events);

    std::unique_ptr<pg_database> _db;  // pg_database serializes its calls
    const broker_address _address;
    const std::chrono::milliseconds _lease;
    std::atomic<int64_t> _incarnation;
    std::atomic<bool> _member{true};  // false once the renewing thread found the lease lost
    // When the lease passes at the latest (steady_clock ticks): a lease after the moment
    // the last successful renewal was asked.
    std::atomic<std::chrono::steady_clock::rep> _valid_until;
    // A new incarnation whose COMMIT's outcome is unknown (renew() only): found in the
    // row next time, it is this process's.
    int64_t _tried_incarnation = 0;

    std::mutex _mu;
    std::condition_variable _cv;
    bool _stop = false;  // guarded by _mu
    std::thread _renewer;
};

}  // namespace sluice::shared
