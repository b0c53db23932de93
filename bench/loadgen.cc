// sluice-loadgen: produce / consume load generator for Sluice (or any
// Kafka-compatible broker), built on librdkafka's C API.
//
// Units: MB = 10^6 bytes of record value payload; latencies in milliseconds.
//
// Exit codes: 0 success, 1 delivery/consume errors (or fewer records than
// requested), 2 usage/configuration/connection errors, 130 interrupted.

#include <librdkafka/rdkafka.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitOk = 0;
constexpr int kExitErrors = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInterrupted = 130;

std::atomic<bool> g_interrupted{false};

extern "C" void on_signal(int) {
    g_interrupted.store(true);
}

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
}

double seconds_between(int64_t a_ns, int64_t b_ns) {
    return static_cast<double>(b_ns - a_ns) / 1e9;
}

// ---------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------

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

struct ClientState {
    bool verbose = false;
    std::atomic<bool> fatal{false};
    std::atomic<int> error_events{0};
    std::mutex mu;
    std::string last_error;
};

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

struct Client {
    rd_kafka_t* rk;
    rd_kafka_topic_t* rkt;
    std::vector<int32_t> partitions;
};

// Applies --set overrides, creates the client (taking ownership of conf) and resolves
// the partitions to use. Exits with kExitUsage on failure.
Client open_client(rd_kafka_type_t type, rd_kafka_conf_t* conf, const Options& o) {
    apply_user_sets(conf, o);
    char errstr[512];
    rd_kafka_t* rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (!rk) {
        std::fprintf(stderr, "sluice-loadgen: cannot create %s: %s\n",
                     type == RD_KAFKA_PRODUCER ? "producer" : "consumer", errstr);
        std::exit(kExitUsage);
    }
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, o.topic.c_str(), nullptr);
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

// ---------------------------------------------------------------------------
// Produce
// ---------------------------------------------------------------------------

// --value-json10: a JSON object of 10 top-level fields (one of them a 3-field object),
// 203-271 bytes (236 on average), whose values vary from record to record: a
// sequential id and timestamp, the rest drawn from a fixed-seed PRNG, so a run is
// reproducible.
//   {"id":17,"ts":1764460800017,"user":"user-482113","amount":1234.56,"qty":42,
//    "active":true,"country":"DE","tags":["beta","gamma"],
//    "address":{"city":"Lisbon","zip":10115,"street":"42 Harbour Road"},"note":"..."}
class Json10Values {
  public:
    explicit Json10Values(uint64_t seed) : state_(seed) { buf_.reserve(512); }

    // The value of record i; valid until the next call.
    std::string_view make(int64_t i) {
        static constexpr const char* kCountries[] = {"DE", "FR", "PT", "US",
                                                     "JP", "BR", "IN", "NG"};
        static constexpr const char* kTags[] = {"alpha", "beta", "gamma", "delta", "eps", "zeta"};
        static constexpr const char* kCities[] = {"Lisbon", "Berlin", "Osaka",  "Lagos", "Recife",
                                                  "Pune",   "Lyon",   "Denver", "Porto", "Kyoto"};
        static constexpr const char* kStreets[] = {"Harbour Road",   "Main Street", "Rua Augusta",
                                                   "Station Avenue", "Mill Lane",   "Elm Close"};
        static constexpr std::string_view kText =
            "the quick brown fox jumps over the lazy dog while a sly cat naps in the warm sun";
        const uint64_t r1 = next(), r2 = next();
        buf_.clear();
        buf_ += "{\"id\":";
        num(i);
        buf_ += ",\"ts\":";
        num(kBaseMs + i);
        buf_ += ",\"user\":\"user-";
        num(static_cast<int64_t>(100000 + r1 % 900000));
        buf_ += "\",\"amount\":";
        const uint64_t cents = (r1 >> 20) % 1000000;
        num(static_cast<int64_t>(cents / 100));
        buf_ += '.';
        buf_ += static_cast<char>('0' + cents / 10 % 10);
        buf_ += static_cast<char>('0' + cents % 10);
        buf_ += ",\"qty\":";
        num(static_cast<int64_t>((r1 >> 40) % 100));
        buf_ += (r1 >> 47) & 1 ? ",\"active\":true" : ",\"active\":false";
        buf_ += ",\"country\":\"";
        buf_ += kCountries[(r1 >> 48) % std::size(kCountries)];
        buf_ += "\",\"tags\":[";
        const uint64_t ntags = 1 + (r1 >> 52) % 3;
        for (uint64_t t = 0; t < ntags; ++t) {
            if (t) buf_ += ',';
            buf_ += '"';
            buf_ += kTags[(r2 >> (8 * t)) % std::size(kTags)];
            buf_ += '"';
        }
        buf_ += "],\"address\":{\"city\":\"";
        buf_ += kCities[(r2 >> 24) % std::size(kCities)];
        buf_ += "\",\"zip\":";
        num(static_cast<int64_t>(10000 + (r2 >> 28) % 90000));
        buf_ += ",\"street\":\"";
        num(static_cast<int64_t>(1 + (r2 >> 45) % 200));
        buf_ += ' ';
        buf_ += kStreets[(r2 >> 53) % std::size(kStreets)];
        buf_ += "\"},\"note\":\"";
        const size_t len = 10 + (r2 >> 56) % 40, from = (r2 >> 36) % (kText.size() - len);
        buf_ += kText.substr(from, len);
        buf_ += "\"}";
        return buf_;
    }

