// sluice-loadgen: produce / consume load generator for Sluice (or any
// Kafka-compatible broker), built on librdkafka's C API.
//
// Units: MB = 10^6 bytes of record value payload; latencies in milliseconds.
//
// Exit codes: 0 success, 1 delivery/consume errors (or fewer records than
// requested), 2 usage/configuration/connection errors, 130 interrupted.

#include "loadgen.h"

#include <malloc.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

namespace sluice_loadgen {

std::atomic<bool> g_interrupted{false};

namespace {

extern "C" void on_signal(int) {
    g_interrupted.store(true);
}

// ---------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------

void print_usage(FILE* out) {
    std::fprintf(out, R"(usage: sluice-loadgen --mode produce|consume --topic T [options]

Produces or consumes fixed-size records against a Kafka-compatible broker and
prints a human-readable summary plus one machine-readable line:
  RESULT mode=produce records=N rps=R mbps=M p50_ms=A p99_ms=B p999_ms=C ...
  RESULT mode=consume records=N rps=R mbps=M ...
MB = 10^6 bytes of record payload (record values; keys are not sent).

options:
  --bootstrap HOST:PORT   broker address (default 127.0.0.1:9092)
  --topic T               topic name (required; must already exist)
  --mode produce|consume  what to do (required)
  --records N             produce: records to send (default 1000000);
                          consume: stop after N records (default 0 = read
                          until every selected partition reports EOF)
  --record-size BYTES     produce: value size per record (default 1024); ignored
                          with --value-json10
  --value-json10          produce: each value is a 10-field JSON object of
                          203-271 bytes (236 on average) whose values vary per
                          record (id, ts, user, amount, qty, active, country,
                          tags, address {city, zip, street}, note); MB/s
                          counts the actual value bytes
  --acks -1|1|0           produce: required acks (default -1 = all)
  --rate-mbps X           produce: pace to a steady X MB/s (default 0 = as
                          fast as possible)
  --rate-rps R            produce: pace to a steady R records/s instead
  --pace-step-us US       produce, paced: sleep only when the schedule is US
                          ahead, so records go out in steps of US (default 0:
                          a sleep before every record that is early)
  --partitions LIST       partition ids to use, e.g. "0,1,2", "0-7", "0-3,6";
                          a single number selects that one partition (use
                          "0-3" for the first four). Default: all partitions
                          from metadata. Produce spreads records round-robin.
  --duration-s S          stop producing/consuming after S seconds (default:
                          no cap); the run still ends successfully
  --producers N           produce: N producers, each with its own connection
                          (its own librdkafka instance); producer j takes
                          partitions j, j+N, j+2N, ... of the selected ones
                          (default 1; at most the number of partitions)
  --linger-ms MS          produce: linger.ms (default 5)
  --batch-bytes BYTES     produce: batch.size (default 1048576)
  --message-timeout-ms MS produce: message.timeout.ms (default 30000)
  --timeout-s S           metadata/connect timeout (default 10)
  --idle-timeout-s S      consume: fail if no record/EOF arrives for S seconds
                          (default 30)
  --consumer-api simple|assign
                          consume: "simple" (default) uses the per-partition
                          queue consumer and needs no group.id; "assign"
                          sets group.id (see --group-id) and uses
                          rd_kafka_assign(), which in librdkafka 2.0 requires
                          a group.id and makes the client look up a group
                          coordinator
  --group-id ID           group.id for --consumer-api assign (default
                          sluice-loadgen); offsets are never committed
  --set key=value         extra librdkafka property (repeatable; applied last,
                          so it overrides the defaults above)
  --verbose               print librdkafka logs and per-error details
  -h, --help              this help
)");
}

[[noreturn]] void usage_error(const std::string& msg) {
    std::fprintf(stderr, "sluice-loadgen: %s\n(try --help)\n", msg.c_str());
    std::exit(kExitUsage);
}

int64_t parse_int(const std::string& opt, const std::string& v, int64_t lo, int64_t hi) {
    errno = 0;
    char* end = nullptr;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || errno != 0 || end == nullptr || *end != '\0' || x < lo || x > hi) {
        usage_error("invalid value for " + opt + ": '" + v + "' (expected integer in [" +
                    std::to_string(lo) + ", " + std::to_string(hi) + "])");
    }
    return x;
}

double parse_double(const std::string& opt, const std::string& v, double lo) {
    errno = 0;
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || errno != 0 || end == nullptr || *end != '\0' || !(x >= lo)) {
        usage_error("invalid value for " + opt + ": '" + v + "'");
    }
    return x;
}

