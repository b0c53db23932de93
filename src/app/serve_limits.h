#pragma once

// The `sluice serve` flags that bound what one client can take from the broker
// (docs/operations.md, "Limits"), and the descriptor limit raised at start-up.

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice::app {

struct connection_limits {
    // Kafka's queued.max.request.bytes: the bytes of Kafka requests being read at once.
    size_t queued_max_request_bytes = size_t{256} << 20;
    int64_t request_stall_timeout_ms = 30'000;  // 0: never
    // broker::config's: requests, and bytes of them, one Kafka connection has in flight.
    size_t max_in_flight_requests_per_connection = 4096;
    size_t max_in_flight_bytes_per_connection = size_t{256} << 20;
    size_t max_in_flight_bytes = size_t{1} << 30;  // all connections together
    int64_t connections_max_idle_ms = 600'000;  // 0: never
    int64_t http_header_timeout_ms = 10'000;
    int64_t pg_startup_timeout_ms = 10'000;
    int64_t pg_idle_session_timeout_ms = 600'000;  // 0: never
    size_t pg_max_starting_connections = 64;
    // Kafka's max.incremental.fetch.session.cache.slots (KIP-227).
    size_t fetch_session_cache_slots = 1000;
    // Kafka's max.connections, max.connections.per.ip, max.connections.per.ip.overrides:
    // the static values of these dynamic broker configs.
    int32_t max_connections = INT32_MAX;
    int32_t max_connections_per_ip = INT32_MAX;
    std::string max_connections_per_ip_overrides;
    // Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS.
    int64_t fetch_session_min_eviction_ms = 120'000;
};

void add_connection_limit_flags(CLI::App& cmd, connection_limits& l);

// Raises RLIMIT_NOFILE's soft limit to the hard limit where allowed, and logs the
// outcome at INFO.
void raise_fd_limit();

}  // namespace sluice::app
