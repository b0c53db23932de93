#include "broker/broker_metrics.h"

#include <algorithm>
#include <array>
#include <memory>
#include <string>

#include "broker/api_table.h"
#include "broker/topic_registry.h"
#include "metrics/registry.h"
#include "protocol/error_code.h"

namespace sluice::broker {
namespace {

metrics::family<metrics::counter>& request_counters() {
    static auto& f = metrics::global().counters(
        "sluice_kafka_requests_total",
        "Kafka requests answered, by API (as Kafka names it) and the response's top-level "
        "error code (NONE when it has none or reports errors per partition)",
        {"api", "error"});
    return f;
}

// The series of each API's successful requests and durations, resolved once.
struct api_series {
    metrics::counter* ok = nullptr;
    metrics::histogram* duration = nullptr;
    std::string_view name;
};
constexpr size_t max_api_key = 128;  // Kafka's keys stay far below (75 in 4.x)

const std::array<api_series, max_api_key>& api_table_series() {
    static const auto series = [] {
        std::array<api_series, max_api_key> t{};
        auto& durations = metrics::global().histograms(
            "sluice_kafka_request_duration_seconds",
            "Time from a Kafka request's arrival to its answer (acks=all produce waits for "
            "the fsync, a long-polling fetch for data), by API",
            {"api"});
        for (const auto& a : supported_apis()) {
            auto k = static_cast<size_t>(a.key);
            if (k >= max_api_key) continue;
            std::string name(a.name);
            t[k] = {&request_counters().with({name, "NONE"}), &durations.with({name}), a.name};
        }
        return t;
    }();
    return series;
}

}  // namespace

void count_request(int16_t api_key, int16_t error_code,
                   std::chrono::steady_clock::time_point started) {
    if (api_key < 0 || static_cast<size_t>(api_key) >= max_api_key) return;
    const auto& s = api_table_series()[static_cast<size_t>(api_key)];
    if (!s.ok) return;
    if (error_code == 0) {
        s.ok->inc();
    } else {
        // Rare: the lookup takes the family's lock.
        request_counters()
            .with({std::string(s.name), std::string(protocol::error_name(
                                            static_cast<protocol::error_code>(error_code)))})
            .inc();
    }
    s.duration->observe_since(started);
}

namespace {

struct topic_families {
    metrics::family<metrics::counter>& produced_bytes;
    metrics::family<metrics::counter>& produced_records;
    metrics::family<metrics::counter>& fetched_bytes;
};

const topic_families& topic_family_set() {
    auto& r = metrics::global();
    static const topic_families f{
        r.counters("sluice_topic_produced_bytes_total",
                   "Bytes of record batches appended to the topic (as stored, compressed or not)",
                   {"topic"}),
        r.counters("sluice_topic_produced_records_total", "Records appended to the topic",
                   {"topic"}),
        r.counters("sluice_topic_fetched_bytes_total",
                   "Bytes of record batches sent to Fetch requests", {"topic"}),
    };
    return f;
}

metrics::family<metrics::gauge>& connection_gauges() {
    static auto& f = metrics::global().gauges(
        "sluice_kafka_connections", "Open Kafka connections, by listener and security protocol",
        {"listener", "protocol"});
    return f;
}

struct in_flight_series {
    metrics::gauge& bytes;
    metrics::gauge& peak;
    metrics::counter& stops;
};

const in_flight_series& in_flight_metrics() {
    auto& r = metrics::global();
    static const in_flight_series s{
        r.gauges("sluice_kafka_in_flight_request_bytes",
                 "Bytes of Kafka requests read and not yet answered, all connections together")
            .with({}),
        r.gauges("sluice_kafka_in_flight_request_bytes_max",
                 "The most bytes of Kafka requests read and not yet answered at once since the "
                 "broker started")
            .with({}),
        r.counter_of("sluice_kafka_in_flight_stops_total",
                     "Times a Kafka connection stopped being read because of "
                     "--max-in-flight-bytes"),
    };
    return s;
}

struct pass_counters {
    metrics::counter& retention_runs;
    metrics::counter& retention_segments;
    metrics::counter& retention_bytes;
    metrics::counter& cleaner_runs;
    metrics::counter& cleaner_partitions;
    metrics::counter& cleaner_records;
    metrics::counter& cleaner_reclaimed;
    metrics::counter& cleaner_failures;
};

const pass_counters& passes() {
    auto& r = metrics::global();
    static const pass_counters c{
        r.counter_of("sluice_retention_runs_total", "Retention passes"),
        r.counter_of("sluice_retention_segments_deleted_total",
                     "Segments deleted by retention (time or size)"),
        r.counter_of("sluice_retention_bytes_deleted_total",
                     "Bytes of data files deleted by retention"),
        r.counter_of("sluice_cleaner_runs_total", "Compaction passes over the compacted topics"),
        r.counter_of("sluice_cleaner_partitions_cleaned_total",
                     "Partitions a compaction pass rewrote"),
        r.counter_of("sluice_cleaner_records_removed_total",
                     "Records compaction removed (superseded keys, tombstones)"),
        r.counter_of("sluice_cleaner_bytes_reclaimed_total",
                     "Bytes of data files compaction replaced, less the size of their rewrites"),
        r.counter_of("sluice_cleaner_partition_failures_total",
                     "Partitions whose compaction failed (logged, retried)"),
    };
    return c;
}

}  // namespace

void declare_metrics() {
    (void)api_table_series();
    (void)topic_family_set();
    (void)connection_gauges();
    (void)in_flight_metrics();
    (void)passes();
}

const topic_counters& topic_metrics(const topic_state& t) {
    if (!t.counters) {
        const auto& f = topic_family_set();
        const auto& name = t.info.name;
        t.counters = std::make_shared<topic_counters>(topic_counters{
            f.produced_bytes.with({name}), f.produced_records.with({name}),
            f.fetched_bytes.with({name})});
    }
    return *t.counters;
}

void count_produced(const topic_state& t, size_t bytes, int64_t records) {
    const auto& c = topic_metrics(t);
    c.produced_bytes.inc(bytes);
    if (records > 0) c.produced_records.inc(static_cast<uint64_t>(records));
}

void count_fetched(const std::vector<std::pair<const topic_state*, size_t>>& sent) {
    for (const auto& [t, n] : sent)
        if (t) topic_metrics(*t).fetched_bytes.inc(n);
}

void count_connection(const listener_config& lc, int delta) {
    connection_gauges()
        .with({lc.address.to_string(), std::string(protocol_name(lc.protocol))})
        .add(delta);
}

void count_in_flight(const net::in_flight_bound& b) {
    const auto& s = in_flight_metrics();
    s.bytes.set(static_cast<double>(b.used()));
    s.peak.set(static_cast<double>(b.peak()));
}

void count_in_flight_stop() { in_flight_metrics().stops.inc(); }

void count_retention(const log::log_manager::retention_stats& s) {
    const auto& c = passes();
    c.retention_runs.inc();
    c.retention_segments.inc(s.segments_deleted);
    c.retention_bytes.inc(static_cast<uint64_t>(std::max<int64_t>(s.bytes_deleted, 0)));
}

void count_compaction(const log::log_manager::compaction_stats& s) {
    const auto& c = passes();
    c.cleaner_runs.inc();
    c.cleaner_partitions.inc(s.partitions_cleaned);
    c.cleaner_records.inc(static_cast<uint64_t>(std::max<int64_t>(s.records_removed, 0)));
    c.cleaner_reclaimed.inc(static_cast<uint64_t>(std::max<int64_t>(s.bytes_reclaimed, 0)));
    c.cleaner_failures.inc(s.partitions_failed);
}

}  // namespace sluice::broker
