#include "app/metrics_endpoint.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "app/sql_state.h"
#include "broker/broker.h"
#include "broker/broker_metrics.h"
#include "expansion/service.h"
#include "expansion/target_store.h"
#include "log/log_metrics.h"
#include "security/auth_metrics.h"
#include "sql/http/http_server.h"
#include "sql/sql_metrics.h"

namespace sluice::app {
namespace {

using metrics::label;
using metrics::metric_type;

// What only the event loop may read, taken in one visit: the topics and their partition
// counts by name, the groups and their committed offsets.
struct loop_snapshot {
    std::vector<std::pair<std::string, int32_t>> topics;
    size_t brokers = 1;
    std::vector<sql::broker_state::group> groups;
    std::vector<sql::broker_state::committed_offset> offsets;
};

// A topic's partitions as read from its log (describe(): loads an unused partition).
struct partition_figures {
    int32_t partition = 0;
    int64_t log_start = 0;
    int64_t high_watermark = 0;
};

constexpr std::string_view group_states[] = {"Empty", "PreparingRebalance",
                                             "CompletingRebalance", "Stable", "Dead"};

}  // namespace

bool readiness::ready(std::string& reason) const {
    std::lock_guard lk(_mu);
    reason = _reason;
    return _ready;
}

void readiness::set(bool ready, std::string reason) {
    std::lock_guard lk(_mu);
    _ready = ready;
    _reason = std::move(reason);
}

broker_collectors::broker_collectors(broker::broker& b, expansion::service* expansions,
                                     size_t max_partition_series)
    : _b(b),
      _expansions(expansions),
      _max_series(max_partition_series),
      _handle(metrics::global().add_collector([this](metrics::text_writer& w) { collect(w); })) {
    // Every family shows from the first scrape, at 0 until its first event.
    broker::declare_metrics();
    log::declare_metrics();
    sql::declare_metrics();
    security::declare_metrics();
    expansion::declare_metrics();
}

void broker_collectors::collect(metrics::text_writer& w) {
    // One visit: a stopping loop makes the scrape wait loop_wait once, not per part.
    auto list = on_loop<loop_snapshot>(_b, [this] {
        loop_snapshot out;
        for (const auto* t : _b.topics().all())
            out.topics.emplace_back(t->info.name, t->info.partitions);
        out.brokers = _b.broker_count();
        out.groups = sql_state::read_groups(_b);
        out.offsets = sql_state::read_group_offsets(_b);
        return out;
    });
    w.family("kafka_brokers", "Number of brokers announced to clients (advertised ids)",
             metric_type::gauge);
    w.sample("kafka_brokers", {}, static_cast<uint64_t>(list.brokers));
    uint64_t omitted = collect_topics(w, list.topics);
    omitted += collect_groups(w, list.groups, list.offsets);
    w.family("sluice_metrics_partitions_omitted",
             "Partitions (and group-topic partitions) whose per-partition series this scrape "
             "left out, past --metrics-max-partition-series",
             metric_type::gauge);
    w.sample("sluice_metrics_partitions_omitted", {}, omitted);
    w.family("sluice_flush_passes_total",
             "Flush passes of the group-commit flusher (each one fsync round for the appends "
             "before it)",
             metric_type::counter);
    w.sample("sluice_flush_passes_total", {}, _b.logs().flush_passes());
    collect_expansions(w);
}

uint64_t broker_collectors::collect_topics(
    metrics::text_writer& w, const std::vector<std::pair<std::string, int32_t>>& topics) {
    auto& logs = _b.logs();

    w.family("kafka_topic_partitions", "Number of partitions of the topic", metric_type::gauge);
    for (const auto& [name, n] : topics) {
        label l[] = {{"topic", name}};
        w.sample("kafka_topic_partitions", l, int64_t{n});
    }

    // Per-partition families: whole topics in name order within the bound.
    std::map<std::string, std::vector<partition_figures>> figures;
    std::map<std::string, int64_t> disk_bytes;
    uint64_t omitted = 0;
    size_t used = 0;
    for (const auto& [name, n] : topics) {
        if (used + static_cast<size_t>(n) > _max_series) {
            omitted += static_cast<uint64_t>(n);
            continue;
        }
        used += static_cast<size_t>(n);
        auto t = logs.topic(name);
        if (!t) continue;
        auto& out = figures[name];
        for (int32_t p = 0; p < n; ++p) {
            auto* plog = logs.partition(*t, p);
            if (!plog) continue;
            auto d = plog->describe();
            if (!d) continue;  // out of service: its errors are logged
            out.push_back({p, d->log_start_offset, d->high_watermark});
            disk_bytes[name] += d->bytes;
        }
    }
    auto partition_family = [&](const char* name, const char* help, auto value) {
        w.family(name, help, metric_type::gauge);
        for (const auto& [topic, ps] : figures) {
            for (const auto& f : ps) {
                std::string p = std::to_string(f.partition);
                label l[] = {{"topic", topic}, {"partition", p}};
                w.sample(name, l, int64_t{value(f)});
            }
        }
    };
    partition_family("kafka_topic_partition_current_offset",
                     "Current offset (high watermark) of the topic's partition",
                     [](const partition_figures& f) { return f.high_watermark; });
    partition_family("kafka_topic_partition_oldest_offset",
                     "Oldest offset (log start) of the topic's partition",
                     [](const partition_figures& f) { return f.log_start; });
    w.family("sluice_topic_disk_bytes",
             "Bytes of the topic's data files on disk (topics within "
             "--metrics-max-partition-series only)",
             metric_type::gauge);
    for (const auto& [topic, n] : disk_bytes) {
        label l[] = {{"topic", topic}};
        w.sample("sluice_topic_disk_bytes", l, n);
    }

    return omitted;
}

uint64_t broker_collectors::collect_groups(
    metrics::text_writer& w, const std::vector<sql::broker_state::group>& groups,
    const std::vector<sql::broker_state::committed_offset>& committed_offsets) {
    auto& logs = _b.logs();
    uint64_t omitted = 0;
    w.family("kafka_consumergroup_members", "Number of members of the consumer group",
             metric_type::gauge);
    std::map<std::string, uint64_t> by_state;
    for (auto s : group_states) by_state[std::string(s)] = 0;
    for (const auto& g : groups) {
        label l[] = {{"consumergroup", g.group_id}};
        w.sample("kafka_consumergroup_members", l, int64_t{g.members});
        ++by_state[g.state];
    }
    w.family("sluice_groups", "Consumer groups by state", metric_type::gauge);
    for (const auto& [state, n] : by_state) {
        label l[] = {{"state", state}};
        w.sample("sluice_groups", l, n);
    }

    struct committed {
        int32_t partition;
        int64_t offset;
        int64_t lag;
    };
    // (group, topic) -> its partitions' offsets and lag, in name order.
    std::map<std::pair<std::string, std::string>, std::vector<committed>> offsets;
    for (const auto& o : committed_offsets) {
        if (o.offset < 0) continue;
        int64_t lag = 0;
        if (auto t = logs.topic(o.topic))
            if (auto* plog = logs.partition(*t, o.partition))
                lag = std::max<int64_t>(0, plog->high_watermark() - o.offset);
        offsets[{o.group_id, o.topic}].push_back({o.partition, o.offset, lag});
    }
    for (auto& [key, ps] : offsets)
        std::sort(ps.begin(), ps.end(),
                  [](const committed& a, const committed& b) { return a.partition < b.partition; });
    size_t group_used = 0;
    std::vector<const std::pair<const std::pair<std::string, std::string>,
                                std::vector<committed>>*>
        shown;
    for (const auto& e : offsets) {
        if (group_used + e.second.size() > _max_series) {
            omitted += e.second.size();
            continue;
        }
        group_used += e.second.size();
        shown.push_back(&e);
    }
    auto group_family = [&](const char* name, const char* help, bool lag) {
        w.family(name, help, metric_type::gauge);
        for (const auto* e : shown) {
            for (const auto& c : e->second) {
                std::string p = std::to_string(c.partition);
                label l[] = {
                    {"consumergroup", e->first.first}, {"topic", e->first.second}, {"partition", p}};
                w.sample(name, l, lag ? c.lag : c.offset);
            }
        }
    };
    group_family("kafka_consumergroup_current_offset",
                 "Committed offset of the consumer group at the topic's partition", false);
    group_family("kafka_consumergroup_lag",
                 "Lag of the consumer group at the topic's partition: high watermark less its "
                 "committed offset",
                 true);
    auto group_sum = [&](const char* name, const char* help, bool lag) {
        w.family(name, help, metric_type::gauge);
        for (const auto& [key, ps] : offsets) {
            int64_t sum = 0;
            for (const auto& c : ps) sum += lag ? c.lag : c.offset;
            label l[] = {{"consumergroup", key.first}, {"topic", key.second}};
            w.sample(name, l, sum);
        }
    };
    group_sum("kafka_consumergroup_current_offset_sum",
              "Committed offsets of the consumer group at the topic, all partitions added up",
              false);
    group_sum("kafka_consumergroup_lag_sum",
              "Lag of the consumer group at the topic, all partitions added up", true);

    return omitted;
}

void broker_collectors::collect_expansions(metrics::text_writer& w) {
    if (!_expansions) return;
    auto list_exp = _expansions->list();
    auto exp_family = [&](const char* name, const char* help, metric_type type, auto value) {
        w.family(name, help, type);
        for (const auto& s : list_exp) {
            label l[] = {{"expansion", s.info.target}, {"topic", s.info.topic}};
            w.sample(name, l, int64_t{value(s)});
        }
    };
    exp_family("sluice_expansion_rows_written_total",
               "Rows the expansion wrote into its table since the broker started",
               metric_type::counter, [](const expansion::status& s) { return s.rows_written; });
    exp_family("sluice_expansion_lag",
               "Events below the topic's high watermarks the expansion has not expanded yet",
               metric_type::gauge, [](const expansion::status& s) { return s.lag; });
    exp_family("sluice_expansion_failed",
               "1 when the expansion failed (retried; its error in sluice expansion list)",
               metric_type::gauge,
               [](const expansion::status& s) { return int64_t{s.state == "failed" ? 1 : 0}; });
}

void add_metrics_routes(sql::http_server& http, const readiness& ready,
                        const metrics_options& opts) {
    const bool anonymous = opts.anonymous;
    http.add_route("GET", "/metrics",
                   [&http, anonymous](const sql::http::http_request& req,
                                      sql::http::http_response& resp) {
                       // With a login required, the principal needs Describe on the cluster
                       // (as for the security routes), unless --metrics-anonymous.
                       if (!anonymous &&
                           !sql::authorize_cluster(http, req, resp, security::action::describe,
                                                   "metrics"))
                           return;
                       resp.send(200, "text/plain; version=0.0.4; charset=utf-8",
                                 metrics::global().render());
                   });
    http.add_route("GET", "/healthz", [](const auto&, sql::http::http_response& resp) {
        resp.send(200, "text/plain; charset=utf-8", "ok\n");
    });
    http.add_route("GET", "/readyz",
                   [&ready](const auto&, sql::http::http_response& resp) {
                       std::string reason;
                       if (ready.ready(reason))
                           resp.send(200, "text/plain; charset=utf-8", "ready\n");
                       else
                           resp.send(503, "text/plain; charset=utf-8", "not ready: " + reason + "\n");
                   });
}

}  // namespace sluice::app
