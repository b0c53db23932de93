#include "shared/broker_registry.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/logging.h"

namespace sluice::shared {
namespace {

using steady = std::chrono::steady_clock;

// An interval as every PostgreSQL-compatible database parses it.
std::string interval(std::chrono::milliseconds d) {
    return fmt::format("{} milliseconds", d.count());
}

pg_param optional_int(const std::optional<int32_t>& v) {
    return v ? pg_param(std::to_string(*v)) : std::nullopt;
}

}  // namespace

result<std::vector<live_broker>> live_brokers(pg_database& db) {
    auto rows = db.exec(
        "SELECT broker_id, incarnation, kafka_host, kafka_port, sql_port, http_port, rack "
        "FROM sluice_brokers WHERE lease_expires_at > CURRENT_TIMESTAMP ORDER BY broker_id");
    if (!rows) return rows.err();
    std::vector<live_broker> out;
    out.reserve(rows->size());
    for (size_t r = 0; r < rows->size(); ++r) {
        live_broker b;
        b.address.broker_id = static_cast<int32_t>(rows->int64(r, 0));
        b.incarnation = rows->int64(r, 1);
        b.address.host = rows->text(r, 2);
        b.address.kafka_port = static_cast<int32_t>(rows->int64(r, 3));
        if (!rows->is_null(r, 4)) b.address.sql_port = static_cast<int32_t>(rows->int64(r, 4));
        if (!rows->is_null(r, 5)) b.address.http_port = static_cast<int32_t>(rows->int64(r, 5));
        if (!rows->is_null(r, 6)) b.address.rack = rows->text(r, 6);
        out.push_back(std::move(b));
    }
    return out;
}

result<std::unique_ptr<broker_registry>> broker_registry::register_broker(
    const pg_config& config, broker_address a, std::chrono::milliseconds lease) {
    if (lease < std::chrono::milliseconds(100))
        return error{
            errc::invalid_argument,
            fmt::format("a broker lease of {} ms; it must be at least 100 ms", lease.count())};
    // A renewal that waits on an unreachable database must give up while the lease may
    // still be renewed by the next attempt.
    pg_config c = config;
    c.retry_deadline = std::min(c.retry_deadline, lease / 3);
    auto db = pg_database::connect(c);
    if (!db) return db.err();
    auto take = [&](pg_transaction& tx) -> result<int64_t> {
        // The row lock queues two processes taking the same id at once.
        auto row = tx.exec(
            "SELECT incarnation, CASE WHEN lease_expires_at > CURRENT_TIMESTAMP THEN 1 ELSE 0 "
            "END, kafka_host, kafka_port FROM sluice_brokers WHERE broker_id = CAST($1 AS "
            "INTEGER) FOR UPDATE",
            {std::to_string(a.broker_id)});
        if (!row) return row.err();
        const std::vector<pg_param> values{std::to_string(a.broker_id),
                                           a.host,
                                           std::to_string(a.kafka_port),
                                           optional_int(a.sql_port),
                                           optional_int(a.http_port),
                                           a.rack ? pg_param(*a.rack) : std::nullopt,
                                           interval(lease)};
        if (row->size() == 0) {
            auto ins = tx.exec(
                "INSERT INTO sluice_brokers (broker_id, incarnation, kafka_host, kafka_port, "
                "sql_port, http_port, rack, registered_at, lease_expires_at) VALUES "
                "(CAST($1 AS INTEGER), 1, $2, CAST($3 AS INTEGER), CAST($4 AS INTEGER), "
                "CAST($5 AS INTEGER), $6, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP + CAST($7 AS "
                "INTERVAL))",
                values);
            if (!ins) return ins.err();
            return int64_t{1};
        }
        if (row->int64(0, 1) != 0)
            return error{errc::in_use,
                         fmt::format("broker id {} is held by a live broker at {}:{} "
                                     "(incarnation {}) whose lease has not passed; stop it, or "
                                     "wait for its lease of up to {} ms to pass",
                                     a.broker_id, row->text(0, 2), row->text(0, 3), row->text(0, 0),
                                     lease.count())};
        const int64_t next = row->int64(0, 0) + 1;
        auto values_up = values;
        values_up.emplace_back(std::to_string(next));
        auto up = tx.exec(
            "UPDATE sluice_brokers SET incarnation = CAST($8 AS BIGINT), kafka_host = $2, "
            "kafka_port = CAST($3 AS INTEGER), sql_port = CAST($4 AS INTEGER), http_port = "
            "CAST($5 AS INTEGER), rack = $6, registered_at = CURRENT_TIMESTAMP, "
            "lease_expires_at = CURRENT_TIMESTAMP + CAST($7 AS INTERVAL) "
            "WHERE broker_id = CAST($1 AS INTEGER)",
            values_up);
        if (!up) return up.err();
        return next;
    };
    // Two first registrations of one id at once: the second's insert fails on the primary
    // key (already_exists) and finds the row on its next try.
    for (int attempt = 0;; ++attempt) {
        const auto asked = steady::now();
        auto inc = (*db)->transact<int64_t>(isolation_level::read_committed, take);
        if (inc) {
            log_info("shared", "registered as broker {} at {}:{} (incarnation {}, lease {} ms)",
                     a.broker_id, a.host, a.kafka_port, *inc, lease.count());
            return std::unique_ptr<broker_registry>(
                new broker_registry(std::move(*db), std::move(a), lease, *inc, asked));
        }
        if (inc.code() != errc::already_exists || attempt >= 3) return inc.err();
    }
}

broker_registry::~broker_registry() {
    stop_renewing();
}

result<bool> broker_registry::renew() {
    const auto asked = steady::now();
    const int64_t mine = incarnation();
    int64_t next = mine;
    auto r = _db->transact<bool>(
        isolation_level::read_committed, [&](pg_transaction& tx) -> result<bool> {
            auto row = tx.exec(
                "SELECT incarnation, CASE WHEN lease_expires_at > CURRENT_TIMESTAMP THEN 1 ELSE 0 "
                "END FROM sluice_brokers WHERE broker_id = CAST($1 AS INTEGER) FOR UPDATE",
                {std::to_string(_address.broker_id)});
            if (!row) return row.err();
            const int64_t held = row->size() == 1 ? row->int64(0, 0) : -1;
            if (held != mine && (_tried_incarnation == 0 || held != _tried_incarnation))
                return error{
                    errc::in_use,
                    fmt::format("broker {} (incarnation {}) was fenced: another process took "
                                "its id (incarnation {})",
                                _address.broker_id, mine, held)};
            // The others stopped counting this broker when its lease passed: what it began
            // under that incarnation (job leases, produce windows) must commit nothing, so it
            // comes back as a new one.
            const bool passed = row->int64(0, 1) == 0;
            next = passed ? held + 1 : held;
            auto up = tx.exec(
                "UPDATE sluice_brokers SET incarnation = CAST($3 AS BIGINT), lease_expires_at = "
                "CURRENT_TIMESTAMP + CAST($2 AS INTERVAL), registered_at = CASE WHEN incarnation = "
                "CAST($3 AS BIGINT) THEN registered_at ELSE CURRENT_TIMESTAMP END "
                "WHERE broker_id = CAST($1 AS INTEGER)",
                {std::to_string(_address.broker_id), interval(_lease), std::to_string(next)});
            if (!up) return up.err();
            return next != mine;
        });
    if (!r) {
        if (next != mine) _tried_incarnation = next;  // COMMIT's outcome may be unknown
        return r;
    }
    _tried_incarnation = 0;
    _incarnation.store(next, std::memory_order_release);
    _valid_until.store((asked + _lease).time_since_epoch().count(), std::memory_order_release);
    if (*r)
        log_warn("shared", "broker {}: its lease had passed; registered again as incarnation {}",
                 _address.broker_id, next);
    return r;
}

result<void> broker_registry::release() {
    auto up = _db->exec(
        "UPDATE sluice_brokers SET lease_expires_at = CURRENT_TIMESTAMP "
        "WHERE broker_id = CAST($1 AS INTEGER) AND incarnation = CAST($2 AS BIGINT)",
        {std::to_string(_address.broker_id), std::to_string(_incarnation)});
    if (!up) return up.err();
    return {};
}

result<std::vector<live_broker>> broker_registry::live() {
    return live_brokers(*_db);
}

void broker_registry::start_renewing(lease_events events) {
    std::lock_guard lock(_mu);
    if (_renewer.joinable()) return;
    _stop = false;
    _renewer = std::thread([this, ev = std::move(events)] { renew_loop(ev); });
}

void broker_registry::stop_renewing() {
    {
        std::lock_guard lock(_mu);
        _stop = true;
    }
    _cv.notify_all();
    if (_renewer.joinable() && _renewer.get_id() != std::this_thread::get_id()) _renewer.join();
}

void broker_registry::renew_loop(const lease_events& events) {
    const auto every = std::max(_lease / 3, std::chrono::milliseconds(10));
    // When the lease passes (registration or the last renewal, counted from before it was
    // asked: the estimate stays on the safe side).
    auto valid_until = [this] {
        return steady::time_point(steady::duration(_valid_until.load(std::memory_order_acquire)));
    };
    for (;;) {
        {
            std::unique_lock lock(_mu);
            if (_cv.wait_for(lock, every, [this] { return _stop; })) return;
        }
        const bool was_member = member();
        auto r = renew();
        if (r) {
            if (!was_member || !_member.load(std::memory_order_acquire) || *r) {
                log_info("shared", "broker {}: lease held again (incarnation {}); serving",
                         _address.broker_id, incarnation());
                _member.store(true, std::memory_order_release);
                if (events.regained) events.regained(incarnation());
            }
            continue;
        }
        if (r.code() == errc::in_use) {
            _member.store(false, std::memory_order_release);
            log_error("shared", "{}", r.err().message);
            if (events.fenced) events.fenced(r.err());
            return;
        }
        if (_member.load(std::memory_order_acquire) && steady::now() >= valid_until()) {
            _member.store(false, std::memory_order_release);
            error e{errc::timed_out,
                    fmt::format("broker {} lost its lease: not renewed within {} ms; last "
                                "failure: {}",
                                _address.broker_id, _lease.count(), r.err().message)};
            log_error("shared", "{}; not serving as a member until it is renewed", e.message);
            if (events.lost) events.lost(e);
            continue;
        }
        log_warn("shared", "broker {}: renewing the lease failed (retrying): {}",
                 _address.broker_id, r.err().message);
    }
}

}  // namespace sluice::shared
