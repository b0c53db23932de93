// sluice-objstore-bench: what shared mode's engines cost on this machine, to size its
// design (docs/shared-mode.md). Reads the engines from the environment
// (src/shared/engine_env.h; `. DIR/env` after `scripts/cluster up DIR`).
//
//   sluice-objstore-bench s3 [--sizes-mb 1,8] [--count N] [--threads T]
//       PUT then GET N objects of each size with T threads: latency p50/p99/max and MB/s.
//   sluice-objstore-bench pg [--partitions 1,10,100] [--batches B] [--count N] [--threads T]
//       The produce commit (src/shared/batch_index.h): N transactions, each assigning
//       offsets to B batches (1) of each of P partitions; transactions/s and latency, then
//       "phases lock P50/P99 statements P50/P99 commit P50/P99" (ms, batch_index.h's
//       commit_timings).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "bench_cli.h"
#include "shared/batch_index.h"
#include "shared/catalog_schema.h"
#include "shared/engine_env.h"

namespace {

using namespace sluice;
using namespace sluice::shared;
using steady = std::chrono::steady_clock;

struct options {
    std::vector<int> sizes_mb{1, 8};
    std::vector<int> partitions{1, 10, 100};
    int count = 0;
    int threads = 1;
    int batches = 1;  // per partition and commit
};

struct stats {
    double p50_ms, p99_ms, max_ms;
};

stats summarize(std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    auto at = [&](double q) {
        return ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))];
    };
    return {at(0.50), at(0.99), ms.back()};
}

// Runs op(i) for i in [0, count) over `threads` threads; returns each call's latency
// (ms) and the wall time (s). Exits on the first failure.
template <typename Op>
std::pair<std::vector<double>, double> run(int count, int threads, Op op) {
    std::vector<double> lat(count);
    std::atomic<int> next{0};
    auto start = steady::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
            for (int i = next++; i < count; i = next++) {
                auto s = steady::now();
                auto r = op(i);
                if (!r) {
                    std::fprintf(stderr, "failed: %s\n", r.err().message.c_str());
                    std::exit(1);
                }
                lat[i] = std::chrono::duration<double, std::milli>(steady::now() - s).count();
            }
        });
    }
    for (auto& t : pool) t.join();
    return {lat, std::chrono::duration<double>(steady::now() - start).count()};
}

int bench_s3(const options& o) {
    auto store = make_s3_object_store(s3_config_from_env());
    if (!store) {
        std::fprintf(stderr, "%s\n", store.err().message.c_str());
        return 1;
    }
    object_store& s = **store;
    std::string run_id =
        std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
    fmt::print("{:>6} {:>7} {:>5} {:>9} {:>9} {:>9} {:>9}\n", "op", "size", "thr", "p50 ms",
               "p99 ms", "max ms", "MB/s");
    for (int mb : o.sizes_mb) {
        std::string data(static_cast<size_t>(mb) << 20, '\0');
        std::minstd_rand rng(42);
        for (auto& c : data) c = static_cast<char>(rng());  // incompressible, as batches often are
        int count = o.count > 0 ? o.count : std::max(8, 64 / mb);
        auto key = [&](int i) { return fmt::format("bench/{}/{}mb-{}", run_id, mb, i); };
        auto [put_lat, put_s] = run(count, o.threads, [&](int i) { return s.put(key(i), data); });
        auto [get_lat, get_s] = run(count, o.threads, [&](int i) -> result<void> {
            auto r = s.get(key(i));
            if (!r) return r.err();
            if (r->size() != data.size()) return error{errc::corrupt, "short object"};
            return {};
        });
        for (auto [name, lat, secs] :
             {std::tuple{"PUT", put_lat, put_s}, std::tuple{"GET", get_lat, get_s}}) {
            stats st = summarize(lat);
            fmt::print("{:>6} {:>5}MB {:>5} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}\n", name, mb,
                       o.threads, st.p50_ms, st.p99_ms, st.max_ms,
                       static_cast<double>(count) * mb / secs);
        }
        for (int i = 0; i < count; ++i) (void)s.remove(key(i));
    }
    return 0;
}