std::vector<int32_t> parse_partition_list(const std::string& spec);

Options parse_args(int argc, char** argv) {
    Options o;
    std::vector<std::string> args(argv + 1, argv + argc);
    for (size_t i = 0; i < args.size(); ++i) {
        std::string a = args[i];
        if (a == "-h" || a == "--help") {
            print_usage(stdout);
            std::exit(kExitOk);
        }
        if (a == "--verbose") {
            o.verbose = true;
            continue;
        }
        if (a == "--value-json10") {
            o.value_json10 = true;
            continue;
        }
        std::string val;
        bool have_val = false;
        if (a.rfind("--", 0) == 0) {
            auto eq = a.find('=');
            if (eq != std::string::npos) {
                val = a.substr(eq + 1);
                a = a.substr(0, eq);
                have_val = true;
            }
        } else {
            usage_error("unexpected argument '" + a + "'");
        }
        auto need = [&]() -> std::string {
            if (have_val) return val;
            if (i + 1 >= args.size()) usage_error("missing value for " + a);
            return args[++i];
        };
        if (a == "--bootstrap") {
            o.bootstrap = need();
        } else if (a == "--topic") {
            o.topic = need();
        } else if (a == "--mode") {
            o.mode = need();
        } else if (a == "--records") {
            o.records = parse_int(a, need(), 0, INT64_MAX / 2);
        } else if (a == "--record-size") {
            o.record_size = parse_int(a, need(), 0, 100 * 1000 * 1000);
        } else if (a == "--acks") {
            o.acks = need();
            if (o.acks == "all") o.acks = "-1";
            if (o.acks != "-1" && o.acks != "0" && o.acks != "1")
                usage_error("--acks must be -1, 1 or 0");
        } else if (a == "--rate-mbps") {
            o.rate_mbps = parse_double(a, need(), 0.0);
        } else if (a == "--rate-rps") {
            o.rate_rps = parse_double(a, need(), 0.0);
        } else if (a == "--pace-step-us") {
            o.pace_step_us = parse_int(a, need(), 0, 1000000);
        } else if (a == "--partitions") {
            o.partitions_spec = need();
        } else if (a == "--duration-s") {
            o.duration_s = parse_double(a, need(), 0.0);
        } else if (a == "--producers") {
            o.producers = static_cast<int>(parse_int(a, need(), 1, 10000));
        } else if (a == "--linger-ms") {
            o.linger_ms = static_cast<int>(parse_int(a, need(), 0, 900000));
        } else if (a == "--batch-bytes") {
            o.batch_bytes = parse_int(a, need(), 1, 2147483647);
        } else if (a == "--message-timeout-ms") {
            o.message_timeout_ms = static_cast<int>(parse_int(a, need(), 1, 2147483647));
        } else if (a == "--timeout-s") {
            o.timeout_s = parse_double(a, need(), 0.001);
        } else if (a == "--idle-timeout-s") {
            o.idle_timeout_s = parse_double(a, need(), 0.001);
        } else if (a == "--consumer-api") {
            o.consumer_api = need();
            if (o.consumer_api != "simple" && o.consumer_api != "assign")
                usage_error("--consumer-api must be simple or assign");
        } else if (a == "--group-id") {
            o.group_id = need();
        } else if (a == "--set") {
            std::string kv = need();
            auto eq = kv.find('=');
            if (eq == std::string::npos || eq == 0)
                usage_error("--set expects key=value, got '" + kv + "'");
            o.sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
        } else {
            usage_error("unknown option '" + a + "'");
        }
    }
    if (o.mode != "produce" && o.mode != "consume")
        usage_error("--mode produce|consume is required");
    if (o.topic.empty()) usage_error("--topic is required");
    if (o.bootstrap.empty()) usage_error("--bootstrap must not be empty");
    if (o.rate_mbps > 0 && o.rate_rps > 0) usage_error("give --rate-mbps or --rate-rps, not both");
    if (!o.partitions_spec.empty()) (void)parse_partition_list(o.partitions_spec);  // syntax check
    return o;
}

