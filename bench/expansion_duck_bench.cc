// sluice-expansion-duckbench: expansion into a columnar DuckDB target, in one process
// (docs/benchmarks.md, "Columnar expansion targets"; the SQLite target it was first
// measured against went with the SQLite engine). The JSON events are those of sluice-loadgen --value-json10 (10 fields, one
// a struct of 3, flattened: 19 columns), expanded with the broker's own row builder and
// written through the broker's own target stores, in transactions of --per-commit
// events, each with the progress row, as the expander writes them.
//
// Then a GROUP BY of one field with the sum of another over the target, against DuckDB
// over its own table of the same rows (CREATE TABLE AS from the target, checkpointed):
// the best of --runs.
//
//   build/bench/sluice-expansion-duckbench --dir /tmp/xdb [--events 2000000]
//       [--per-commit 5000] [--repeats 2] [--runs 5]

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "bench_cli.h"
#include "json10_event.h"
#include "expansion/duck/duck_target.h"
#include "expansion/row_builder.h"

using namespace sluice;
using namespace sluice::expansion;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// CPU seconds of the process so far, every thread's (DuckDB's checkpoints run on the
// store's thread): on a shared machine the wall time says more about the neighbours.
double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return s(u.ru_utime) + s(u.ru_stime);
}

constexpr const char* tool = "sluice-expansion-duckbench";
[[noreturn]] void die(const std::string& what) {
    bench::die(tool, what);
}

// Expands every event into `t` (partition 0) in transactions of per_commit; events/s.
double expand(target_store& t, row_builder& rb, const std::vector<std::string>& events,
              int64_t per_commit) {
    const auto start = std::chrono::steady_clock::now();
    const auto n = static_cast<int64_t>(events.size());
    for (int64_t at = 0; at < n;) {
        const int64_t end = std::min(n, at + per_commit);
        auto r = t.in_transaction([&]() -> result<void> {
            for (int64_t i = at; i < end; ++i) {
                const auto& e = events[static_cast<size_t>(i)];
                const bytes_view v(reinterpret_cast<const uint8_t*>(e.data()), e.size());
                if (auto w = t.insert(0, i, 1764460800000 + i, rb.build(v), v, std::nullopt); !w)
                    return w;
            }
            return t.save_progress(0, {.next = end});
        });
        if (!r) die(r.err().message);
        at = end;
    }
    return static_cast<double>(n) / seconds_since(start);
}

// The best time of `runs` of a statement on the DuckDB file.
double best_duck(duck_targets& db, const std::string& sql, int runs, std::string& answer) {
    double best = 1e9;
    for (int r = 0; r < runs; ++r) {
        const auto start = std::chrono::steady_clock::now();
        auto q = db.query(sql);
        const double s = seconds_since(start);
        if (!q) die(q.err().message);
        answer = q->empty() ? "" : q->at(0).at(1).value_or("NULL");
        best = std::min(best, s);
    }
    return best;
}

// The command line's choices.
struct options {
    std::filesystem::path dir;
    int64_t events = 2'000'000, per_commit = 5'000;
    int repeats = 2, runs = 5;
};

options parse_options(int argc, char** argv) {
    options o;
    bench::parse_flags(tool, argc, argv, [&](const std::string& f, const std::string& v) {
        if (f == "--dir")
            o.dir = v;
        else if (f == "--events")
            o.events = bench::number<int64_t>(tool, f, v);
        else if (f == "--per-commit")
            o.per_commit = bench::number<int64_t>(tool, f, v);
        else if (f == "--repeats")
            o.repeats = bench::number<int>(tool, f, v);
        else if (f == "--runs")
            o.runs = bench::number<int>(tool, f, v);
        else
            return false;
        return true;
    });
    if (o.dir.empty())
        die("usage: sluice-expansion-duckbench --dir DIR [--events N] [--per-commit N] "
            "[--repeats N] [--runs N]");
    return o;
}

// Each repeat expands the events into a fresh DuckDB target under o.dir; events/s by wall
// time to the last commit, and events per CPU-second of the process from the first event
// to the target's close (the checkpoint at close included).
struct rates {
    std::vector<double> duck, duck_cpu;
};

