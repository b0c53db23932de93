#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "group/types.h"
#include "net/listener.h"

namespace sluice::broker {

struct broker_config {
    std::filesystem::path data_dir = "data";
    net::host_port listen{"127.0.0.1", 9092};
    // Addresses announced in Metadata; each becomes its own broker id. Empty: the
    // bound listen address.
    std::vector<net::host_port> advertise;
    bool auto_create_topics = false;
    int32_t default_partitions = 1;
    // Broker-level overrides of topic config defaults (key -> value).
    std::map<std::string, std::string> topic_defaults;
    size_t max_request_bytes = 100 * 1024 * 1024;  // Kafka's socket.request.max.bytes
    size_t max_open_files = 1024;
    // Requests one connection may have in flight before the broker stops reading from
    // it; librdkafka pipelines up to 1,000,000 by default, so this bounds memory.
    size_t max_in_flight_per_connection = 256;
    group::config groups;
    // offsets.retention.check.interval.ms: how often expired offsets are swept.
    int64_t offsets_retention_check_interval_ms = 600000;
    // log.retention.check.interval.ms: how often segments are deleted by retention.
    int64_t log_retention_check_interval_ms = 300000;
    // log.cleaner.backoff.ms: pause between compaction passes (Kafka's default).
    int64_t log_cleaner_backoff_ms = 15000;
};

}  // namespace sluice::broker
