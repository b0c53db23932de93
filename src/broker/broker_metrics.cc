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
    s.duration->observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

const topic_counters& topic_metrics(const topic_state& t) {
    if (!t.counters) {
        auto& r = metrics::global();
        static auto& bytes = r.counters(
            "sluice_topic_produced_bytes_total",
            "Bytes of record batches appended to the topic (as stored, compressed or not)",
            {"topic"});
        static auto& records = r.counters("sluice_topic_produced_records_total",
                                          "Records appended to the topic", {"topic"});
        static auto& fetched = r.counters("sluice_topic_fetched_bytes_total",
                                          "Bytes of record batches sent to Fetch requests",
                                          {"topic"});
        const auto& name = t.info.name;
        t.counters = std::make_shared<topic_counters>(
            topic_counters{bytes.with({name}), records.with({name}), fetched.with({name})});
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
    static auto& f = metrics::global().gauges(
        "sluice_kafka_connections", "Open Kafka connections, by listener and security protocol",
        {"listener", "protocol"});
    f.with({lc.address.to_string(), std::string(protocol_name(lc.protocol))}).add(delta);
}

void count_retention(const log::log_manager::retention_stats& s) {
    auto& r = metrics::global();
    static auto& passes = r.counter_of("sluice_retention_runs_total", "Retention passes");
    static auto& segments = r.counter_of("sluice_retention_segments_deleted_total",
                                         "Segments deleted by retention (time or size)");
    static auto& bytes = r.counter_of("sluice_retention_bytes_deleted_total",
                                      "Bytes of data files deleted by retention");
    passes.inc();
    segments.inc(s.segments_deleted);
    bytes.inc(static_cast<uint64_t>(std::max<int64_t>(s.bytes_deleted, 0)));
}

void count_compaction(const log::log_manager::compaction_stats& s) {
    auto& r = metrics::global();
    static auto& passes =
        r.counter_of("sluice_cleaner_runs_total", "Compaction passes over the compacted topics");
    static auto& cleaned = r.counter_of("sluice_cleaner_partitions_cleaned_total",
                                        "Partitions a compaction pass rewrote");
    static auto& records = r.counter_of("sluice_cleaner_records_removed_total",
                                        "Records compaction removed (superseded keys, tombstones)");
    static auto& reclaimed = r.counter_of(
        "sluice_cleaner_bytes_reclaimed_total",
        "Bytes of data files compaction replaced, less the size of their rewrites");
    static auto& failed = r.counter_of("sluice_cleaner_partition_failures_total",
                                       "Partitions whose compaction failed (logged, retried)");
    passes.inc();
    cleaned.inc(s.partitions_cleaned);
    records.inc(static_cast<uint64_t>(std::max<int64_t>(s.records_removed, 0)));
    reclaimed.inc(static_cast<uint64_t>(std::max<int64_t>(s.bytes_reclaimed, 0)));
    failed.inc(s.partitions_failed);
}

}  // namespace sluice::broker
