// sluice-loadgen's parts, shared by loadgen.cc (command line, librdkafka helpers, main),
// loadgen_produce.cc and loadgen_consume.cc.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sluice_loadgen {

using Clock = std::chrono::steady_clock;

constexpr int kExitOk = 0;
constexpr int kExitErrors = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInterrupted = 130;

extern std::atomic<bool> g_interrupted;

inline int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
}

inline double seconds_between(int64_t a_ns, int64_t b_ns) {
    return static_cast<double>(b_ns - a_ns) / 1e9;
}

struct Options {
    std::string bootstrap = "127.0.0.1:9092";
    std::string topic;
    std::string mode;                // "produce" | "consume"
    std::optional<int64_t> records;  // produce default 1'000'000; consume default 0 (= until EOF)
    int64_t record_size = 1024;
    bool value_json10 = false;  // produce: 10-field JSON objects instead of random bytes
    std::string acks = "-1";
    double rate_mbps = 0.0;       // 0 = flat out
    double rate_rps = 0.0;        // 0 = flat out (records/s; exclusive with rate_mbps)
    int64_t pace_step_us = 0;     // paced: sleep only once this far ahead (0: every record)
    std::string partitions_spec;  // empty = all partitions from metadata
    double duration_s = 0.0;      // 0 = no cap
    int producers = 1;  // produce: producer instances, each on its own connection
    int linger_ms = 5;
    int64_t batch_bytes = 1048576;
    double timeout_s = 10.0;         // metadata / connect timeout
    double idle_timeout_s = 30.0;    // consumer: give up after this long without progress
    int message_timeout_ms = 30000;  // producer: per-message delivery timeout
    std::string consumer_api =
        "simple";  // "simple" (no group.id) | "assign" (group.id + rd_kafka_assign)
    std::string group_id = "sluice-loadgen";
    std::vector<std::pair<std::string, std::string>> sets;  // --set key=value
    bool verbose = false;
};


struct ClientState {
    bool verbose = false;
    std::atomic<bool> fatal{false};
    std::atomic<int> error_events{0};
    std::mutex mu;
    std::string last_error;
};

void conf_set_or_die(rd_kafka_conf_t* conf, const std::string& k, const std::string& v);
// A client configuration with the options every mode shares; st receives error events.
rd_kafka_conf_t* base_conf(const Options& o, ClientState* st);

struct Client {
    rd_kafka_t* rk;
    rd_kafka_topic_t* rkt;
    std::vector<int32_t> partitions;
};

// Applies --set overrides, creates the client (taking ownership of conf) and, when
// resolve is set, the partitions to use. Exits with kExitUsage on failure.
Client open_client(rd_kafka_type_t type, rd_kafka_conf_t* conf, const Options& o,
                   bool resolve = true);

std::string fmt_num(double x);
std::string join_partitions(const std::vector<int32_t>& ps);

int run_produce(const Options& o);
int run_consume(const Options& o);

}  // namespace sluice_loadgen
