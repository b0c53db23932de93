#pragma once

// What a broker in shared mode is handed (docs/shared-mode.md): the partition logs of
// the object store and the database, the shared catalog's topics, and this broker's
// lease. The broker keeps none of its data itself: partitions come from `log`, topics
// from `topics` (refreshed when another broker changes them), the brokers that Metadata
// lists are the live leases, and partition leadership and group coordination are spread
// over them by placement (shared/placement.h). Every broker accepts produce and fetch for
// every partition, so a stale leader costs a client nothing.

#include <chrono>
#include <string>
#include <string_view>

#include "shared/broker_registry.h"
#include "shared/pg_topic_store.h"
#include "shared/shared_log.h"

namespace sluice::broker {

struct shared_mode {
    // Outlive the broker.
    shared::shared_log* log = nullptr;
    shared::pg_topic_store* topics = nullptr;
    shared::broker_registry* registry = nullptr;  // set by broker::join_cluster
    int32_t node_id = 0;                          // this broker's id
    // How often the live brokers and the topics are read again (topics also when a
    // change is announced).
    std::chrono::milliseconds poll_interval{1000};
};

// Logs that a request asked for what shared mode does not serve yet (the caller answers
// with a Kafka error code).
void log_shared_unsupported(const std::string& client, std::string_view what);

}  // namespace sluice::broker
