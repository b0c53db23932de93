// sluice-expansion-duck-steady: what a columnar (DuckDB) expansion target adds to a
// producer's wait at a steady rate, in one process (docs/benchmarks.md, "Expansions").
// Events of sluice-loadgen --value-json10 "arrive" at --rps, spread over --partitions;
// a writer commits what has arrived, as the broker's expander does (each commit takes
// every event that arrived while the previous one ran, with a progress row per
// partition), into the broker's own DuckDB target store, whose thread checkpoints the
// file as it does in the broker. An event's latency is from its arrival to the end of
// the commit that holds it: the part of a producer's wait that the target adds.
//
//   build/bench/sluice-expansion-duck-steady --dir /tmp/xst [--rps 20000] [--secs 15]
//       [--partitions 4] [--checkpoint-mib 64] [--threads 1]

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench_cli.h"
#include "expansion/duck/duck_target.h"
#include "expansion/row_builder.h"
#include "json10_event.h"

using namespace sluice;
using namespace sluice::expansion;
using clk = std::chrono::steady_clock;

namespace {

constexpr const char* tool = "sluice-expansion-duck-steady";

struct options {
    std::filesystem::path dir;
    int64_t rps = 20'000, secs = 15, checkpoint_mib = 64;
    int32_t partitions = 4;
    int threads = 1;  // DuckDB's: a checkpoint writes a table's row groups in parallel
};

options parse_options(int argc, char** argv) {
    options o;
    bench::parse_flags(tool, argc, argv, [&](const std::string& f, const std::string& v) {
        if (f == "--dir")
            o.dir = v;
        else if (f == "--rps")
            o.rps = bench::number<int64_t>(tool, f, v);
        else if (f == "--secs")
            o.secs = bench::number<int64_t>(tool, f, v);
        else if (f == "--partitions")
            o.partitions = bench::number<int32_t>(tool, f, v);
        else if (f == "--threads")
            o.threads = bench::number<int>(tool, f, v);
        else if (f == "--checkpoint-mib")
            o.checkpoint_mib = bench::number<int64_t>(tool, f, v);
        else
            return false;
        return true;
    });
    if (o.dir.empty() || o.rps <= 0 || o.secs <= 0 || o.partitions <= 0)
        bench::die(tool,
                   "usage: sluice-expansion-duck-steady --dir DIR [--rps N] [--secs N] "
                   "[--partitions N] [--checkpoint-mib N] [--threads N]");
    return o;
}

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return s(u.ru_utime) + s(u.ru_stime);
}

double ms(clk::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

double percentile(std::vector<double>& v, double p) {
    if (v.empty()) return 0;
    const auto k = static_cast<size_t>(p * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

// Where a commit's time went, summed and at most, in ms.
struct phase {
    double total = 0, max = 0;
    void add(double v) {
        total += v;
        max = std::max(max, v);
    }
};

int run(const options& o) {
    auto fields = parse_schema(bench::json10_schema);
    if (!fields) bench::die(tool, fields.err().message);
    auto cols = layout::make(*fields, {.flatten = true, .copy_source = false});
    if (!cols) bench::die(tool, cols.err().message);
    row_builder rb(*fields, *cols);
    std::vector<std::string> pool;  // events repeat; their offsets do not
    for (int64_t i = 0; i < 10'000; ++i) pool.push_back(bench::json10_event(i));

    std::filesystem::remove_all(o.dir);
    std::filesystem::create_directories(o.dir);
    auto b = duck_targets::open({.file = o.dir / "expansions.duckdb",
                                 .threads = o.threads,
                                 .checkpoint_wal_bytes = static_cast<uint64_t>(o.checkpoint_mib) << 20});
    if (!b) bench::die(tool, b.err().message);
    auto t = (*b)->open("main", "events", *cols, true);
    if (!t) bench::die(tool, t.err().message);
    auto& store = **t;

    std::vector<double> latency;
    latency.reserve(static_cast<size_t>(o.rps * o.secs));
    phase begin, rows, commit;
    int64_t commits = 0, next = 0;
    const auto total = o.rps * o.secs;
    const auto arrival = [&](int64_t i) {
        return std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(
            static_cast<double>(i) / static_cast<double>(o.rps)));
    };
    const double cpu0 = cpu_seconds();
    const auto t0 = clk::now();
    while (next < total) {
        auto now = clk::now();
        auto arrived = std::min<int64_t>(
            total, static_cast<int64_t>(std::chrono::duration<double>(now - t0).count() *
                                        static_cast<double>(o.rps)));
        if (arrived <= next) {
            std::this_thread::sleep_until(t0 + arrival(next + 1));
            continue;
        }
        const auto a = clk::now();
        if (auto r = store.begin(); !r) bench::die(tool, r.err().message);
        const auto m = clk::now();
        for (int64_t i = next; i < arrived; ++i) {
            const auto& e = pool[static_cast<size_t>(i) % pool.size()];
            const bytes_view v(reinterpret_cast<const uint8_t*>(e.data()), e.size());
            if (auto w = store.insert(static_cast<int32_t>(i % o.partitions), i / o.partitions,
                                      1764460800000 + i, rb.build(v), std::nullopt, std::nullopt);
                !w)
                bench::die(tool, w.err().message);
        }
        for (int32_t p = 0; p < o.partitions; ++p)
            if (auto s = store.save_progress(p, {.next = (arrived - p + o.partitions - 1) /
                                                         o.partitions});
                !s)
                bench::die(tool, s.err().message);
        const auto c = clk::now();
        if (auto r = store.commit(); !r) bench::die(tool, r.err().message);
        const auto end = clk::now();
        begin.add(ms(m - a));
        rows.add(ms(c - m));
        commit.add(ms(end - c));
        for (int64_t i = next; i < arrived; ++i) latency.push_back(ms(end - (t0 + arrival(i))));
        ++commits;
        next = arrived;
    }
    const double wall = std::chrono::duration<double>(clk::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    const auto cp = (*b)->checkpoints();
    std::printf(
        "%lld events in %.1f s at %lld/s, %d partitions, checkpoint past %lld MiB of WAL\n"
        "commits %lld (%.1f events each); CPU %.2f s (%.3f ms a commit)\n"
        "latency ms: p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n"
        "commit phases ms (total / max): begin %.0f / %.1f, rows %.0f / %.1f, commit %.0f / %.1f\n"
        "checkpoints %lld (refused %lld), %.0f ms in all, longest %.0f ms; %lld rows committed "
        "into deltas meanwhile\n",
        static_cast<long long>(total), wall, static_cast<long long>(o.rps), o.partitions,
        static_cast<long long>(o.checkpoint_mib), static_cast<long long>(commits),
        static_cast<double>(total) / static_cast<double>(std::max<int64_t>(1, commits)), cpu,
        1000 * cpu / static_cast<double>(std::max<int64_t>(1, commits)),
        percentile(latency, 0.5), percentile(latency, 0.99), percentile(latency, 0.999),
        percentile(latency, 1.0), begin.total, begin.max, rows.total, rows.max, commit.total,
        commit.max, static_cast<long long>(cp.done), static_cast<long long>(cp.refused), cp.ms,
        cp.longest_ms, static_cast<long long>(cp.moved_rows));
    (*t).reset();
    (*b).reset();
    std::filesystem::remove_all(o.dir);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return bench::guarded_main(tool, [&] { return run(parse_options(argc, argv)); });
}
