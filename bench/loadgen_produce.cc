// sluice-loadgen's produce mode: flat out or paced, from one or more producers.
#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string_view>
#include <thread>

#include "loadgen.h"

namespace sluice_loadgen {
namespace {

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

// The producer configuration of one of nprod producers, sharing the local queue bounds.
rd_kafka_conf_t* producer_conf(const Options& o, ClientState* cs, int nprod) {
    rd_kafka_conf_t* conf = base_conf(o, cs);
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
    conf_set_or_die(conf, "queue.buffering.max.messages", std::to_string(std::max(1000, 100000 / nprod)));
    conf_set_or_die(conf, "queue.buffering.max.kbytes",
                    std::to_string(std::max(16384, 1048576 / nprod)));
    conf_set_or_die(conf, "message.timeout.ms", std::to_string(o.message_timeout_ms));
    rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
    return conf;
}

}  // namespace

int run_produce(const Options& o) {
    const int64_t records = o.records.value_or(1000000);
    ProduceState ps;
    ps.verbose = o.verbose;
    ClientState& cs = ps;

    // Producer 0 resolves the partitions; the others only connect. Each has its own
    // connection (a librdkafka instance), the local queue bounds shared between them.
    std::vector<Client> clients;
    clients.push_back(open_client(RD_KAFKA_PRODUCER, producer_conf(o, &cs, o.producers), o));
    const std::vector<int32_t> partitions = clients[0].partitions;
    const int nprod = std::min<int>(o.producers, static_cast<int>(partitions.size()));
    if (nprod < o.producers)
        std::fprintf(stderr, "sluice-loadgen: %d producers for %zu partitions: using %d\n",
                     o.producers, partitions.size(), nprod);
    while (static_cast<int>(clients.size()) < nprod)
        clients.push_back(open_client(RD_KAFKA_PRODUCER, producer_conf(o, &cs, nprod), o, false));
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
    // One poller serves every producer's reports, in turn.
    std::atomic<bool> stop_poller{false};
    std::thread poller([&] {
        while (!stop_poller.load()) {
            if (clients.size() == 1) {
                rd_kafka_poll(clients[0].rk, 50);
                continue;
            }
            int served = 0;
            for (auto& c : clients) served += rd_kafka_poll(c.rk, 0);
            if (served == 0) std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
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
        " records=%" PRId64 " target=%s producers=%d linger_ms=%d batch_bytes=%" PRId64 "%s\n",
        o.bootstrap.c_str(), o.topic.c_str(), join_partitions(partitions).c_str(), o.acks.c_str(),
        value_size, records,
        o.rate_rps > 0 ? (fmt_num(o.rate_rps) + "rec/s").c_str()
        : paced        ? (fmt_num(o.rate_mbps) + "MB/s").c_str()
                       : "flat-out",
        nprod, o.linger_ms, o.batch_bytes,
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
        const size_t pi = static_cast<size_t>(i) % np;
        const int32_t part = partitions[pi];
        rd_kafka_topic_t* rkt = clients[pi % clients.size()].rkt;
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
    for (auto& c : clients) rd_kafka_poll(c.rk, 0);
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
        " value=%s target_mbps=%.2f target_rps=%.0f partitions=%zu producers=%d ok=%d\n",
        delivered, rps, mbps, p50, p99, p999, pmax, mean, elapsed, ps.failed.load() + undelivered,
        o.acks.c_str(), value_size, o.value_json10 ? "json10" : "random", o.rate_mbps, o.rate_rps,
        partitions.size(), nprod, rc == kExitOk ? 1 : 0);
    std::fflush(stdout);

    // Everything is delivered or failed already; don't block in destroy.
    for (auto& c : clients) {
        rd_kafka_topic_destroy(c.rkt);
        rd_kafka_purge(c.rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(c.rk, 0);
        rd_kafka_destroy(c.rk);
    }
    return rc;
}

}  // namespace sluice_loadgen