// "0,1,5-7" -> {0,1,5,6,7}
std::vector<int32_t> parse_partition_list(const std::string& spec) {
    std::set<int32_t> out;
    size_t pos = 0;
    while (pos <= spec.size()) {
        size_t comma = spec.find(',', pos);
        std::string item =
            spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (item.empty()) usage_error("bad --partitions list '" + spec + "'");
        auto dash = item.find('-');
        if (dash == std::string::npos) {
            out.insert(static_cast<int32_t>(parse_int("--partitions", item, 0, INT32_MAX)));
        } else {
            auto lo = parse_int("--partitions", item.substr(0, dash), 0, INT32_MAX);
            auto hi = parse_int("--partitions", item.substr(dash + 1), 0, INT32_MAX);
            if (hi < lo || hi - lo > 100000) usage_error("bad partition range '" + item + "'");
            for (auto p = lo; p <= hi; ++p) out.insert(static_cast<int32_t>(p));
        }
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    return {out.begin(), out.end()};
}


// ---------------------------------------------------------------------------
// librdkafka helpers
// ---------------------------------------------------------------------------

}  // namespace


extern "C" void error_cb(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
    auto* st = static_cast<ClientState*>(opaque);
    int n = st->error_events.fetch_add(1);
    {
        std::lock_guard<std::mutex> lk(st->mu);
        st->last_error =
            std::string(rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err))) + ": " + reason;
    }
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char buf[512];
        rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof buf);
        std::fprintf(stderr, "sluice-loadgen: FATAL client error: %s: %s\n",
                     rd_kafka_err2name(orig), buf);
        st->fatal.store(true);
        return;
    }
    // Rate-limit noisy transport errors (e.g. "1/1 brokers are down").
    if (st->verbose || n < 5) {
        std::fprintf(stderr, "sluice-loadgen: client error: %s: %s\n",
                     rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err)), reason);
    } else if (n == 5) {
        std::fprintf(stderr, "sluice-loadgen: (further client errors suppressed; use --verbose)\n");
    }
}

extern "C" void log_cb(const rd_kafka_t*, int level, const char* fac, const char* buf) {
    std::fprintf(stderr, "rdkafka[%d] %s: %s\n", level, fac, buf);
}

// Quiet logger: librdkafka already reports errors via error_cb, so only
// print the rare critical-or-worse log lines here.
extern "C" void quiet_log_cb(const rd_kafka_t*, int level, const char* fac, const char* buf) {
    if (level <= 2) std::fprintf(stderr, "rdkafka[%d] %s: %s\n", level, fac, buf);
}

void conf_set_or_die(rd_kafka_conf_t* conf, const std::string& k, const std::string& v) {
    char err[512];
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
        std::fprintf(stderr, "sluice-loadgen: cannot set %s=%s: %s\n", k.c_str(), v.c_str(), err);
        std::exit(kExitUsage);
    }
}

rd_kafka_conf_t* base_conf(const Options& o, ClientState* st) {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    conf_set_or_die(conf, "bootstrap.servers", o.bootstrap);
    conf_set_or_die(conf, "client.id", "sluice-loadgen");
    conf_set_or_die(conf, "socket.nagle.disable", "true");
    conf_set_or_die(conf, "log.connection.close", "false");
    // The topic must exist already; never let metadata requests create it.
    conf_set_or_die(conf, "allow.auto.create.topics", "false");
    rd_kafka_conf_set_opaque(conf, st);
    rd_kafka_conf_set_error_cb(conf, error_cb);
    rd_kafka_conf_set_log_cb(conf, o.verbose ? log_cb : quiet_log_cb);
    return conf;
}

