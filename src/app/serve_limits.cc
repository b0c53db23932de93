#include "app/serve_limits.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "common/logging.h"

namespace sluice::app {

void add_connection_limit_flags(CLI::App& cmd, connection_limits& l) {
    cmd.add_option("--queued-max-request-bytes", l.queued_max_request_bytes,
                   "Kafka's queued.max.request.bytes: bytes that the Kafka requests being read "
                   "may hold together. A request partly read takes its whole size from it (one "
                   "above 256 KiB before more of it is read, in line; smaller ones ahead); "
                   "while none is left the broker stops reading such requests, and closes "
                   "connections once the requests waiting hold as much again. A request larger "
                   "than this closes its connection")
        ->check(CLI::Range(size_t{1} << 20, size_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--request-stall-timeout-ms", l.request_stall_timeout_ms,
                   "A Kafka request holding part of --queued-max-request-bytes that receives "
                   "no bytes for this long closes its connection, so that a client stopping "
                   "mid-request cannot keep its share; 0: never")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--max-in-flight-requests-per-connection",
                   l.max_in_flight_requests_per_connection,
                   "Kafka requests one connection may have read and not yet answered before "
                   "the broker stops reading from it (until half are answered); clients such "
                   "as librdkafka send one produce request per partition and pipeline them")
        ->check(CLI::Range(size_t{2}, size_t{1} << 20))
        ->capture_default_str();
    cmd.add_option("--max-in-flight-bytes-per-connection", l.max_in_flight_bytes_per_connection,
                   "The bytes of those requests one connection may have in flight before the "
                   "broker stops reading from it (until they are below half)")
        ->check(CLI::Range(size_t{1} << 20, size_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--max-in-flight-bytes", l.max_in_flight_bytes,
                   "The bytes of Kafka requests read and not yet answered on all connections "
                   "together: from half of it on, the broker stops reading from connections "
                   "holding more than their share of it, and at it from every connection that "
                   "has a request in flight, until answers go out; nothing is refused")
        ->check(CLI::Range(size_t{1} << 20, size_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--connections-max-idle-ms", l.connections_max_idle_ms,
                   "Kafka's connections.max.idle.ms: a Kafka connection with no byte read or "
                   "written for this long is closed; 0: never")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--max-connections", l.max_connections,
                   "Kafka's max.connections: Kafka connections (all listeners) held at once; a "
                   "new one beyond is closed. Changed at run time with kafka-configs "
                   "--entity-type brokers (docs/configuration.md)")
        ->check(CLI::Range(0, INT32_MAX))
        ->capture_default_str();
    cmd.add_option("--max-connections-per-ip", l.max_connections_per_ip,
                   "Kafka's max.connections.per.ip: Kafka connections held at once from one IP "
                   "address; a new one beyond is closed. Changed at run time as --max-connections")
        ->check(CLI::Range(0, INT32_MAX))
        ->capture_default_str();
    cmd.add_option("--max-connections-per-ip-overrides", l.max_connections_per_ip_overrides,
                   "Kafka's max.connections.per.ip.overrides: IP:COUNT,IP:COUNT, exceptions to "
                   "--max-connections-per-ip");
    cmd.add_option("--http-header-timeout-ms", l.http_header_timeout_ms,
                   "An HTTP request head (request line and headers) must be complete within "
                   "this time (from the connection's start, then from each request's first "
                   "byte), or the client gets 408 and the connection closes")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--pg-startup-timeout-ms", l.pg_startup_timeout_ms,
                   "PostgreSQL's authentication_timeout: a pg client must send its startup "
                   "packet and log in within this time, or its connection closes")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--pg-idle-session-timeout-ms", l.pg_idle_session_timeout_ms,
                   "PostgreSQL's idle_session_timeout: a pg session that sends nothing this "
                   "long is closed with FATAL 57P05 (25P03 inside a transaction block); 0: never")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--pg-max-starting-connections", l.pg_max_starting_connections,
                   "Connections the pg listener keeps that have not logged in yet, apart from "
                   "--sql-max-connections; beyond, the oldest starting for over a second is "
                   "closed to make room, or the new one is refused (53300)")
        ->check(CLI::Range(size_t{1}, size_t{100000}))
        ->capture_default_str();
    cmd.add_option("--max-incremental-fetch-session-cache-slots", l.fetch_session_cache_slots,
                   "Kafka's max.incremental.fetch.session.cache.slots: incremental fetch "
                   "sessions (KIP-227) the broker holds at once; a client refused one goes on "
                   "with full fetches; 0: none")
        ->check(CLI::Range(size_t{0}, size_t{1} << 24))
        ->capture_default_str();
    cmd.add_option("--min-incremental-fetch-session-eviction-ms", l.fetch_session_min_eviction_ms,
                   "How long a fetch session is unused before a new one may take its slot, and "
                   "how old it is before a new one of more partitions may (Kafka's fixed "
                   "120000)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
        ->capture_default_str();
}

void raise_fd_limit() {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        log_warn("app", "getrlimit(RLIMIT_NOFILE): {}", std::strerror(errno));
        return;
    }
    const auto soft = static_cast<uint64_t>(rl.rlim_cur);
    const auto hard = static_cast<uint64_t>(rl.rlim_max);
    if (rl.rlim_cur >= rl.rlim_max) {
        log_info("app", "descriptor limit {} (the hard limit)", soft);
        return;
    }
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        log_info("app", "descriptor limit {}: raising it to the hard limit {} failed: {}", soft,
                 hard, std::strerror(errno));
        return;
    }
    log_info("app", "descriptor limit raised from {} to the hard limit {}", soft, hard);
}

}  // namespace sluice::app
