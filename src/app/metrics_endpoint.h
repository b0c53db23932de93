#pragma once

// GET /metrics, /healthz and /readyz on the HTTP listener (docs/operations.md), and the
// families computed at scrape time: kafka_exporter's for topics and groups (so that
// dashboards made for it work unchanged), and Sluice's own gauges of storage, groups and
// expansions.

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "metrics/registry.h"
#include "sql/system_tables.h"

namespace sluice::broker {
class broker;
}
namespace sluice::expansion {
class service;
}
namespace sluice::sql {
class http_server;
}

namespace sluice::app {

// What /readyz answers: 503 with the reason until the broker serves (storage recovered,
// every listener bound), 200 then, 503 again once shutdown begins.
class readiness {
  public:
    void set_ready() { set(true, {}); }
    void set_not_ready(std::string reason) { set(false, std::move(reason)); }
    // Whether ready; the reason when not.
    bool ready(std::string& reason) const;

  private:
    void set(bool ready, std::string reason);
    mutable std::mutex _mu;
    bool _ready = false;
    std::string _reason = "starting";
};

struct metrics_options {
    // Per-partition series (kafka_topic_partition_*, kafka_consumergroup_current_offset,
    // kafka_consumergroup_lag) at most in each family: whole topics (and whole group-topic
    // pairs) in name order, leaving out any that would pass the bound. Those keep their
    // per-topic families only; sluice_metrics_partitions_omitted says how many were left out.
    size_t max_partition_series = 10000;
    // Serve /metrics without credentials even when the broker requires a login.
    bool anonymous = false;
};

// Registers the scrape-time families with the global registry; they read the broker
// (on its loop), its logs and the expansions. Destroy before those.
class broker_collectors {
  public:
    broker_collectors(broker::broker& b, expansion::service* expansions,
                      size_t max_partition_series);

  private:
    void collect(metrics::text_writer& w);
    // Each returns the per-partition series it left out.
    uint64_t collect_topics(metrics::text_writer& w,
                            const std::vector<std::pair<std::string, int32_t>>& topics);
    uint64_t collect_groups(metrics::text_writer& w,
                            const std::vector<sql::broker_state::group>& groups,
                            const std::vector<sql::broker_state::committed_offset>& offsets);
    void collect_expansions(metrics::text_writer& w);

    broker::broker& _b;
    expansion::service* _expansions;
    size_t _max_series;
    metrics::collector_handle _handle;  // last: removed first
};

// GET /metrics (the global registry), /healthz and /readyz.
void add_metrics_routes(sql::http_server& http, const readiness& ready,
                        const metrics_options& opts);

}  // namespace sluice::app