void apply_user_sets(rd_kafka_conf_t* conf, const Options& o) {
    for (const auto& [k, v] : o.sets) conf_set_or_die(conf, k, v);
}

// Fetches metadata for the topic and returns the partitions to use, honouring
// --partitions. Exits with kExitUsage on failure.
std::vector<int32_t> resolve_partitions(rd_kafka_t* rk, rd_kafka_topic_t* rkt, const Options& o) {
    const rd_kafka_metadata_t* md = nullptr;
    int timeout_ms = static_cast<int>(o.timeout_s * 1000.0);
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        std::fprintf(
            stderr, "sluice-loadgen: metadata request to %s failed after %.1f s: %s (%s)\n",
            o.bootstrap.c_str(), o.timeout_s, rd_kafka_err2str(err), rd_kafka_err2name(err));
        std::exit(kExitUsage);
    }
    std::vector<int32_t> all;
    bool found = false;
    for (int i = 0; i < md->topic_cnt; ++i) {
        const auto& t = md->topics[i];
        if (o.topic != t.topic) continue;
        found = true;
        if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            std::fprintf(stderr, "sluice-loadgen: topic '%s': %s (%s)\n", o.topic.c_str(),
                         rd_kafka_err2str(t.err), rd_kafka_err2name(t.err));
            rd_kafka_metadata_destroy(md);
            std::exit(kExitUsage);
        }
        for (int p = 0; p < t.partition_cnt; ++p) all.push_back(t.partitions[p].id);
    }
    rd_kafka_metadata_destroy(md);
    if (!found || all.empty()) {
        std::fprintf(stderr,
                     "sluice-loadgen: topic '%s' not found in metadata or has no partitions\n",
                     o.topic.c_str());
        std::exit(kExitUsage);
    }
    std::sort(all.begin(), all.end());
    if (o.partitions_spec.empty()) return all;
    auto wanted = parse_partition_list(o.partitions_spec);
    for (int32_t p : wanted) {
        if (!std::binary_search(all.begin(), all.end(), p)) {
            std::fprintf(
                stderr,
                "sluice-loadgen: partition %d does not exist in topic '%s' (%zu partitions)\n", p,
                o.topic.c_str(), all.size());
            std::exit(kExitUsage);
        }
    }
    return wanted;
}

Client open_client(rd_kafka_type_t type, rd_kafka_conf_t* conf, const Options& o, bool resolve) {
    apply_user_sets(conf, o);
    char errstr[512];
    rd_kafka_t* rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (!rk) {
        std::fprintf(stderr, "sluice-loadgen: cannot create %s: %s\n",
                     type == RD_KAFKA_PRODUCER ? "producer" : "consumer", errstr);
        std::exit(kExitUsage);
    }
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, o.topic.c_str(), nullptr);
    if (!resolve) return {rk, rkt, {}};
    return {rk, rkt, resolve_partitions(rk, rkt, o)};
}

std::string fmt_num(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}

std::string join_partitions(const std::vector<int32_t>& ps) {
    if (ps.empty()) return "";
    // Compress consecutive runs: 0-7,9
    std::string s;
    size_t i = 0;
    while (i < ps.size()) {
        size_t j = i;
        while (j + 1 < ps.size() && ps[j + 1] == ps[j] + 1) ++j;
        if (!s.empty()) s += ',';
        s += std::to_string(ps[i]);
        if (j > i) {
            s += '-';
            s += std::to_string(ps[j]);
        }
        i = j + 1;
    }
    return s;
}


}  // namespace sluice_loadgen

using namespace sluice_loadgen;

int main(int argc, char** argv) {
    Options o = parse_args(argc, argv);
    // Keep freed buffers in the heap for reuse: on virtual machines first-touch page
    // faults cost more than the copies, and would measure the allocator, not the broker.
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    return o.mode == "produce" ? run_produce(o) : run_consume(o);
}