int bench_pg(const options& o) {
    auto db = pg_database::connect(pg_config_from_env());
    if (!db) {
        std::fprintf(stderr, "%s\n", db.err().message.c_str());
        return 1;
    }
    if (auto r = ensure_catalog_schema(**db); !r) {
        std::fprintf(stderr, "%s\n", r.err().message.c_str());
        return 1;
    }
    std::vector<std::unique_ptr<pg_database>> conns;
    for (int t = 0; t < o.threads; ++t)
        conns.push_back(std::move(pg_database::connect(pg_config_from_env()).value()));
    std::string run_id =
        fmt::format("{:016x}", std::chrono::system_clock::now().time_since_epoch().count());
    fmt::print("{:>10} {:>5} {:>9} {:>9} {:>9} {:>11}\n", "partitions", "thr", "p50 ms", "p99 ms",
               "max ms", "commits/s");
    for (int parts : o.partitions) {
        std::string topic = run_id + fmt::format("{:016x}", parts);
        if (auto r = create_topic(**db, topic, "bench-" + topic, parts); !r) {
            std::fprintf(stderr, "%s\n", r.err().message.c_str());
            return 1;
        }
        int count = o.count > 0 ? o.count : 500;
        std::atomic<int> conn_no{0};
        thread_local int my_conn = -1;
        std::vector<commit_timings> took(count);
        auto [lat, secs] = run(count, o.threads, [&](int i) -> result<void> {
            if (my_conn < 0) my_conn = conn_no++;
            object_commit c{fmt::format("bench/{}/{}", topic, i), 0, 1, {}};
            for (int p = 0; p < parts; ++p) {
                for (int b = 0; b < o.batches; ++b) {
                    c.batches.push_back({topic, p, 10, c.size, 4096, 0});
                    c.size += 4096;
                }
            }
            auto r = commit_object(*conns[my_conn % o.threads], c, &took[i]);
            if (!r) return r.err();
            return {};
        });
        my_conn = -1;
        stats st = summarize(lat);
        fmt::print("{:>10} {:>5} {:>9.2f} {:>9.2f} {:>9.2f} {:>11.0f}\n", parts, o.threads,
                   st.p50_ms, st.p99_ms, st.max_ms, count / secs);
        // Where each commit's time went (commit_timings): p50 / p99 ms of its parts.
        std::string parts_line = "phases";
        for (auto [name, part] : {std::pair{"lock", &commit_timings::lock},
                                  std::pair{"statements", &commit_timings::statements},
                                  std::pair{"commit", &commit_timings::commit}}) {
            std::vector<double> ms;
            for (const auto& t : took)
                ms.push_back(std::chrono::duration<double, std::milli>(t.*part).count());
            stats ps = summarize(ms);
            parts_line += fmt::format(" {} {:.2f}/{:.2f}", name, ps.p50_ms, ps.p99_ms);
        }
        fmt::print("{}\n", parts_line);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || (std::string(argv[1]) != "s3" && std::string(argv[1]) != "pg")) {
        std::fprintf(stderr,
                     "usage: sluice-objstore-bench s3|pg [--sizes-mb 1,8] [--partitions 1,10,100] "
                     "[--batches B] [--count N] [--threads T]\n");
        return 2;
    }
    options o;
    for (int i = 2; i + 1 < argc; i += 2) {
        std::string a = argv[i], v = argv[i + 1];
        if (a == "--sizes-mb")
            o.sizes_mb = bench::int_list("sluice-objstore-bench", a, v);
        else if (a == "--partitions")
            o.partitions = bench::int_list("sluice-objstore-bench", a, v);
        else if (a == "--count")
            o.count = std::atoi(v.c_str());
        else if (a == "--threads")
            o.threads = std::max(1, std::atoi(v.c_str()));
        else if (a == "--batches")
            o.batches = std::max(1, std::atoi(v.c_str()));
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }
    return std::string(argv[1]) == "s3" ? bench_s3(o) : bench_pg(o);
}