  private:
    static constexpr int64_t kBaseMs = 1764460800000;  // 2025-11-30T00:00:00Z

    uint64_t next() {  // splitmix64
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    void num(int64_t v) {
        char tmp[24];
        auto [end, ec] = std::to_chars(tmp, tmp + sizeof tmp, v);
        (void)ec;
        buf_.append(tmp, end);
    }

    std::string buf_;
    uint64_t state_;
};

// The client-wide opaque is a ClientState*; for producers it points at the
// ClientState base of a ProduceState so the delivery callback can reach it.
struct ProduceState : ClientState {
    // Written only by the poller thread (delivery report callback).
    std::vector<uint32_t> latencies_us;
    int64_t last_delivery_ns = 0;
    std::map<std::string, int64_t> error_counts;  // "ERR_NAME: text" -> count
    // Shared.
    std::atomic<int64_t> delivered{0};
    std::atomic<int64_t> delivered_bytes{0};
    std::atomic<int64_t> failed{0};
};

extern "C" void dr_msg_cb(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* ps = static_cast<ProduceState*>(static_cast<ClientState*>(opaque));
    int64_t t = now_ns();
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        std::string key = std::string(rd_kafka_err2name(m->err)) + ": " + rd_kafka_err2str(m->err);
        int64_t n = ++ps->error_counts[key];
        int64_t f = ps->failed.fetch_add(1);
        if (ps->verbose || f < 5) {
            std::fprintf(stderr, "sluice-loadgen: delivery failed (partition %d): %s\n",
                         m->partition, key.c_str());
        }
        (void)n;
        return;
    }
    auto sent_ns = static_cast<int64_t>(reinterpret_cast<uintptr_t>(m->_private));
    int64_t lat_us = (t - sent_ns) / 1000;
    if (lat_us < 0) lat_us = 0;
    if (lat_us > UINT32_MAX) lat_us = UINT32_MAX;
    ps->latencies_us.push_back(static_cast<uint32_t>(lat_us));
    ps->last_delivery_ns = t;
    ps->delivered.fetch_add(1, std::memory_order_relaxed);
    ps->delivered_bytes.fetch_add(static_cast<int64_t>(m->len), std::memory_order_relaxed);
}

double percentile_ms(const std::vector<uint32_t>& sorted, double q) {
    if (sorted.empty()) return 0.0;
    // Nearest-rank percentile.
    auto n = sorted.size();
    auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return static_cast<double>(sorted[rank - 1]) / 1000.0;
}