rates expand_repeats(const options& o, row_builder& rb, const layout& cols,
                     const std::vector<std::string>& events) {
    rates r;
    for (int rep = 0; rep < o.repeats; ++rep) {
        std::filesystem::remove_all(o.dir);
        std::filesystem::create_directories(o.dir);
        const double cpu0 = cpu_seconds();
        std::string line;
        {
            auto b = duck_targets::open({.file = o.dir / "expansions.duckdb"});
            if (!b) die(b.err().message);
            auto t = (*b)->open("main", "events", cols, true);
            if (!t) die(t.err().message);
            r.duck.push_back(expand(**t, rb, events, o.per_commit));
            const auto c = (*b)->checkpoints();
            std::error_code ec;
            const auto wal = std::filesystem::file_size(o.dir / "expansions.duckdb.wal", ec);
            line = fmt::format("checkpoints {}, refused {}; WAL at the end {:.1f} MiB", c.done,
                               c.refused, ec ? 0.0 : wal / 1048576.0);
        }
        r.duck_cpu.push_back(static_cast<double>(events.size()) / (cpu_seconds() - cpu0));
        std::printf("repeat %d  DuckDB target: %.0f events/s, %.0f per CPU-second (%s)\n",
                    rep + 1, r.duck.back(), r.duck_cpu.back(), line.c_str());
        std::fflush(stdout);
    }
    return r;
}

// The GROUP BY over the last repeat's target, against DuckDB's own table of the rows.
void query_and_report(const options& o, const rates& r) {
    const std::string group =
        "SELECT country, sum(amount) AS s FROM {} GROUP BY country ORDER BY country";
    auto b = duck_targets::open({.file = o.dir / "expansions.duckdb"});
    if (!b) die(b.err().message);
    if (auto q = (*b)->query("CREATE TABLE own AS SELECT * FROM main.events"); !q)
        die(q.err().message);
    if (auto c = (*b)->checkpoint(); !c) die(c.err().message);
    std::string a_target, a_own;
    const double t_target =
        best_duck(**b, fmt::format(fmt::runtime(group), "main.events"), o.runs, a_target);
    const double t_own = best_duck(**b, fmt::format(fmt::runtime(group), "own"), o.runs, a_own);
    auto rowgroups = (*b)->query(
        "SELECT table_name, count(DISTINCT row_group_id) FROM pragma_storage_info('main.events') "
        "GROUP BY ALL UNION ALL SELECT 'own', count(DISTINCT row_group_id) FROM "
        "pragma_storage_info('own')");

    std::printf("\nexpansion rate, events/s (JSON parsing, rows and progress per commit):\n");
    for (size_t i = 0; i < r.duck.size(); ++i)
        std::printf("  repeat %zu: %.0f; per CPU-second (to the close): %.0f\n", i + 1, r.duck[i],
                    r.duck_cpu[i]);
    std::printf("GROUP BY country, sum(amount), best of %d:\n", o.runs);
    std::printf("  DuckDB target %.4f s, DuckDB's own table %.4f s (target/own %.2f)\n", t_target,
                t_own, t_target / t_own);
    std::printf("  first group's sum: target %s, own %s\n", a_target.c_str(), a_own.c_str());
    if (rowgroups)
        for (const auto& row : *rowgroups)
            std::printf("  row groups: %s %s\n", row.at(0).value_or("?").c_str(),
                        row.at(1).value_or("?").c_str());
}

int run(const options& o) {
    auto fields = parse_schema(bench::json10_schema);
    if (!fields) die(fields.err().message);
    auto cols = layout::make(*fields, {.flatten = true, .copy_source = false});
    if (!cols) die(cols.err().message);
    row_builder rb(*fields, *cols);
    std::vector<std::string> events;
    events.reserve(static_cast<size_t>(o.events));
    for (int64_t i = 0; i < o.events; ++i) events.push_back(bench::json10_event(i));
    std::printf("%lld events of %zu bytes (about), %zu columns, a commit per %lld events\n",
                static_cast<long long>(o.events), events.empty() ? 0 : events[0].size(),
                cols->columns().size(), static_cast<long long>(o.per_commit));
    query_and_report(o, expand_repeats(o, rb, *cols, events));
    std::filesystem::remove_all(o.dir);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return bench::guarded_main(tool, [&] { return run(parse_options(argc, argv)); });
}
