// sluice-stallprobe: finds the moments this machine stops running its threads, by
// spinning on the clock in `--threads` threads for `--seconds` and reporting every gap
// over `--gap-ms`, with its time within the run and its phase in a `--period-ms` cycle.
// On the project's VM, gaps that hit every thread at once and end on the same phase of
// a 100 ms cycle are the host throttling the whole VM (docs/benchmarks-history.md, "What the
// host does to the tail"). Run it beside a load (fio, the broker) and alone.
//
//   sluice-stallprobe --threads 2 --seconds 3
//
// Prints each gap, then one line per thread: RESULT thread=... gaps=... stalled_ms=...

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench_cli.h"

namespace {

constexpr const char* tool = "sluice-stallprobe";
using clock_type = std::chrono::steady_clock;

struct gap {
    double at_ms;
    double length_ms;
};

}  // namespace

int main(int argc, char** argv) {
    int threads = 2;
    double seconds = 3;
    double gap_ms = 1;
    double period_ms = 100;
    sluice::bench::parse_flags(tool, argc, argv, [&](const std::string& f, const std::string& v) {
        if (f == "--threads")
            threads = std::stoi(v);
        else if (f == "--seconds")
            seconds = std::stod(v);
        else if (f == "--gap-ms")
            gap_ms = std::stod(v);
        else if (f == "--period-ms")
            period_ms = std::stod(v);
        else
            return false;
        return true;
    });
    if (threads < 1 || seconds <= 0 || gap_ms <= 0 || period_ms <= 0)
        sluice::bench::die(tool, "bad arguments");

    const auto start = clock_type::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    const auto min_gap = std::chrono::duration<double, std::milli>(gap_ms);
    std::vector<std::vector<gap>> found(static_cast<size_t>(threads));
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            auto& mine = found[static_cast<size_t>(t)];
            auto last = clock_type::now();
            while (last < end) {
                const auto now = clock_type::now();
                if (now - last > min_gap) {
                    mine.push_back({std::chrono::duration<double, std::milli>(now - start).count(),
                                    std::chrono::duration<double, std::milli>(now - last).count()});
                }
                last = now;
            }
        });
    }
    for (auto& th : pool) th.join();

    for (int t = 0; t < threads; ++t) {
        double stalled = 0;
        for (const auto& g : found[static_cast<size_t>(t)]) {
            stalled += g.length_ms;
            const double phase = std::fmod(g.at_ms, period_ms);
            std::printf("thread %d: gap %.2f ms ending at %.1f ms (phase %.1f of %.0f)\n", t,
                        g.length_ms, g.at_ms, phase, period_ms);
        }
        std::printf("RESULT thread=%d seconds=%.1f gaps=%zu stalled_ms=%.1f\n", t, seconds,
                    found[static_cast<size_t>(t)].size(), stalled);
    }
    return 0;
}