int run_produce(const Options& o) {
    const int64_t records = o.records.value_or(1000000);
    ProduceState ps;
    ps.verbose = o.verbose;
    ClientState& cs = ps;

    rd_kafka_conf_t* conf = base_conf(o, &cs);
    conf_set_or_die(conf, "acks", o.acks);
    conf_set_or_die(conf, "compression.type", "none");
    conf_set_or_die(conf, "enable.idempotence", "false");
    conf_set_or_die(conf, "linger.ms", std::to_string(o.linger_ms));
    conf_set_or_die(conf, "batch.size", std::to_string(o.batch_bytes));
    // batch.size is additionally capped by message.max.bytes; lift it if needed.
    conf_set_or_die(
        conf, "message.max.bytes",
        std::to_string(std::max<int64_t>(1000000, std::max(o.batch_bytes, o.record_size + 4096))));
    conf_set_or_die(conf, "batch.num.messages", "100000");
    conf_set_or_die(conf, "queue.buffering.max.messages", "100000");
    conf_set_or_die(conf, "queue.buffering.max.kbytes", "1048576");
    conf_set_or_die(conf, "message.timeout.ms", std::to_string(o.message_timeout_ms));
    rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
    auto [rk, rkt, partitions] = open_client(RD_KAFKA_PRODUCER, conf, o);

    ps.latencies_us.reserve(static_cast<size_t>(std::min<int64_t>(records, 50'000'000)));

    // Payload pool: random bytes (incompressible); each record points at a
    // different offset so consecutive records differ. Not copied (flags 0):
    // the pool outlives the producer.
    const size_t pool_size = static_cast<size_t>(o.record_size) + (1u << 20);
    std::vector<char> pool(pool_size);
    {
        std::mt19937_64 rng(0x5ec0de);
        for (size_t i = 0; i < pool_size; i += 8) {
            uint64_t r = rng();
            std::memcpy(pool.data() + i, &r, std::min<size_t>(8, pool_size - i));
        }
    }

    // Delivery reports are served by a dedicated poller thread so that pacing
    // sleeps in the produce loop never delay them (which would inflate latency).
    // Only this thread runs dr_msg_cb, so ProduceState needs no locking.
    std::atomic<bool> stop_poller{false};
    std::thread poller([&] {
        while (!stop_poller.load()) rd_kafka_poll(rk, 50);
    });

    // JSON values: generated per record and copied by librdkafka. Their size varies;
    // value_size is the mean over the first 10,000, for pacing by MB/s and the summary.
    constexpr uint64_t kJsonSeed = 0x5ec0de;
    Json10Values json(kJsonSeed);
    int64_t value_size = o.record_size;
    if (o.value_json10) {
        Json10Values sample(kJsonSeed);
        int64_t total = 0;
        for (int64_t i = 0; i < 10000; ++i) total += static_cast<int64_t>(sample.make(i).size());
        value_size = (total + 5000) / 10000;
    }

    const bool paced = o.rate_mbps > 0.0 || o.rate_rps > 0.0;
    const double ns_per_record = o.rate_rps > 0.0 ? 1e9 / o.rate_rps
                                 : paced
                                     ? (static_cast<double>(value_size) / (o.rate_mbps * 1e6)) * 1e9
                                     : 0.0;
    const int64_t start_ns = now_ns();
    const int64_t cap_ns =
        o.duration_s > 0 ? start_ns + static_cast<int64_t>(o.duration_s * 1e9) : INT64_MAX;

    std::printf(
        "sluice-loadgen produce: bootstrap=%s topic=%s partitions=%s acks=%s record_size=%" PRId64
        " records=%" PRId64 " target=%s linger_ms=%d batch_bytes=%" PRId64 "%s\n",
        o.bootstrap.c_str(), o.topic.c_str(), join_partitions(partitions).c_str(), o.acks.c_str(),
        value_size, records,
        o.rate_rps > 0 ? (fmt_num(o.rate_rps) + "rec/s").c_str()
        : paced        ? (fmt_num(o.rate_mbps) + "MB/s").c_str()
                       : "flat-out",
        o.linger_ms, o.batch_bytes,
        o.duration_s > 0 ? (" duration_cap_s=" + fmt_num(o.duration_s)).c_str() : "");
    std::fflush(stdout);

    int64_t produced = 0;
    int64_t queue_full_waits = 0;
    std::string produce_error;
    size_t pool_off = 0;
    const size_t pool_span = pool_size - static_cast<size_t>(o.record_size);
    const size_t np = partitions.size();
    bool capped = false;

    for (int64_t i = 0; i < records; ++i) {
        if (g_interrupted.load() || cs.fatal.load()) break;
        if (ps.failed.load(std::memory_order_relaxed) > 0) break;  // stop early on delivery errors
        int64_t t = now_ns();
        if (t >= cap_ns) {
            capped = true;
            break;
        }
        if (paced) {
            int64_t due = start_ns + static_cast<int64_t>(static_cast<double>(i) * ns_per_record);
            if (due > cap_ns) {
                capped = true;
                break;
            }
            if (due > t + o.pace_step_us * 1000)
                std::this_thread::sleep_for(std::chrono::nanoseconds(due - t));
        }
        int32_t part = partitions[static_cast<size_t>(i) % np];
        char* payload = nullptr;
        size_t payload_len = static_cast<size_t>(o.record_size);
        int msgflags = 0;
        if (o.value_json10) {
            std::string_view v = json.make(i);
            payload = const_cast<char*>(v.data());
            payload_len = v.size();
            msgflags = RD_KAFKA_MSG_F_COPY;  // the buffer is reused for the next record
        } else {
            payload = pool.data() + pool_off;
            pool_off = (pool_off + 4099) % (pool_span + 1);  // odd stride: varied offsets
        }
        for (;;) {
            int64_t sent = now_ns();
            if (rd_kafka_produce(rkt, part, msgflags, payload, payload_len, nullptr, 0,
                                 reinterpret_cast<void*>(static_cast<uintptr_t>(sent))) == 0) {
                ++produced;
                break;
            }
            rd_kafka_resp_err_t err = rd_kafka_last_error();
            if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                ++queue_full_waits;
                if (g_interrupted.load() || cs.fatal.load()) break;
                std::this_thread::sleep_for(std::chrono::microseconds(200));
                continue;
            }
            produce_error = std::string(rd_kafka_err2name(err)) + ": " + rd_kafka_err2str(err);
            break;
        }
        if (!produce_error.empty()) break;
    }
    const int64_t produce_end_ns = now_ns();

    // Wait for outstanding delivery reports.
    const int64_t drain_deadline =
        now_ns() + (static_cast<int64_t>(o.message_timeout_ms) + 10000) * 1000000;
    while (ps.delivered.load() + ps.failed.load() < produced) {
        if (now_ns() > drain_deadline) break;
        if (g_interrupted.load() && now_ns() > produce_end_ns + 5'000'000'000LL) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    stop_poller.store(true);
    poller.join();
    rd_kafka_poll(rk, 0);
    const int64_t undelivered = produced - ps.delivered.load() - ps.failed.load();

    // Elapsed: first produce() call to last successful delivery report.
    int64_t end_ns = ps.last_delivery_ns > 0 ? ps.last_delivery_ns : produce_end_ns;
    double elapsed = std::max(1e-9, seconds_between(start_ns, end_ns));
    int64_t delivered = ps.delivered.load();
    double rps = static_cast<double>(delivered) / elapsed;
    double mbps = static_cast<double>(ps.delivered_bytes.load()) / elapsed / 1e6;

    auto& lat = ps.latencies_us;
    std::sort(lat.begin(), lat.end());
    double p50 = percentile_ms(lat, 0.50), p99 = percentile_ms(lat, 0.99),
           p999 = percentile_ms(lat, 0.999);
    double pmax = lat.empty() ? 0.0 : lat.back() / 1000.0;
    double mean = 0;
    for (auto v : lat) mean += v;
    mean = lat.empty() ? 0.0 : mean / static_cast<double>(lat.size()) / 1000.0;

    std::printf("\n== produce summary ==\n");
    std::printf("  records delivered : %" PRId64 " of %" PRId64 " produced (%" PRId64
                " failed, %" PRId64 " undelivered)%s\n",
                delivered, produced, ps.failed.load(), undelivered,
                capped ? " [duration cap reached]" : "");
    std::printf("  elapsed           : %.3f s (first produce() to last delivery report)\n",
                elapsed);
    std::printf(
        "  throughput        : %.0f records/s, %.2f MB/s (MB = 10^6 bytes of record payload)\n",
        rps, mbps);
    if (o.rate_rps > 0) {
        std::printf("  target rate       : %.0f records/s (%s)\n", o.rate_rps,
                    rps < 0.95 * o.rate_rps ? "NOT reached" : "reached");
    } else if (paced) {
        std::printf("  target rate       : %.2f MB/s (%s)\n", o.rate_mbps,
                    mbps < 0.95 * o.rate_mbps ? "NOT reached" : "reached");
    }
    std::printf(
        "  latency produce()->delivery report (ms): p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean "
        "%.3f\n",
        p50, p99, p999, pmax, mean);
    std::printf("  local queue-full waits: %" PRId64 "\n", queue_full_waits);

    int rc = kExitOk;
    if (!ps.error_counts.empty()) {
        std::fprintf(stderr, "sluice-loadgen: delivery errors:\n");
        for (const auto& [k, n] : ps.error_counts)
            std::fprintf(stderr, "  %" PRId64 " x %s\n", n, k.c_str());
        rc = kExitErrors;
    }
    if (!produce_error.empty()) {
        std::fprintf(stderr, "sluice-loadgen: produce() failed: %s\n", produce_error.c_str());
        rc = kExitErrors;
    }
    if (undelivered > 0) {
        std::fprintf(stderr, "sluice-loadgen: %" PRId64 " records still undelivered at exit\n",
                     undelivered);
        rc = kExitErrors;
    }
    if (cs.fatal.load()) rc = kExitErrors;
    if (rc == kExitOk && g_interrupted.load()) rc = kExitInterrupted;

    std::printf(
        "RESULT mode=produce records=%" PRId64
        " rps=%.0f mbps=%.2f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f"
        " max_ms=%.3f mean_ms=%.3f elapsed_s=%.3f errors=%" PRId64 " acks=%s record_size=%" PRId64
        " value=%s target_mbps=%.2f target_rps=%.0f partitions=%zu ok=%d\n",
        delivered, rps, mbps, p50, p99, p999, pmax, mean, elapsed, ps.failed.load() + undelivered,
        o.acks.c_str(), value_size, o.value_json10 ? "json10" : "random", o.rate_mbps, o.rate_rps,
        partitions.size(), rc == kExitOk ? 1 : 0);
    std::fflush(stdout);

    rd_kafka_topic_destroy(rkt);
    // Everything is delivered or failed already; don't block in destroy.
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(rk, 0);
    rd_kafka_destroy(rk);
    return rc;
}

// ---------------------------------------------------------------------------
// Consume
// ---------------------------------------------------------------------------

struct ConsumeCounters {
    int64_t records = 0;
    int64_t bytes = 0;
    int64_t first_ns = 0;
    int64_t last_ns = 0;
    std::map<std::string, int64_t> errors;
};

// Processes one message; returns true if it was a data record or EOF (progress).
bool handle_message(const rd_kafka_message_t* m, ConsumeCounters& c, std::set<int32_t>& eof,
                    bool verbose) {
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (c.records == 0) c.first_ns = now_ns();
        ++c.records;
        c.bytes += static_cast<int64_t>(m->len);
        eof.erase(m->partition);
        return true;
    }
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        eof.insert(m->partition);
        return true;
    }
    std::string key = std::string(rd_kafka_err2name(m->err)) + ": " + rd_kafka_message_errstr(m);
    int64_t n = ++c.errors[key];
    if (verbose || n == 1) {
        std::fprintf(stderr, "sluice-loadgen: consume error (partition %d): %s\n", m->partition,
                     key.c_str());
    }
    return false;
}

