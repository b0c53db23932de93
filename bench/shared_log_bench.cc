// sluice-sharedlog-bench: shared mode's produce window (src/shared/shared_log.h) over real
// engines (src/shared/engine_env.h; `. DIR/env` after `scripts/cluster up DIR`).
//
//   sluice-sharedlog-bench [--partitions 1,10,100,1000] [--inflight N] [--seconds S]
//                          [--window-ms W] [--batch-bytes B]
//
// For each partition count P: a topic of P partitions; N appends kept in flight (each a
// batch of B bytes of values, to partition i % P, the next submitted when one completes),
// for S seconds. Prints append latency (submit to completion: the window, the upload and
// the commit) p50/p99/max, appends/s, objects (PUTs) per second and batches per object.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_cli.h"
#include "protocol/record_batch.h"
#include "shared/batch_index.h"
#include "shared/catalog_schema.h"
#include "shared/engine_env.h"
#include "shared/shared_log.h"
#include "support/batch_builder.h"

namespace {

using namespace sluice;
using namespace sluice::shared;
using steady = std::chrono::steady_clock;

struct options {
    std::vector<int> partitions{1, 10, 100, 1000};
    int inflight = 64;
    double seconds = 5;
    int window_ms = 20;
    int batch_bytes = 1024;
};

// Keeps `inflight` appends going until the deadline; returns their latencies (ms).
std::vector<double> drive(shared_log& l, const std::string& topic, int parts, const options& o) {
    auto batch = testing::make_batch(1, 0, static_cast<size_t>(o.batch_bytes));
    auto validated = protocol::validate_batches(batch, protocol::batch_limits{});
    if (!validated) {
        std::fprintf(stderr, "%s\n", validated.err().message.c_str());
        std::exit(1);
    }
    std::vector<shared_partition*> ps;
    for (int p = 0; p < parts; ++p) ps.push_back(&l.partition(topic, {"bench", p}));
    std::mutex mu;
    std::condition_variable cv;
    std::vector<double> lat;
    int running = 0;
    int next = 0;
    const auto until = steady::now() + std::chrono::duration<double>(o.seconds);
    auto submit_one = [&](int i) {
        const auto t0 = steady::now();
        ps[i % parts]->submit_append(batch, *validated, 0, [&, t0](result<log::append_info> r) {
            if (!r) {
                std::fprintf(stderr, "append: %s\n", r.err().message.c_str());
                std::exit(1);
            }
            std::lock_guard lk(mu);
            lat.push_back(std::chrono::duration<double, std::milli>(steady::now() - t0).count());
            --running;
            cv.notify_all();
        });
    };
    std::unique_lock lk(mu);
    while (steady::now() < until) {
        while (running < o.inflight) {
            ++running;
            const int i = next++;
            lk.unlock();
            submit_one(i);
            lk.lock();
        }
        cv.wait_until(lk, until, [&] { return running < o.inflight; });
    }
    cv.wait(lk, [&] { return running == 0; });
    return lat;
}

}  // namespace

int main(int argc, char** argv) {
    options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i], v = argv[i + 1];
        if (a == "--partitions")
            o.partitions = bench::int_list("sluice-sharedlog-bench", a, v);
        else if (a == "--inflight")
            o.inflight = std::max(1, std::atoi(v.c_str()));
        else if (a == "--seconds")
            o.seconds = std::atof(v.c_str());
        else if (a == "--window-ms")
            o.window_ms = std::atoi(v.c_str());
        else if (a == "--batch-bytes")
            o.batch_bytes = std::atoi(v.c_str());
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }
    auto store = make_s3_object_store(s3_config_from_env());
    if (!store) return std::fprintf(stderr, "%s\n", store.err().message.c_str()), 1;
    auto db = pg_database::connect(pg_config_from_env());
    if (!db) return std::fprintf(stderr, "%s\n", db.err().message.c_str()), 1;
    if (auto r = ensure_catalog_schema(**db); !r)
        return std::fprintf(stderr, "%s\n", r.err().message.c_str()), 1;
    fmt::print("window {} ms, {} appends in flight, batches of {} bytes\n", o.window_ms, o.inflight,
               o.batch_bytes);
    fmt::print("{:>10} {:>9} {:>9} {:>9} {:>10} {:>8} {:>13}\n", "partitions", "p50 ms", "p99 ms",
               "max ms", "appends/s", "PUTs/s", "batches/PUT");
    const auto run_id = static_cast<uint64_t>(steady::now().time_since_epoch().count());
    for (int parts : o.partitions) {
        std::string topic = fmt::format("{:016x}{:016x}", run_id, parts);
        if (auto r = create_topic(**db, topic, "bench-" + topic, parts); !r)
            return std::fprintf(stderr, "%s\n", r.err().message.c_str()), 1;
        shared_log_config cfg;
        cfg.broker_id = 1;
        cfg.produce_window = std::chrono::milliseconds(o.window_ms);
        auto l = shared_log::open(**store, pg_config_from_env(), cfg);
        if (!l) return std::fprintf(stderr, "%s\n", l.err().message.c_str()), 1;
        const auto t0 = steady::now();
        auto lat = drive(**l, topic, parts, o);
        const double secs = std::chrono::duration<double>(steady::now() - t0).count();
        std::sort(lat.begin(), lat.end());
        auto at = [&](double q) { return lat[std::min(lat.size() - 1, size_t(q * lat.size()))]; };
        auto c = (*l)->counters();
        fmt::print("{:>10} {:>9.1f} {:>9.1f} {:>9.1f} {:>10.0f} {:>8.1f} {:>13.1f}\n", parts,
                   at(0.5), at(0.99), lat.back(), lat.size() / secs, c.objects / secs,
                   c.objects ? double(c.batches) / c.objects : 0.0);
    }
    return 0;
}
