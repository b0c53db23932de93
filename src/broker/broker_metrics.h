#pragma once

// The broker's counters in the process's metrics registry (metrics/registry.h;
// docs/operations.md lists them): requests per API, produced and fetched bytes per
// topic, open connections per listener, retention and compaction passes. Each hook is one call from the
// code it counts; series are looked up once and cached (per API in a table, per topic on
// the broker's topic_state).

#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/config.h"
#include "log/log_manager.h"
#include "net/in_flight_bound.h"

namespace sluice::metrics {
class counter;
}

namespace sluice::broker {

struct topic_state;

// Makes the broker's families known (shown at 0) before their first event.
void declare_metrics();

// A Kafka request answered (or released without an answer): sluice_kafka_requests_total
// {api, error} and sluice_kafka_request_duration_seconds{api}, from its arrival.
void count_request(int16_t api_key, int16_t error_code,
                   std::chrono::steady_clock::time_point started);

// Per-topic counters, resolved at the topic's first use on the loop thread and kept on
// its topic_state.
struct topic_counters {
    metrics::counter& produced_bytes;
    metrics::counter& produced_records;
    metrics::counter& fetched_bytes;
};
const topic_counters& topic_metrics(const topic_state& t);
// Records appended by Produce (not a duplicate's retry).
void count_produced(const topic_state& t, size_t bytes, int64_t records);
// What a Fetch answer carries, per topic.
void count_fetched(const std::vector<std::pair<const topic_state*, size_t>>& sent);

// sluice_kafka_connections{listener, protocol}: +1 when a connection opens, -1 at close.
void count_connection(const listener_config& lc, int delta);

// The bytes of requests read and not yet answered on all connections, after a change:
// sluice_kafka_in_flight_request_bytes and its highest value, _max.
void count_in_flight(const net::in_flight_bound& b);
// A connection stopped by that bound: sluice_kafka_in_flight_stops_total.
void count_in_flight_stop();

// A retention or compaction pass: sluice_retention_*, sluice_cleaner_*.
void count_retention(const log::log_manager::retention_stats& s);
void count_compaction(const log::log_manager::compaction_stats& s);

}  // namespace sluice::broker