int run_consume(const Options& o) {
    const int64_t want = o.records.value_or(0);
    ClientState cs;
    cs.verbose = o.verbose;
    rd_kafka_conf_t* conf = base_conf(o, &cs);
    const bool use_assign = o.consumer_api == "assign";
    if (use_assign) {
        conf_set_or_die(conf, "group.id", o.group_id);
        conf_set_or_die(conf, "enable.auto.commit", "false");
        conf_set_or_die(conf, "enable.auto.offset.store", "false");
    }
    conf_set_or_die(conf, "enable.partition.eof", "true");
    // Below glibc's 32 MiB mmap ceiling, so fetch buffers are reused (see main).
    conf_set_or_die(conf, "fetch.max.bytes", "16777216");           // 16 MiB per fetch response
    conf_set_or_die(conf, "max.partition.fetch.bytes", "4194304");  // 4 MiB per partition
    conf_set_or_die(conf, "fetch.wait.max.ms", "100");
    conf_set_or_die(conf, "fetch.min.bytes", "1");
    // Prefetch limit: per partition for the simple consumer, total for assign.
    conf_set_or_die(conf, "queued.max.messages.kbytes", "65536");
    conf_set_or_die(conf, "queued.min.messages", "100000");
    auto [rk, rkt, partitions] = open_client(RD_KAFKA_CONSUMER, conf, o);

    std::printf("sluice-loadgen consume: bootstrap=%s topic=%s partitions=%s records=%s api=%s%s\n",
                o.bootstrap.c_str(), o.topic.c_str(), join_partitions(partitions).c_str(),
                want > 0 ? std::to_string(want).c_str() : "until-eof", o.consumer_api.c_str(),
                o.duration_s > 0 ? (" duration_cap_s=" + fmt_num(o.duration_s)).c_str() : "");
    std::fflush(stdout);

    rd_kafka_queue_t* q = nullptr;
    const int64_t start_ns = now_ns();
    if (use_assign) {
        rd_kafka_resp_err_t err = rd_kafka_poll_set_consumer(rk);
        rd_kafka_topic_partition_list_t* tpl =
            rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size()));
        for (int32_t p : partitions)
            rd_kafka_topic_partition_list_add(tpl, o.topic.c_str(), p)->offset =
                RD_KAFKA_OFFSET_BEGINNING;
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) err = rd_kafka_assign(rk, tpl);
        rd_kafka_topic_partition_list_destroy(tpl);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            std::fprintf(stderr, "sluice-loadgen: assign failed: %s\n", rd_kafka_err2str(err));
            rd_kafka_topic_destroy(rkt);
            rd_kafka_destroy(rk);
            return kExitUsage;
        }
    } else {
        q = rd_kafka_queue_new(rk);
        for (int32_t p : partitions) {
            if (rd_kafka_consume_start_queue(rkt, p, RD_KAFKA_OFFSET_BEGINNING, q) == -1) {
                std::fprintf(stderr, "sluice-loadgen: consume_start partition %d failed: %s\n", p,
                             rd_kafka_err2str(rd_kafka_last_error()));
                rd_kafka_queue_destroy(q);
                rd_kafka_topic_destroy(rkt);
                rd_kafka_destroy(rk);
                return kExitUsage;
            }
        }
    }

    ConsumeCounters c;
    std::set<int32_t> eof;
    const int64_t cap_ns =
        o.duration_s > 0 ? start_ns + static_cast<int64_t>(o.duration_s * 1e9) : INT64_MAX;
    const int64_t idle_ns = static_cast<int64_t>(o.idle_timeout_s * 1e9);
    int64_t last_progress = start_ns;
    std::string stop_reason;
    std::vector<rd_kafka_message_t*> batch(4096);

    while (true) {
        if (want > 0 && c.records >= want) {
            stop_reason = "records";
            break;
        }
        if (eof.size() == partitions.size()) {
            stop_reason = "eof";
            break;
        }
        if (g_interrupted.load()) {
            stop_reason = "interrupted";
            break;
        }
        if (cs.fatal.load()) {
            stop_reason = "fatal";
            break;
        }
        int64_t t = now_ns();
        if (t >= cap_ns) {
            stop_reason = "duration";
            break;
        }
        if (t - last_progress > idle_ns) {
            stop_reason = "idle";
            break;
        }

        bool progress = false;
        if (use_assign) {
            rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
            if (m) {
                progress = handle_message(m, c, eof, o.verbose);
                rd_kafka_message_destroy(m);
            }
        } else {
            ssize_t n = rd_kafka_consume_batch_queue(q, 100, batch.data(), batch.size());
            if (n < 0) {
                std::fprintf(stderr, "sluice-loadgen: consume_batch_queue: %s\n",
                             rd_kafka_err2str(rd_kafka_last_error()));
                stop_reason = "fatal";
                break;
            }
            for (ssize_t i = 0; i < n; ++i) {
                progress |= handle_message(batch[static_cast<size_t>(i)], c, eof, o.verbose);
                rd_kafka_message_destroy(batch[static_cast<size_t>(i)]);
            }
        }
        if (progress) last_progress = now_ns();
    }
    c.last_ns = now_ns();

    double elapsed = std::max(1e-9, seconds_between(start_ns, c.last_ns));
    double rps = static_cast<double>(c.records) / elapsed;
    double mbps = static_cast<double>(c.bytes) / elapsed / 1e6;
    double first_ms = c.records > 0 ? static_cast<double>(c.first_ns - start_ns) / 1e6 : 0.0;

    std::printf("\n== consume summary ==\n");
    std::printf("  records consumed  : %" PRId64 " (%" PRId64 " payload bytes), stopped by: %s\n",
                c.records, c.bytes, stop_reason.c_str());
    std::printf(
        "  elapsed           : %.3f s (start of fetching to stop; first record after %.1f ms)\n",
        elapsed, first_ms);
    std::printf(
        "  throughput        : %.0f records/s, %.2f MB/s (MB = 10^6 bytes of record payload)\n",
        rps, mbps);

    int rc = kExitOk;
    int64_t nerr = 0;
    if (!c.errors.empty()) {
        std::fprintf(stderr, "sluice-loadgen: consume errors:\n");
        for (const auto& [k, n] : c.errors) {
            std::fprintf(stderr, "  %" PRId64 " x %s\n", n, k.c_str());
            nerr += n;
        }
        rc = kExitErrors;
    }
    if (stop_reason == "idle") {
        std::fprintf(
            stderr,
            "sluice-loadgen: no progress for %.1f s; giving up (%zu/%zu partitions at EOF)\n",
            o.idle_timeout_s, eof.size(), partitions.size());
        rc = kExitErrors;
    }
    if (stop_reason == "fatal") rc = kExitErrors;
    if (stop_reason == "eof" && want > 0 && c.records < want) {
        std::fprintf(stderr,
                     "sluice-loadgen: reached end of all partitions after %" PRId64
                     " records, fewer than the %" PRId64 " requested\n",
                     c.records, want);
        rc = kExitErrors;
    }
    if (rc == kExitOk && stop_reason == "interrupted") rc = kExitInterrupted;

    std::printf("RESULT mode=consume records=%" PRId64 " rps=%.0f mbps=%.2f bytes=%" PRId64
                " elapsed_s=%.3f first_record_ms=%.1f errors=%" PRId64
                " stop=%s partitions=%zu ok=%d\n",
                c.records, rps, mbps, c.bytes, elapsed, first_ms, nerr, stop_reason.c_str(),
                partitions.size(), rc == kExitOk ? 1 : 0);
    std::fflush(stdout);

    if (use_assign) {
        rd_kafka_assign(rk, nullptr);
        rd_kafka_consumer_close(rk);
    } else {
        for (int32_t p : partitions) rd_kafka_consume_stop(rkt, p);
        rd_kafka_queue_destroy(q);
    }
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return rc;
}

}  // namespace

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
